// The emulator's two C faces: the backend entry the PMD loads
// (common/devx/backend_plugin.hpp) and its own API for programs that drive
// it (include/mlx5emu/mlx5emu.h). Both address devices by name through the
// registry; nothing here throws across the boundary.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/devx/backend_plugin.hpp"
#include "emu.hpp"
#include "fault_rule.hpp"
#include "mlx5emu.h"
#include "profile.hpp"

namespace mlx5async::emu {
namespace {

int report(const Error& e, char* err, size_t errlen) {
    if (err && errlen) std::snprintf(err, errlen, "%s", e.what.c_str());
    return -(e.sys_errno ? e.sys_errno : (e.code == Errc::NotFound ? ENOENT : EINVAL));
}

template <typename F>
int guarded_call(char* err, size_t errlen, F f) noexcept {
    try {
        auto r = f();
        return r ? 0 : report(r.error(), err, errlen);
    } catch (const std::exception& ex) {
        if (err && errlen) std::snprintf(err, errlen, "%s", ex.what());
        return -EIO;
    }
}

Result<void> check_spec(const char* spec) {
    auto p = parse_spec(spec ? spec : "");
    MLX5A_CHECK(p);
    if (p->clock == ClockKind::Manual)
        return fail(Errc::InvalidArgument,
                    "clock=manual moves the emulator's time only when a test steps it; nothing "
                    "does for a driver, so the probe's first command (QUERY_HCA_CAP) would never "
                    "complete: leave clock unset (steady)");
    return {};
}

// "vq=N": the virtq object of queue N (the driver's device has one per queue).
Result<uint32_t> object_of_queue(Device& dev, uint16_t q) {
    auto ids = dev.virtqs_of_queue(q);
    if (ids.empty()) return fail(Errc::NotFound, "virtq " + std::to_string(q) + " has no object");
    if (ids.size() > 1)
        return fail(Errc::InvalidArgument, "virtq " + std::to_string(q) + " has " + std::to_string(ids.size()) +
                                               " objects: name one");
    return ids.front();
}

const mlx5async_backend kBackend = {
    MLX5ASYNC_BACKEND_ABI,
    "mlx5emu",
    &api(),
    [](const char* spec, char* err, size_t errlen) noexcept {
        return guarded_call(err, errlen, [&] { return check_spec(spec); });
    },
    [](const char* name, const char* spec, char* err, size_t errlen) noexcept {
        return guarded_call(err, errlen, [&]() -> Result<void> {
            MLX5A_CHECK(create_device(name, spec));
            return {};
        });
    },
    [](const char* name) noexcept { (void)destroy_device(name); },
    [](const char* name, uint32_t obj_id, mlx5async_backend_frames* out) noexcept {
        *out = {};
        Device* dev = find_device(name);
        if (!dev) return;
        if (auto i = dev->virtq_info(obj_id)) *out = {i->frames.arp, i->frames.announces, i->frames.oversize};
    },
    [](const char* name, void (*fn)(void*, uint16_t), void* arg) noexcept {
        Device* dev = find_device(name);
        if (!dev) return;
        if (!fn) return dev->datapath().set_announce_observer({});
        dev->datapath().set_announce_observer([fn, arg](uint32_t, uint16_t ring) { fn(arg, ring); });
    },
    [](const char* name, mlx5async_backend_wire* out) noexcept {
        *out = {};
        Device* dev = find_device(name);
        if (!dev) return;
        const dp::WireCounters w = dev->wire().counters();
        *out = {w.frames, w.bytes, w.rarp, w.arp, w.ipv4, w.ipv6, w.other, w.pcap_errors};
    },
};

}  // namespace

Result<void> inject_fault(std::string_view device, std::string_view text) {
    Device* dev = find_device(device);
    if (!dev) return fail(Errc::NotFound, "no emulated device '" + std::string(device) + "'");
    auto parsed = parse_fault_rule(text);
    MLX5A_CHECK(parsed);
    if (parsed->clear) {
        dev->faults().clear();
        return {};
    }
    std::optional<uint32_t> obj;
    if (parsed->vq) {
        auto id = object_of_queue(*dev, *parsed->vq);
        MLX5A_CHECK(id);
        obj = *id;
    }
    if (parsed->error_type) return dev->force_virtq_error(*obj, *parsed->error_type);
    FaultRule r = *parsed->rule;
    if (obj) r.match.obj_id = *obj;
    dev->faults().add(r);
    return {};
}

uint64_t ideal_ns(const Profile& p, bool suspend, uint32_t queues, uint32_t max_inflight) {
    const uint64_t width = std::min(max_inflight, p.max_inflight);
    if (!queues || !width) return 0;
    const uint64_t per_wave = (uint64_t(p.timing.modify_us) + (suspend ? p.timing.query_us : 0)) * 1000;
    return (queues + width - 1) / width * per_wave;
}

}  // namespace mlx5async::emu

extern "C" {

const mlx5async_backend* mlx5async_backend_entry(uint32_t abi) {
    return abi == MLX5ASYNC_BACKEND_ABI ? &mlx5async::emu::kBackend : nullptr;
}

int mlx5emu_get_model(const char* device, mlx5emu_model* m) {
    auto* dev = device ? mlx5async::emu::find_device(device) : nullptr;
    if (!dev || !m) return -ENOENT;
    const auto& p = dev->profile();
    *m = {uint64_t(p.timing.modify_us) * 1000, uint64_t(p.timing.query_us) * 1000, p.max_inflight};
    return 0;
}

int mlx5emu_get_objects(const char* device, mlx5emu_objects* o) {
    auto* dev = device ? mlx5async::emu::find_device(device) : nullptr;
    if (!dev || !o) return -ENOENT;
    const auto c = dev->object_counts();
    *o = {uint32_t(c.pds),      uint32_t(c.uars),   uint32_t(c.umems), uint32_t(c.mkeys), uint32_t(c.counters),
          uint32_t(c.virtqs),   uint32_t(c.cqs),    uint32_t(c.qps),   uint32_t(c.sqs)};
    return 0;
}

uint64_t mlx5emu_ideal_ns(const char* device, int suspend, uint32_t queues, uint32_t max_inflight) {
    auto* dev = device ? mlx5async::emu::find_device(device) : nullptr;
    return dev ? mlx5async::emu::ideal_ns(dev->profile(), suspend != 0, queues, max_inflight) : 0;
}

int mlx5emu_fault(const char* device, const char* rule, char* err, size_t errlen) {
    using namespace mlx5async::emu;
    return guarded_call(err, errlen, [&] { return inject_fault(device ? device : "", rule ? rule : ""); });
}

}  // extern "C"
