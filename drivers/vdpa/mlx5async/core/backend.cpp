// The core's one seam to its backends: rdma-core (hardware) and a backend
// plugin (mlx5emu, loaded by plugin_loader.cpp the first time a device needs it).
#include "backend.hpp"

#include "plugin_loader.hpp"

namespace mlx5async::core {
namespace {

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
    auto p = backend_plugin();
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
