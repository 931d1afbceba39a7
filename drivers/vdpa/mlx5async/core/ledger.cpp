#include "ledger.hpp"

#include <time.h>

namespace mlx5async::core {
namespace {

uint64_t clock_ns(clockid_t id) {
    timespec ts{};
    clock_gettime(id, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace

const char* ledger_phase_name(LedgerPhase p) noexcept {
    switch (p) {
    case LedgerPhase::StopRequested: return "stop_requested";
    case LedgerPhase::SuspendIssued: return "suspend_issued";
    case LedgerPhase::SuspendDone: return "suspend_done";
    case LedgerPhase::BasesHandedBack: return "bases_handed_back";
    case LedgerPhase::UsedRingsLogged: return "used_rings_logged";
    case LedgerPhase::StartRequested: return "start_requested";
    case LedgerPhase::MemoryRegistered: return "memory_registered";
    case LedgerPhase::VirtqsCreated: return "virtqs_created";
    case LedgerPhase::AllReady: return "all_ready";
    case LedgerPhase::ConfReturned: return "conf_returned";
    case LedgerPhase::NotifiersSet: return "notifiers_set";
    case LedgerPhase::Announced: return "announced";
    case LedgerPhase::DeviceAnnounced: return "device_announced";
    case LedgerPhase::Count: break;
    }
    return "?";
}

bool is_stop_phase(LedgerPhase p) noexcept { return p < kFirstStartPhase; }

void Ledger::set_observer(PhaseObserver o) { observer_ = std::move(o); }

void Ledger::notify(LedgerPhase p, uint64_t seq, const LedgerStamp& at) const {
    if (observer_) observer_(p, seq, at);
}

void Ledger::mark(LedgerPhase p) {
    if (p >= LedgerPhase::Count) return;
    // Both clocks read together: durations from the steady clock, the wall
    // clock to line the phases up with other processes' events.
    LedgerStamp now{clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_REALTIME)};
    std::unique_lock lk(mu_);
    if (p == kFirstStopPhase || p == kFirstStartPhase) {
        const bool stop = p == kFirstStopPhase;
        for (size_t i = 0; i < kLedgerPhases; i++)
            if (is_stop_phase(LedgerPhase(i)) == stop) s_.at[i] = {};
        if (stop) {
            s_.stop_seq++;
            s_.stop_rings = s_.logged_rings = 0;
        } else {
            s_.start_seq++;
            s_.start_rings = s_.regions = 0;
            s_.notifiers_rc = 0;
            s_.notifiers_tried = false;
            s_.start_rc = 0;
            s_.start_error.clear();
        }
    }
    s_.at[size_t(p)] = now;
    const uint64_t seq = is_stop_phase(p) ? s_.stop_seq : s_.start_seq;
    lk.unlock();
    notify(p, seq, now);
}

void Ledger::mark_start(LedgerPhase p, uint64_t seq) {
    LedgerStamp now{clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_REALTIME)};
    {
        std::lock_guard lk(mu_);
        if (seq != s_.start_seq || is_stop_phase(p) || p >= LedgerPhase::Count) return;
        s_.at[size_t(p)] = now;
    }
    notify(p, seq, now);
}

void Ledger::start_failed(uint64_t seq, int rc, std::string why) {
    std::lock_guard lk(mu_);
    if (seq != s_.start_seq) return;
    s_.start_rc = rc;
    s_.start_error = std::move(why);
}

void Ledger::set_stop_rings(uint32_t handed_back, uint32_t logged) {
    std::lock_guard lk(mu_);
    s_.stop_rings = handed_back;
    s_.logged_rings = logged;
}

void Ledger::set_start(uint64_t seq, uint32_t rings, uint32_t regions) {
    std::lock_guard lk(mu_);
    if (seq != s_.start_seq) return;
    s_.start_rings = rings;
    s_.regions = regions;
}

void Ledger::notifiers_done(uint64_t start_seq, int rc) {
    LedgerStamp now{clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_REALTIME)};
    {
        std::lock_guard lk(mu_);
        if (start_seq != s_.start_seq) return;
        s_.at[size_t(LedgerPhase::NotifiersSet)] = now;
        s_.notifiers_rc = rc;
        s_.notifiers_tried = true;
    }
    notify(LedgerPhase::NotifiersSet, start_seq, now);
}

void Ledger::announced() {
    LedgerStamp now{clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_REALTIME)};
    uint64_t seq = 0;
    {
        std::lock_guard lk(mu_);
        auto& at = s_.at[size_t(LedgerPhase::Announced)];
        if (!s_.start_seq || at.mono_ns) return;
        at = now;
        seq = s_.start_seq;
    }
    notify(LedgerPhase::Announced, seq, now);
}

void Ledger::device_announced(uint64_t seq) {
    LedgerStamp now{clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_REALTIME)};
    {
        std::lock_guard lk(mu_);
        auto& at = s_.at[size_t(LedgerPhase::DeviceAnnounced)];
        if (seq != s_.start_seq || at.mono_ns) return;
        at = now;
    }
    notify(LedgerPhase::DeviceAnnounced, seq, now);
}

LedgerSnapshot Ledger::snapshot() const {
    std::lock_guard lk(mu_);
    return s_;
}

}  // namespace mlx5async::core
