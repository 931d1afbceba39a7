// What a device core runs on: the DevX function table, the opened context
// and, for an emulated device, the hooks only the emulator has (faults, the
// cost model's latencies). backend.cpp is the only core file that knows the
// emulator; a build without it (-Demulator=false) opens hardware only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/base/result.hpp"
#include "common/devx/raii.hpp"
#include "config.hpp"

namespace mlx5async::core {

// The per-command latencies of an emulated profile: a benchmark's ideal.
struct ModelTiming {
    uint64_t modify_ns = 0, query_ns = 0;
    uint32_t fw_max_inflight = 0;
};

// What an emulated virtq's datapath saw of the frames it sent.
struct FrameCounts {
    uint64_t arp = 0;        // ARP frames
    uint64_t announces = 0;  // of those, gratuitous (the guest announcing itself)
    uint64_t oversize = 0;   // longer than the port's MTU: dropped
};

class EmulatorHooks {
public:
    virtual ~EmulatorHooks() = default;  // removes the emulated device
    virtual ModelTiming timing() const = 0;
    virtual FrameCounts frames(uint32_t virtq_obj_id) const = 0;
    // `f(ring)` runs on the emulator's datapath thread when a virtq sends a
    // gratuitous ARP; an empty `f` stops the calls (none runs after this returns).
    virtual void on_announce(std::function<void(uint16_t ring)> f) = 0;
    // A fault rule (drivers/emu/fault_rule.hpp); `object_of` maps the virtq
    // number a rule names to its object id, or says why it cannot.
    virtual Result<void> inject_fault(std::string_view rule,
                                      const std::function<Result<uint32_t>(uint16_t)>& object_of) = 0;
};

struct Backend {
    const devx::DevxApi* api = nullptr;
    std::unique_ptr<EmulatorHooks> emulator;  // null on hardware; outlives ctx
    devx::Context ctx;
};

// Opens the device `cfg` names (emu=... or dev=...); `name` is the core's.
Result<Backend> open_backend(const DeviceConfig& cfg, const std::string& name);
// "emu:cx7" / "rdma-core:0000:08:00.2".
std::string backend_label(const DeviceConfig& cfg, const devx::DevxApi* api);
// Checks an emulator spec a driver opens ("cx7,modify_us=0"), as the emulator
// will read it; a manual clock is for tests that step it and is refused.
Result<void> check_emulator_spec(std::string_view spec);
bool have_emulator() noexcept;

}  // namespace mlx5async::core
