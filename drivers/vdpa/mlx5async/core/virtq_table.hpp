// The driver's virtqs, and the one writer of their phase. A lifecycle step
// (a command the firmware accepted) is checked against kVqPhaseEdges; what a
// QUERY learned from the device is adopted as it is (the device is the
// truth); "needs a new object" is its own marker, not a phase.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "common/base/result.hpp"
#include "common/devx/raii.hpp"
#include "common/prm/virtq.hpp"
#include "event_qp.hpp"
#include "vq_phase.hpp"

namespace mlx5async::core {

// One virtq as the driver sees it.
class Vq {
public:
    VqPhase phase() const noexcept { return phase_; }
    // Its object goes and a new one is created before it starts again: the
    // ring size changed, or the device cannot resume (no freeze_to_rdy).
    bool needs_recreation() const noexcept { return recreate_; }

    uint16_t index = 0;
    // Declaration order is destruction order reversed: the virtq object goes
    // before the umems and counters it pins, a umem before its memory.
    std::array<devx::PageBuffer, 3> umem_mem;
    std::array<devx::Umem, 3> umem;
    EventQp eqp;  // interrupts (event_mode irq); the virtq names its firmware QP
    devx::DevxObj counters;
    devx::DevxObj obj;
    prm::VirtqAttr attr;          // what the object was last programmed with
    uint16_t size = 0;            // ring size of the object
    uint16_t saved_avail = 0;     // last known-good indexes
    uint16_t saved_used = 0;
    bool enabled = false;         // vhost's view (set_vring_state)
    // Its last command failed or timed out: the device may be in another
    // state than phase() (a MODIFY that timed out can still land). Learned
    // by reconcile() before the virtq is used again.
    bool unsure = false;
    // Not started since dev_conf: it starts from vhost's indexes, not from
    // a previous session's suspend.
    bool start_from_vhost = false;
    uint8_t fw_state = 0xff;
    uint8_t error_type = 0;
    uint32_t errors = 0;
    std::deque<std::chrono::steady_clock::time_point> error_times;  // recovery rate limit

private:
    friend class VirtqTable;
    VqPhase phase_ = VqPhase::Absent;
    bool recreate_ = false;
};

class VirtqTable {
public:
    // `n` virtqs numbered 0..n-1, all Absent. Called once: the relays hold
    // pointers into the table.
    void create(size_t n, std::string device_name);
    void clear() { vqs_.clear(); }  // the objects go, in the order Vq declares

    size_t size() const noexcept { return vqs_.size(); }
    Vq& operator[](size_t i) { return vqs_[i]; }
    const Vq& operator[](size_t i) const { return vqs_[i]; }
    Vq& at(size_t i) { return vqs_.at(i); }
    auto begin() { return vqs_.begin(); }
    auto end() { return vqs_.end(); }
    auto begin() const { return vqs_.begin(); }
    auto end() const { return vqs_.end(); }

    // A step the firmware agreed to. One the table does not allow changes
    // nothing and fails with Errc::State naming the virtq and both phases.
    Result<void> transition(Vq& vq, VqPhase to);
    // The state a QUERY (or an error event's QUERY) found on the device.
    void adopt(Vq& vq, VqPhase on_device);
    void mark_for_recreation(Vq& vq) { vq.recreate_ = true; }

private:
    std::vector<Vq> vqs_;
    std::string name_;  // the device's, for messages
};

}  // namespace mlx5async::core
