// The virtq table: the driver's virtqs, their objects and what the driver
// knows of each on the device. It is the one writer of a virtq's phase, of
// the PRM state last seen and of whether that knowledge is certain: each
// step the firmware agreed to, each answer it gave and each failure goes
// through one of its methods. A lifecycle step is checked against
// kVqPhaseEdges; what a QUERY learned from the device is adopted as it is
// (the device is the truth); "needs a new object" is its own marker, not a
// phase. Touched on the device's strand only (strand.hpp); others read the
// strand's snapshots.
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
#include "vq_phase.hpp"

namespace mlx5async::core {

// One virtq as the driver sees it.
class Vq {
public:
    VqPhase phase() const noexcept { return phase_; }
    // Its object goes and a new one is created before it starts again: the
    // ring size changed, or the device cannot resume (no freeze_to_rdy).
    bool needs_recreation() const noexcept { return recreate_; }
    uint8_t fw_state() const noexcept { return fw_state_; }  // PRM state last seen, 0xff none
    // Its last command failed or timed out: the device may be in another
    // state than phase() (a MODIFY that timed out can still land). Learned
    // before the virtq is used again (control_path.cpp, reconcile).
    bool unsure() const noexcept { return unsure_; }

    uint16_t index = 0;
    // Declaration order is destruction order reversed: the virtq object goes
    // before the umems and counters it pins, a umem before its memory.
    std::array<devx::PageBuffer, 3> umem_mem;
    std::array<devx::Umem, 3> umem;
    devx::DevxObj counters;
    devx::DevxObj obj;
    prm::VirtqAttr attr;          // what the object was last programmed with
    uint16_t size = 0;            // ring size of the object
    uint16_t saved_avail = 0;     // last known-good indexes
    uint16_t saved_used = 0;
    bool enabled = false;         // vhost's view (set_vring_state)
    // Its next start is from vhost's indexes: not started since dev_conf
    // (not from a previous session's suspend), or the frontend set its base
    // since (Device::frontend_set_base).
    bool start_from_vhost = false;
    uint8_t error_type = 0;
    uint32_t errors = 0;
    std::deque<std::chrono::steady_clock::time_point> error_times;  // recovery rate limit

private:
    friend class VirtqTable;
    VqPhase phase_ = VqPhase::Absent;
    bool recreate_ = false;
    uint8_t fw_state_ = 0xff;
    bool unsure_ = false;
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

    // What the firmware answered, one method per answer:
    // A new frontend session (dev_conf) names the ring with vhost's
    // indexes: until the ring starts they are the ones to hand back.
    void session_indexes(Vq& vq, uint16_t avail, uint16_t used);
    // CREATE: the object, in INIT.
    Result<void> created(Vq& vq, devx::DevxObj obj, uint16_t size, const prm::VirtqAttr& attr);
    // MODIFY to RDY with `sent`: its fields are the object's now.
    Result<void> started(Vq& vq, const prm::VirtqAttr& sent);
    // MODIFY to SUSPEND.
    Result<void> suspended(Vq& vq);
    // The QUERY after a suspend: where the ring stopped (or that it is in ERR).
    void stopped_at(Vq& vq, const prm::VirtqAttr& queried);
    // A QUERY of a virtq whose state was unknown: the device's state,
    // indexes and fields become the driver's; certain again.
    void learned(Vq& vq, const prm::VirtqAttr& queried);
    // An error event's QUERY found it in ERR.
    void errored(Vq& vq, const prm::VirtqAttr& queried);
    // DESTROY: gone, with nothing left to disagree with.
    Result<void> destroyed(Vq& vq);
    // A command for it failed: counted; unless it was never issued, the
    // device may have applied it (unsure until learned).
    void failed(Vq& vq, bool never_issued);
    // A command that did not fail it may still land (a re-point that timed out).
    void may_have_changed(Vq& vq) { vq.unsure_ = true; }
    // Unsure without an object: nothing left to disagree with.
    void settle(Vq& vq) {
        if (!vq.obj) vq.unsure_ = false;
    }

private:
    std::vector<Vq> vqs_;
    std::string name_;  // the device's, for messages
};

}  // namespace mlx5async::core
