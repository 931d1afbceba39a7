// What a device core runs on: the DevX function table, the opened context
// and what the backend reports beyond DevX (frames its datapath saw). A
// dev=<PCI address> device runs on rdma-core; an emu=<spec> device on a
// backend plugin loaded at its first use (common/devx/backend_plugin.hpp:
// mlx5emu's libmlx5emu.so, plugin_loader.hpp). backend.cpp is the core's one
// seam to both; the core names no type of any plugin.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/base/result.hpp"
#include "common/devx/backend_plugin.hpp"
#include "common/devx/raii.hpp"
#include "config.hpp"

namespace mlx5async::core {

// What a virtq's datapath saw of the frames it sent (zeros on rdma-core).
struct FrameCounts {
    uint64_t arp = 0;        // ARP frames
    uint64_t announces = 0;  // of those, gratuitous (the guest announcing itself)
    uint64_t oversize = 0;   // longer than the port's MTU: dropped
};

// What the device sent to the network, by ethertype (the emulator's wire).
struct WireCounts {
    uint64_t frames = 0, bytes = 0;
    uint64_t rarp = 0, arp = 0, ipv4 = 0, ipv6 = 0, other = 0;
    uint64_t pcap_errors = 0;
};

// A plugin device: removed from the plugin when this goes.
class PluginDevice {
public:
    PluginDevice(const mlx5async_backend& plugin, std::string name) : plugin_(plugin), name_(std::move(name)) {}
    ~PluginDevice();
    PluginDevice(const PluginDevice&) = delete;
    PluginDevice& operator=(const PluginDevice&) = delete;
    const std::string& name() const { return name_; }
    FrameCounts frames(uint32_t virtq_obj_id) const;
    WireCounts wire() const;
    // `f(ring)` runs on the backend's datapath thread when a virtq sends a
    // gratuitous ARP; an empty `f` stops the calls (none runs after this returns).
    void on_announce(std::function<void(uint16_t ring)> f);

private:
    static void announced(void* self, uint16_t ring);
    const mlx5async_backend& plugin_;
    std::string name_;
    std::function<void(uint16_t)> on_announce_;
};

struct Backend {
    const devx::DevxApi* api = nullptr;
    std::unique_ptr<PluginDevice> plugin_device;  // null on rdma-core; outlives ctx
    devx::Context ctx;
};

// Opens the device `cfg` names (emu=... or dev=...); `name` is the core's.
Result<Backend> open_backend(const DeviceConfig& cfg, const std::string& name);
// "emu:cx7" / "rdma-core:0000:08:00.2".
std::string backend_label(const DeviceConfig& cfg, const devx::DevxApi* api);
// The name the backend knows the device `name` by: its plugin device's, or
// the rdma-core device the config names.
std::string backend_device_name(const DeviceConfig& cfg, const std::string& name);

}  // namespace mlx5async::core
