// The backend plugin an emu= device runs on (common/devx/backend_plugin.hpp:
// mlx5emu's libmlx5emu.so): loaded with dlopen at its first use, or linked
// into the program (tests, benchmarks). The core names no type of it.
#pragma once

#include <string>
#include <string_view>

#include "common/base/result.hpp"
#include "common/devx/backend_plugin.hpp"

namespace mlx5async::core {

// The plugin's table, loaded at the first call and kept for the process;
// the error names the library and why it cannot be used.
Result<const mlx5async_backend*> backend_plugin();
// Checks an emulator spec as the plugin will read it (loading the plugin).
Result<void> check_emulator_spec(std::string_view spec);
// Where the plugin is loaded from: $MLX5ASYNC_EMU_LIB, else where the
// emulator plugin installs (MLX5ASYNC_EMU_PLUGIN_PATH at build time).
std::string emulator_plugin_path();
// A plugin linked into the program (tests, benchmarks) instead of loaded:
// `entry` is its mlx5async_backend_entry. Call before the first device.
void use_linked_plugin(mlx5async_backend_entry_fn entry);

}  // namespace mlx5async::core
