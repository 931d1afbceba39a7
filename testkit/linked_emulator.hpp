// Tests and benchmarks run emu= devices on the emulator linked into them
// (the PMD loads it as a plugin instead: core/plugin_loader.hpp).
#pragma once

#include "common/devx/backend_plugin.hpp"
#include "vdpa/mlx5async/core/plugin_loader.hpp"

namespace mlx5async::testing {

inline void use_linked_emulator() { core::use_linked_plugin(&mlx5async_backend_entry); }

// Every program that includes this runs its emu= devices on the linked
// emulator from the start (constant-initialized state only: safe before main).
inline const bool kLinkedEmulator = (use_linked_emulator(), true);

}  // namespace mlx5async::testing
