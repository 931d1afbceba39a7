// Process-wide device registry and the facade functions of emu.hpp.
#include <cstdlib>
#include <map>
#include <mutex>

#include "api_internal.hpp"
#include "emu.hpp"

namespace mlx5async::emu {
namespace {

struct Registry {
    std::mutex mu;  // guards devices and next_index (create, lookup and close race)
    std::map<std::string, std::shared_ptr<Device>, std::less<>> devices;
    uint32_t next_index = 0;
};

Registry& registry() {
    static Registry* r = new Registry;  // never destroyed: shim calls may come late
    return *r;
}

Result<ibv_device*> create_locked(Registry& r, std::string_view name, std::string_view spec) {
    if (name.empty() || name.size() >= IBV_SYSFS_NAME_MAX)
        return fail(Errc::InvalidArgument, "emu: bad device name");
    if (r.devices.count(name))
        return fail(Errc::InvalidArgument, "emu: device '" + std::string(name) + "' exists");
    auto p = parse_spec(spec);
    if (!p) return unexpected(p.error());
    auto wire = dp::Wire::open(p->wire_pcap);
    if (!wire) return unexpected(wire.error());
    auto dev = std::make_shared<Device>(std::string(name), std::move(*p), r.next_index++, std::move(*wire));
    ibv_device* ibv = dev->ibv();
    r.devices.emplace(std::string(name), std::move(dev));
    return ibv;
}

}  // namespace

Result<ibv_device*> create_device(std::string_view name, std::string_view spec) {
    Registry& r = registry();
    std::lock_guard lk(r.mu);
    return create_locked(r, name, spec);
}

Result<void> destroy_device(std::string_view name) {
    std::shared_ptr<Device> dev;
    {
        Registry& r = registry();
        std::lock_guard lk(r.mu);
        auto it = r.devices.find(name);
        if (it == r.devices.end())
            return fail(Errc::NotFound, "emu: no device '" + std::string(name) + "'");
        dev = std::move(it->second);
        r.devices.erase(it);
    }
    dev->close();
    return {};
}

Result<void> ensure_default_device() {
    Registry& r = registry();
    std::lock_guard lk(r.mu);
    if (!r.devices.empty()) return {};
    const char* env = std::getenv(kProfileEnv);
    auto d = create_locked(r, kDefaultDeviceName, env && *env ? env : "cx7");
    if (!d) return unexpected(d.error());
    return {};
}

Device* find_device(std::string_view name) {
    Registry& r = registry();
    std::lock_guard lk(r.mu);
    auto it = r.devices.find(name);
    return it == r.devices.end() ? nullptr : it->second.get();
}

Device* device_of(ibv_device* d) {
    auto* h = detail::handle_cast<DeviceHandle>(d, kDeviceMagic);
    return h ? h->dev : nullptr;
}

Device* device_of(ibv_context* c) {
    auto* h = detail::handle_cast<detail::ContextHandle>(c, detail::kCtxMagic);
    return h ? h->impl->dev.get() : nullptr;
}

namespace detail {

std::vector<std::shared_ptr<Device>> all_devices() {
    Registry& r = registry();
    std::lock_guard lk(r.mu);
    std::vector<std::shared_ptr<Device>> v;
    for (auto& [n, d] : r.devices) v.push_back(d);
    return v;
}

std::shared_ptr<Device> shared_device(ibv_device* d) {
    Device* dev = device_of(d);
    if (!dev) return nullptr;
    return dev->shared_from_this();
}

}  // namespace detail
}  // namespace mlx5async::emu
