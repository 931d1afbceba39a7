// Event QPs and interrupts: in QP event mode (as Linux mlx5_vdpa and DPDK's
// mlx5 event_mode=2) each virtq names a firmware QP whose messages end as
// writes to the ring's callfd (event_qp.hpp, irq_relay.hpp). This part owns
// the completion EQ number, the UAR page of the CQ arm doorbells, one event
// QP per ring (created before the ring's first virtq object, kept for the
// device's life) and the relay thread. Its objects are made and the relay's
// callfds set on the device's strand; the relay thread reads them on its own
// (its lock); statistics are the relay's.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/base/result.hpp"
#include "common/devx/engine.hpp"
#include "common/devx/raii.hpp"
#include "common/prm/caps.hpp"
#include "config.hpp"
#include "event_qp.hpp"
#include "irq_relay.hpp"

namespace mlx5async::core {

class Interrupts {
public:
    // QP event mode when the device has it (virtio caps event_mode bit QP)
    // and the user did not ask for none: the EQ, a UAR page and the relay
    // for `rings` rings. Without it, off, with an info line; a user who asked
    // for event_mode=irq gets an error instead of a silent fallback.
    Result<void> setup(const DeviceConfig& cfg, const devx::Context& ctx,
                       const prm::VirtioEmulationCaps& caps, size_t rings, const std::string& name);
    bool on() const { return relay_ != nullptr; }

    // The event QPs of `rings` that have none (their umems' memory); a ring
    // of `size` entries gets as many receive WQEs, up to EventQp's maximum.
    // The caller places each umem's registration in a chain of its batch
    // (EventQp::Build::reg_umem), then adds their chains (a batch the start
    // shares with its umems, counters and memory).
    // Umems an earlier start's failed chains left (EventQp::take) are
    // deregistered here once nothing names them.
    Result<EventQp::Build> plan_event_qps(std::span<const uint16_t> rings, uint16_t size);
    Result<void> add_event_qps(EventQp::Build& build, const devx::Context& ctx, uint32_t pdn,
                               devx::Batch& b) const;
    // Takes them from the batch's result, each attached to the relay; the
    // rings whose chain did not complete have none (the first names its ring
    // and command) and leave their buffer in `late`.
    Result<void> take_event_qps(EventQp::Build& build, devx::BatchResult& res,
                                std::vector<devx::PageBuffer>& late);
    // The firmware QP ring `ring`'s virtq names (0: none, no interrupts).
    uint32_t fw_qpn(uint16_t ring) const;

    // The relay's callfds: replaced at each start, one refreshed, all
    // dropped when the frontend leaves. Failures are logged.
    void set_callfds(const std::vector<std::pair<uint16_t, int>>& fds, const std::string& name);
    void set_callfd(uint16_t ring, int fd, const std::string& name);
    void clear_callfds();

    IrqRelayStats stats() const;
    uint64_t calls(uint16_t ring) const;

    // The relay first (it holds pointers to the QPs), then the QPs (after
    // the virtqs naming them), then the UAR page they name.
    void stop_relay() { relay_.reset(); }
    void reset();

private:
    uint32_t eqn_ = 0;
    devx::Uar uar_;
    // Event-QP umems of chains that failed, their buffers owned:
    // deregistered once nothing names them (plan_event_qps, reset).
    std::vector<devx::Umem> parked_;
    std::vector<EventQp> qps_;           // per ring; sized once (the relay points into it)
    std::unique_ptr<IrqRelay> relay_;    // null: interrupts off
};

}  // namespace mlx5async::core
