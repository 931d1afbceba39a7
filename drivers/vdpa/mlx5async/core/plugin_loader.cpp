// The backend plugin (mlx5emu's libmlx5emu.so), loaded with dlopen the
// first time a device or a devarg check needs it, or linked in (tests).
#include "plugin_loader.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "mlx5async_config.h"

namespace mlx5async::core {
namespace {

std::mutex g_plugin_mu;  // protects g_plugin, g_linked (loaded once, kept for the process)
const mlx5async_backend* g_plugin = nullptr;
mlx5async_backend_entry_fn g_linked = nullptr;

}  // namespace

Result<const mlx5async_backend*> backend_plugin() {
    std::lock_guard lk(g_plugin_mu);
    if (g_plugin) return g_plugin;
    mlx5async_backend_entry_fn entry = g_linked;
    const std::string path = emulator_plugin_path();
    if (!entry) {
        // RTLD_LOCAL: the plugin also exports rdma-core's names (its
        // LD_PRELOAD face); they must not shadow the real libmlx5.
        void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!h)
            return fail(Errc::NotSupported,
                        "emu=: the emulator plugin " + path + " cannot be loaded (" + ::dlerror() +
                            "): install the mlx5async emulator package, or set MLX5ASYNC_EMU_LIB to "
                            "its libmlx5emu.so");
        entry = reinterpret_cast<mlx5async_backend_entry_fn>(::dlsym(h, "mlx5async_backend_entry"));
        if (!entry) {
            ::dlclose(h);
            return fail(Errc::NotSupported, path + " has no mlx5async_backend_entry: not an mlx5async backend plugin");
        }
    }
    const mlx5async_backend* table = entry(MLX5ASYNC_BACKEND_ABI);
    if (!table || table->abi != MLX5ASYNC_BACKEND_ABI)
        return fail(Errc::NotSupported, path + " implements another backend ABI than this driver's (" +
                                            std::to_string(MLX5ASYNC_BACKEND_ABI) + "): install matching versions");
    g_plugin = table;
    return g_plugin;
}

std::string emulator_plugin_path() {
    if (const char* env = std::getenv("MLX5ASYNC_EMU_LIB"); env && *env) return env;
    return MLX5ASYNC_EMU_PLUGIN_PATH;
}

void use_linked_plugin(mlx5async_backend_entry_fn entry) {
    std::lock_guard lk(g_plugin_mu);
    g_linked = entry;
    g_plugin = nullptr;
}

Result<void> check_emulator_spec(std::string_view spec) {
    auto p = backend_plugin();
    MLX5A_CHECK(p);
    char err[256] = "";
    if ((*p)->check_spec(std::string(spec).c_str(), err, sizeof err) != 0)
        return fail(Errc::InvalidArgument, err);
    return {};
}

}  // namespace mlx5async::core
