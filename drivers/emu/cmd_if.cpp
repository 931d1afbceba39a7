#include "cmd_if.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <optional>

#include "common/base/futex.hpp"
#include "common/base/named_thread.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"
#include "events.hpp"
#include "pin_pool.hpp"
#include "syndrome.hpp"

namespace mlx5async::emu {

using prm::Opcode;

namespace {
constexpr int64_t kFwAwake = std::numeric_limits<int64_t>::min();
}  // namespace

struct CommandInterface::Pending {
    CmdDesc desc;
    CmdTiming timing;
    CmdFn fn;
    bool async = false;
    bool throttled = false;
    bool started = false;
    bool forced = false;  // complete_next released it
    bool signalled = false;  // blocking: its caller was told the time came (see signal())
    int64_t due = 0;
    // A blocking caller sleeps untimed on callers_word_, woken by its bit,
    // until the firmware thread signals its due time (or close,
    // complete_next, the manual clock): the device has one timed sleeper,
    // not one per command, and it wakes every caller due with one call.
    uint32_t wake_bit = kFutexAnyBit;
    TraceEntry tr;
};

CommandInterface::CommandInterface(const Profile& p, Clock& clock, Trace& trace,
                                   uint32_t dev_index)
    : profile_(p),
      clock_(clock),
      pins_(p.clock == ClockKind::Steady ? PinPool::host() : own_pins_),
      trace_(trace),
      free_slots_(p.cmd_slots),
      throttle_free_(p.max_inflight),
      rng_(p.seed) {
    fw_ = make_named_thread("emu-fw" + std::to_string(dev_index), [this] { fw_loop(); });
}

CommandInterface::~CommandInterface() { shutdown(); }

// The command's own time: its fixed latency (`pin` 0), or for a umem the
// pages the kernel pins or unpins (`pin` 1: host CPU work, booked on the
// host's pin pool while the command holds its slot).
int64_t CommandInterface::latency_ns(const CmdDesc& d, bool pin) {
    const Timing& t = profile_.timing;
    uint32_t us = t.general_us;
    double page_ns = 0;
    switch (Opcode(d.opcode)) {
    case Opcode::CREATE_GENERAL_OBJECT: us = t.create_us; break;
    case Opcode::MODIFY_GENERAL_OBJECT: us = t.modify_us; break;
    case Opcode::QUERY_GENERAL_OBJECT: us = t.query_us; break;
    case Opcode::DESTROY_GENERAL_OBJECT: us = t.destroy_us; break;
    case Opcode::CREATE_UMEM: us = t.umem_us, page_ns = t.pin_ns; break;
    case Opcode::DESTROY_UMEM: us = t.umem_us, page_ns = t.unpin_ns; break;
    case Opcode::CREATE_MKEY:
    case Opcode::DESTROY_MKEY: us = t.mkey_us; break;
    default: break;
    }
    double ns = pin ? double(d.pages) * page_ns : double(us) * 1000.0;
    if (t.jitter_pct && ns > 0) {
        std::uniform_real_distribution<double> u(-1.0, 1.0);
        ns *= 1.0 + u(rng_) * double(t.jitter_pct) / 100.0;
    }
    return int64_t(ns);
}

// Under mu_: when a command started at start_ns completes: its pinning on
// the host's pool (from the call, when known), its fixed time once both the
// pinning ended and it has its slot, then its translation entries, written
// on the lane free first.
int64_t CommandInterface::due_ns(const CmdDesc& d, int64_t start_ns, int64_t extra_ns) {
    const int64_t pin_from = std::min(d.called_ns.value_or(start_ns), start_ns);
    const int64_t pinned =
        std::max(start_ns, pins_.book(pin_from, latency_ns(d, true), profile_.timing.pin_cpus));
    int64_t due = pinned + latency_ns(d, false) + extra_ns;
    if (d.entries == 0 || profile_.timing.mtt_lanes == 0) return due;
    if (lane_free_ns_.size() != profile_.timing.mtt_lanes) lane_free_ns_.assign(profile_.timing.mtt_lanes, 0);
    int64_t& lane = *std::min_element(lane_free_ns_.begin(), lane_free_ns_.end());
    lane = std::max(due, lane) + int64_t(d.entries) * int64_t(profile_.timing.mtt_ns);
    return lane;
}

// Under mu_. Counts the command and stamps it; the caller handles the token.
CommandInterface::PendingPtr CommandInterface::admit(const CmdDesc& d, CmdTiming t, CmdFn fn,
                                                     bool async) {
    auto p = std::make_shared<Pending>();
    p->desc = d;
    p->timing = t;
    p->fn = std::move(fn);
    p->async = async;
    p->throttled = prm::is_throttled_opcode(d.opcode);
    p->tr.seq = ++seq_;
    p->tr.opcode = d.opcode;
    p->tr.obj_type = d.obj_type;
    p->tr.obj_id = d.obj_id;
    p->tr.async = async;
    p->tr.submit_ns = clock_.now_ns();
    ++counters_.by_opcode[d.opcode];
    return p;
}

// Under mu_: hand free slots to the head of the FIFO. With wake_fw, the
// firmware thread is not notified here but *wake_fw set: the caller notifies
// it after unlocking (woken under mu_ on this CPU, it would preempt the
// caller only to block on mu_).
void CommandInterface::grant_slots(bool* wake_fw) {
    bool granted = false;
    while (free_slots_ > 0 && !slot_queue_.empty()) {
        PendingPtr p = slot_queue_.front();
        slot_queue_.pop_front();
        --free_slots_;
        counters_.peak_slots = std::max(counters_.peak_slots, ++slots_used_);
        p->started = true;
        p->tr.start_ns = clock_.now_ns();
        // A hung command is answered by nobody: the kernel's timeout ends it.
        p->due = p->timing.hang ? p->tr.start_ns + int64_t(profile_.timing.cmd_timeout_ms) * 1'000'000
                                : due_ns(p->desc, p->tr.start_ns, p->timing.extra_ns);
        running_.push_back(p);
        granted = true;
        if (!p->async && p->due <= p->tr.start_ns) {
            // Zero latency: done at once; its caller may already sleep.
            signal(*p);
            futex_wake(callers_word_, UINT_MAX, p->wake_bit);
        } else if (p->due < fw_sleep_due_) {
            // Only a due time earlier than the firmware thread's sleep target
            // needs it awake: a wake-up per command costs a context switch each.
            if (wake_fw) *wake_fw = true;
            else fw_cv_.notify_one();
        }
    }
    if (granted) cv_.notify_all();  // observers (wait_running)
}

// Under mu_: p's caller is told its time came (woken by its bit, by whoever
// calls this); it counts in callers_woken_ until it runs.
void CommandInterface::signal(Pending& p) {
    p.signalled = true;
    callers_woken_.fetch_add(1, std::memory_order_relaxed);
    callers_word_.fetch_add(1, std::memory_order_relaxed);
}

// Under mu_: a bit of its own for a blocking caller's sleep while one is
// free (the 32 bits cover the command slots of a ConnectX); else every bit,
// and any wake-up makes it look again.
uint32_t CommandInterface::take_caller_bit() {
    if (caller_bits_free_ == 0) return kFutexAnyBit;
    const uint32_t bit = caller_bits_free_ & (~caller_bits_free_ + 1);  // the lowest
    caller_bits_free_ &= ~bit;
    return bit;
}

void CommandInterface::give_caller_bit(uint32_t bit) {
    if (bit != kFutexAnyBit) caller_bits_free_ |= bit;
}


// Never before the due time: the modelled latency is a lower bound (the
// firmware thread's wait aims to be awake at it, never to count early).
bool CommandInterface::reached(const Pending& p) const {
    return p.started && (p.forced || clock_.now_ns() >= p.due);
}

// Under mu_: release what the command held, record it. wake_fw: as grant_slots.
void CommandInterface::finish(Pending& p, const CmdOutcome& o, bool* wake_fw) {
    if (p.started) {
        ++free_slots_;
        --slots_used_;
        std::erase_if(running_, [&p](const PendingPtr& q) { return q.get() == &p; });
    } else {
        std::erase_if(slot_queue_, [&p](const PendingPtr& q) { return q.get() == &p; });
    }
    if (p.throttled) {
        ++throttle_free_;
        --inflight_;
        throttle_cv_.notify_one();
    }
    ++counters_.completed;
    p.tr.end_ns = clock_.now_ns();
    p.tr.status = o.status;
    p.tr.syndrome = o.syndrome;
    p.tr.err = o.err;
    trace_.record(p.tr);
    grant_slots(wake_fw);
    cv_.notify_all();
}

CmdOutcome CommandInterface::run_blocking(const CmdDesc& d, CmdTiming t, CmdFn fn) {
    std::unique_lock lk(mu_);
    if (closing_) return {ENXIO, 0, 0};
    PendingPtr p = admit(d, t, std::move(fn), false);
    if (p->throttled) {
        // mlx5_core: down(&throttle_sem) for blocking commands.
        throttle_cv_.wait(lk, [&] { return throttle_free_ > 0 || closing_; });
        if (closing_) {
            p->throttled = false;
            CmdOutcome o{ENXIO, 0, 0};
            finish(*p, o, nullptr);
            return o;
        }
        --throttle_free_;
        counters_.peak_inflight = std::max(counters_.peak_inflight, ++inflight_);
    }
    p->wake_bit = take_caller_bit();
    slot_queue_.push_back(p);
    bool wake_fw = false;
    grant_slots(&wake_fw);
    notify_fw_unlocked(lk, wake_fw);
    while (!closing_ && !reached(*p)) futex_wait_unlocked(lk, callers_word_, p->wake_bit);
    if (p->signalled) callers_woken_.fetch_sub(1, std::memory_order_relaxed);
    // Hung: the kernel gave up on it (ETIMEDOUT); not reached: the device closed.
    bool timed_out = p->timing.hang && reached(*p);
    bool aborted = !reached(*p) || timed_out;
    lk.unlock();
    CmdOutcome o = p->fn(aborted);
    if (aborted) o.err = timed_out ? ETIMEDOUT : ENXIO;
    lk.lock();
    if (!aborted && p->timing.answer_late_ns > 0) {
        // Executed; the caller hears of it later (its slot held meanwhile).
        const int64_t answer_ns = p->due + p->timing.answer_late_ns;
        while (!closing_ && clock_.now_ns() < answer_ns)
            clock_.wait_until(lk, cv_, answer_ns, [] { return false; });
    }
    wake_fw = false;
    finish(*p, o, &wake_fw);
    give_caller_bit(p->wake_bit);
    notify_fw_unlocked(lk, wake_fw);
    return o;
}

// Under mu_ (held again on return): wakes the firmware thread when asked,
// after the unlock (woken under mu_ on this CPU, it would preempt the caller
// only to block on mu_).
void CommandInterface::notify_fw_unlocked(std::unique_lock<std::mutex>& lk, bool wake_fw) {
    if (!wake_fw) return;
    lk.unlock();
    fw_cv_.notify_one();  // it waits on fw_cv_ under mu_, so this is not lost
    lk.lock();
}

int CommandInterface::submit_async(const CmdDesc& d, CmdTiming t, CmdFn fn) {
    std::unique_lock lk(mu_);
    if (closing_) return ENXIO;
    if (prm::is_throttled_opcode(d.opcode) && throttle_free_ == 0) {
        ++counters_.busy_rejections;
        ++counters_.by_opcode[d.opcode];
        return EBUSY;  // mlx5_cmd_exec_cb: down_trylock failed
    }
    PendingPtr p = admit(d, t, std::move(fn), true);
    if (p->throttled) {
        --throttle_free_;
        counters_.peak_inflight = std::max(counters_.peak_inflight, ++inflight_);
    }
    async_.push_back(p);
    slot_queue_.push_back(p);
    bool wake_fw = false;
    grant_slots(&wake_fw);
    lk.unlock();
    if (wake_fw) fw_cv_.notify_one();  // it waits on fw_cv_ under mu_, so this is not lost
    return 0;
}

void CommandInterface::record_rejected(const CmdDesc& d, int err) {
    std::lock_guard lk(mu_);
    ++counters_.by_opcode[d.opcode];
    if (err == EBUSY) ++counters_.busy_rejections;
}

// Under mu_: an async command whose time has come (any, when closing), or nullptr.
CommandInterface::PendingPtr CommandInterface::next_due_async() {
    for (auto it = async_.begin(); it != async_.end(); ++it) {
        if (closing_ || reached(**it)) {
            PendingPtr p = *it;
            async_.erase(it);
            return p;
        }
    }
    return nullptr;
}

// Under mu_: signals the blocking commands whose time has come, not yet
// told; their bits go to `bits` (woken after the unlock). Returns the
// earliest due time of the running commands still to come.
int64_t CommandInterface::collect_due_callers(uint32_t& bits) {
    int64_t next_due = kNever;
    for (const PendingPtr& p : running_) {
        if (p->signalled) continue;
        if (!p->async && reached(*p)) {
            signal(*p);
            bits |= p->wake_bit;
            continue;
        }
        next_due = std::min(next_due, p->due);
    }
    return next_due;
}

// The device's one timed sleeper: at each due time it completes the async
// commands due and signals the callers of the blocking ones.
void CommandInterface::fw_loop() {
    std::unique_lock lk(mu_);
    fw_sleep_due_ = kFwAwake;
    // Every command due is completed before the readers of their completions
    // and the blocking callers are woken (all callers with one call): a
    // thread woken per command would, on this CPU, preempt this one between
    // two of them.
    std::optional<FdQueue::DeferSignals> round;
    while (true) {
        if (PendingPtr p = next_due_async()) {
            if (!round) round.emplace();
            bool aborted = !reached(*p) || p->timing.hang;  // closed, or the kernel's timeout
            lk.unlock();
            CmdOutcome o = p->fn(aborted);
            lk.lock();
            finish(*p, o, nullptr);  // this thread is awake: nothing to wake
            continue;
        }
        uint32_t caller_bits = 0;
        const int64_t next_due = collect_due_callers(caller_bits);
        if (round || caller_bits) {
            lk.unlock();
            round.reset();  // wakes the readers
            futex_wake(callers_word_, UINT_MAX, caller_bits);
            lk.lock();
            continue;  // more may have come due meanwhile
        }
        if (closing_) break;
        fw_sleep_due_ = next_due;
        // Woken and yet to run: blocking callers, and readers of completions.
        clock_.wait_until(lk, fw_cv_, next_due, [this] {
            return callers_woken_.load(std::memory_order_relaxed) > 0 ||
                   FdQueue::unread_records() > 0;
        });
        fw_sleep_due_ = kFwAwake;
    }
}

void CommandInterface::shutdown() {
    std::lock_guard once(shutdown_mu_);
    {
        std::lock_guard lk(mu_);
        closing_ = true;
        wake_all_locked();
    }
    if (fw_.joinable()) fw_.join();
    // Blocking callers leave on their own (closing_); wait for them so the
    // interface outlives every caller inside it.
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return slots_used_ == 0 && inflight_ == 0 && slot_queue_.empty(); });
}

size_t CommandInterface::complete_next(size_t n) {
    std::lock_guard lk(mu_);
    std::vector<Pending*> v;
    for (const PendingPtr& p : running_)
        if (!p->timing.hang && !reached(*p)) v.push_back(p.get());
    std::sort(v.begin(), v.end(), [](const Pending* a, const Pending* b) {
        return a->due != b->due ? a->due < b->due : a->tr.seq < b->tr.seq;
    });
    size_t count = std::min(n, v.size());
    uint32_t bits = 0;
    for (size_t i = 0; i < count; ++i) {
        v[i]->forced = true;
        if (!v[i]->async) bits |= v[i]->wake_bit;
    }
    if (bits) {
        callers_word_.fetch_add(1, std::memory_order_relaxed);
        futex_wake(callers_word_, UINT_MAX, bits);
    }
    if (count) fw_cv_.notify_one();
    return count;
}

bool CommandInterface::wait_running(size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, timeout, [&] { return slots_used_ >= n; });
}

bool CommandInterface::wait_completed(uint64_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, timeout, [&] { return counters_.completed >= n; });
}

CmdCounters CommandInterface::counters() const {
    std::lock_guard lk(mu_);
    return counters_;
}

void CommandInterface::wake() {
    std::lock_guard lk(mu_);
    wake_all_locked();
}

// Under mu_: every waiter re-checks (close, manual clock moved).
void CommandInterface::wake_all_locked() {
    callers_word_.fetch_add(1, std::memory_order_relaxed);
    futex_wake(callers_word_, UINT_MAX);  // blocking callers, running or queued
    throttle_cv_.notify_all();
    fw_cv_.notify_all();
    cv_.notify_all();
}

uint32_t CommandInterface::inflight() const {
    std::lock_guard lk(mu_);
    return inflight_;
}

}  // namespace mlx5async::emu
