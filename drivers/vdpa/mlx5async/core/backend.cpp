// The core's one seam to its backends: rdma-core (hardware) and a backend
// plugin (mlx5emu), loaded with dlopen the first time a device needs it.
#include "backend.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "mlx5async_config.h"

namespace mlx5async::core {
namespace {

std::mutex g_plugin_mu;  // protects g_plugin, g_linked (loaded once, kept for the process)
const mlx5async_backend* g_plugin = nullptr;
mlx5async_backend_entry_fn g_linked = nullptr;

// The plugin's table, loaded at the first call; its error names the library.
Result<const mlx5async_backend*> plugin() {
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

Result<Backend> open_hardware(const DeviceConfig& cfg) {
    Backend b;
    b.api = devx::rdma_core_api();
    if (!b.api)
        return fail(Errc::NotSupported,
                    "dev=" + cfg.hw_device + ": built without rdma-core (meson -Drdma_core=enabled)");
    // `dev` is a PCI address (has ':') or an ibv device name.
    auto c = cfg.hw_device.find(':') == std::string::npos
                 ? devx::Context::open(*b.api, cfg.hw_device)
                 : devx::Context::open_pci(*b.api, cfg.hw_device);
    MLX5A_CHECK(c);
    b.ctx = std::move(*c);
    return b;
}

Result<Backend> open_emulated(const DeviceConfig& cfg, const std::string& name) {
    auto p = plugin();
    MLX5A_CHECK(p);
    const std::string device = backend_device_name(cfg, name);
    char err[256] = "";
    if (int rc = (*p)->create_device(device.c_str(), cfg.emu_spec.c_str(), err, sizeof err); rc != 0)
        return unexpected(Error::sys(-rc, std::string((*p)->name) + ": " + err));
    Backend b;
    b.api = (*p)->devx;
    b.plugin_device = std::make_unique<PluginDevice>(**p, device);  // removes the device on failure
    auto c = devx::Context::open(*b.api, device);
    MLX5A_CHECK(c);
    b.ctx = std::move(*c);
    return b;
}

}  // namespace

PluginDevice::~PluginDevice() {
    on_announce({});
    plugin_.destroy_device(name_.c_str());
}

FrameCounts PluginDevice::frames(uint32_t virtq_obj_id) const {
    mlx5async_backend_frames f{};
    plugin_.frames(name_.c_str(), virtq_obj_id, &f);
    return {f.arp, f.announces, f.oversize};
}

WireCounts PluginDevice::wire() const {
    mlx5async_backend_wire w{};
    plugin_.wire(name_.c_str(), &w);
    return {w.frames, w.bytes, w.rarp, w.arp, w.ipv4, w.ipv6, w.other, w.pcap_errors};
}

void PluginDevice::announced(void* self, uint16_t ring) {
    static_cast<PluginDevice*>(self)->on_announce_(ring);
}

void PluginDevice::on_announce(std::function<void(uint16_t ring)> f) {
    // Stopped before replaced: the plugin calls `announced` on its own thread.
    plugin_.watch_announces(name_.c_str(), nullptr, nullptr);
    on_announce_ = std::move(f);
    if (on_announce_) plugin_.watch_announces(name_.c_str(), &PluginDevice::announced, this);
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
    auto p = plugin();
    MLX5A_CHECK(p);
    char err[256] = "";
    if ((*p)->check_spec(std::string(spec).c_str(), err, sizeof err) != 0)
        return fail(Errc::InvalidArgument, err);
    return {};
}

Result<Backend> open_backend(const DeviceConfig& cfg, const std::string& name) {
    return cfg.is_emulated() ? open_emulated(cfg, name) : open_hardware(cfg);
}

std::string backend_label(const DeviceConfig& cfg, const devx::DevxApi* api) {
    if (cfg.is_emulated()) return "emu:" + cfg.emu_spec;
    return std::string(api ? api->name : "?") + ":" + cfg.hw_device;
}

std::string backend_device_name(const DeviceConfig& cfg, const std::string& name) {
    return cfg.is_emulated() ? name + "-emu" : cfg.hw_device;
}

}  // namespace mlx5async::core
