// The downtime ledger: when each step of a device stop (the source of a
// live migration) and of a device start (the destination) happened, so that
// every millisecond of the VM's network downtime the device accounts for has
// a name. The last stop and the last start are kept; each begins a new
// record (seq + 1) at its first phase.
//
// Stop, from the first GET_VRING_BASE (vhost's dev_close):
//   stop_requested -> suspend_issued -> suspend_done -> bases_handed_back
//   -> used_rings_logged
// Start, from SET_STATUS(DRIVER_OK) / the last ring ready (dev_conf):
//   start_requested -> memory_registered -> virtqs_created -> all_ready
//   -> conf_returned -> notifiers_set; device_announced: the device's own
//   first RARP of the start (posted on its send queue once every ring is
//   RDY: announcer.hpp); and announced: the first gratuitous ARP the guest
//   sent through the device since the start began (the emulated datapath
//   sees it; hardware's frames do not reach the driver).
// Thread-safe: the vhost thread marks the requests and conf_returned, the
// device's strand the start's and stop's own steps (a start runs after
// dev_conf returned: conf_returned may come before memory_registered), the
// host-notifier thread notifiers_set, the announcer device_announced, the
// emulated datapath announced.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace mlx5async::core {

enum class LedgerPhase : uint8_t {
    StopRequested,    // dev_close entered
    SuspendIssued,    // the suspend batch handed to the engine
    SuspendDone,      // every MODIFY(SUSPEND) + QUERY answered
    BasesHandedBack,  // rte_vhost_set_vring_base for every ring
    UsedRingsLogged,  // used rings logged dirty (LOG_ALL; = handed back otherwise)
    StartRequested,   // dev_conf entered
    MemoryRegistered, // guest memory registered (or the registration reused)
    VirtqsCreated,    // every started ring has a virtq object
    AllReady,         // the start batch answered: every started ring RDY
    ConfReturned,     // dev_conf returns to vhost
    NotifiersSet,     // host notifiers handed to the frontend (or refused)
    Announced,        // the guest's first gratuitous ARP left the device
    DeviceAnnounced,  // the device's first RARP of the start posted (its doorbell rung)
    Count,
};

inline constexpr size_t kLedgerPhases = size_t(LedgerPhase::Count);
inline constexpr LedgerPhase kFirstStopPhase = LedgerPhase::StopRequested;
inline constexpr LedgerPhase kFirstStartPhase = LedgerPhase::StartRequested;

const char* ledger_phase_name(LedgerPhase p) noexcept;
bool is_stop_phase(LedgerPhase p) noexcept;

struct LedgerStamp {
    uint64_t mono_ns = 0;  // CLOCK_MONOTONIC (steady clock); 0: not reached
    uint64_t wall_ns = 0;  // CLOCK_REALTIME at the same moment (aligns with QEMU's events)
};

struct LedgerSnapshot {
    uint64_t stop_seq = 0;   // stops recorded so far (0: none)
    uint64_t start_seq = 0;  // starts recorded so far
    std::array<LedgerStamp, kLedgerPhases> at{};
    uint32_t stop_rings = 0;      // rings whose bases were handed back
    uint32_t logged_rings = 0;    // of those, used rings logged dirty
    uint32_t start_rings = 0;     // rings the start brought to RDY
    uint32_t regions = 0;         // memory regions registered (0: reused)
    int32_t notifiers_rc = 0;     // rte_vhost_host_notifier_ctrl's result
    bool notifiers_tried = false; // false: the device has no doorbell page
    int32_t start_rc = 0;         // the start's result (negative errno; 0: none failed)
    std::string start_error;      // and why it failed
};

class Ledger {
public:
    // Stamps `p` now. The first phase of a stop or a start clears that
    // half of the record and counts a new one.
    void mark(LedgerPhase p);
    // Stamps start phase `p` of start `seq` (what snapshot().start_seq was
    // when it was requested): nothing when a later start began meanwhile.
    void mark_start(LedgerPhase p, uint64_t seq);
    // Start `seq` failed: its result and cause (unless a later one began).
    void start_failed(uint64_t seq, int rc, std::string why);
    void set_stop_rings(uint32_t handed_back, uint32_t logged);
    void set_start(uint64_t seq, uint32_t rings, uint32_t regions);
    // The host-notifier set-up of start `start_seq` finished with `rc`:
    // stamps notifiers_set, unless a later start began meanwhile.
    void notifiers_done(uint64_t start_seq, int rc);
    // The guest announced itself (a gratuitous ARP left the device): stamps
    // announced once per start, if a start was recorded.
    void announced();
    // The device posted its first RARP for start `seq`: stamps
    // device_announced once, unless a later start began meanwhile.
    void device_announced(uint64_t seq);
    LedgerSnapshot snapshot() const;

    // Called with each phase as it is stamped (seq: its stop's or start's),
    // on the thread that stamps it, outside the lock: tracers (the PMD's
    // rte_trace points). Set once, before the device serves a frontend.
    using PhaseObserver = std::function<void(LedgerPhase, uint64_t seq, const LedgerStamp&)>;
    void set_observer(PhaseObserver o);

private:
    void notify(LedgerPhase p, uint64_t seq, const LedgerStamp& at) const;

    mutable std::mutex mu_;  // protects s_
    LedgerSnapshot s_;
    PhaseObserver observer_;  // written before any mark
};

}  // namespace mlx5async::core
