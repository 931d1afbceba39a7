#include "clock.hpp"

#include <sched.h>
#include <sys/prctl.h>

#include <algorithm>
#include <chrono>

#include "common/base/steady_clock.hpp"

namespace mlx5async::emu {

namespace {


WakeupDelay& host_wakeup_delay() {
    static WakeupDelay d;
    return d;
}

// The one thread of the process that spins towards its due time now.
std::atomic<bool> spinning{false};

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

std::chrono::steady_clock::time_point to_tp(int64_t ns) {
    return std::chrono::steady_clock::time_point{std::chrono::nanoseconds(ns)};
}

}  // namespace

void WakeupDelay::add(int64_t late_ns) noexcept {
    late_ns = std::clamp<int64_t>(late_ns, 0, kMaxAheadNs);
    // Racy read-modify-write from several threads: an estimate either way.
    int64_t mean = mean_ns_.load(std::memory_order_relaxed);
    int64_t dev = dev_ns_.load(std::memory_order_relaxed);
    int64_t err = late_ns - mean;
    mean_ns_.store(mean + err / 8, std::memory_order_relaxed);
    dev_ns_.store(dev + ((err < 0 ? -err : err) - dev) / 4, std::memory_order_relaxed);
}

int64_t WakeupDelay::aim_ahead_ns() const noexcept {
    int64_t a = mean_ns_.load(std::memory_order_relaxed) + dev_ns_.load(std::memory_order_relaxed);
    return std::min(a, kMaxAheadNs);
}

int64_t SteadyClock::now_ns() const { return steady_now_ns(); }

void SteadyClock::wait_until(std::unique_lock<std::mutex>& lk, std::condition_variable& cv,
                             int64_t due_ns, const std::function<bool()>& woken_waiting) {
    if (due_ns == kNever) {
        cv.wait(lk);
        return;
    }
    // Timed waits model command latency: the default 50 us timer slack
    // would add to every command, so waiting threads use the minimum.
    thread_local bool slack_set = false;
    if (!slack_set) {
        prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
        slack_set = true;
    }
    WakeupDelay& delay = host_wakeup_delay();
    const int64_t aim = due_ns - delay.aim_ahead_ns();
    if (steady_now_ns() < aim) {
        // Notified (state changed): the caller re-checks and calls again.
        if (cv.wait_until(lk, to_tp(aim)) == std::cv_status::no_timeout) return;
        delay.add(steady_now_ns() - aim);
    }
    if (steady_now_ns() >= due_ns) return;
    if (spinning.exchange(true, std::memory_order_acquire)) {
        cv.wait_until(lk, to_tp(due_ns));
        return;
    }
    // Unlocked, so the commands' callers go on; a notification meanwhile
    // waits for the caller's re-check at most until due_ns.
    lk.unlock();
    // Threads this one woke may share its CPU: a spin would hold them off
    // until the due time, so it yields to them until they have run.
    while (steady_now_ns() < due_ns) {
        if (woken_waiting && woken_waiting()) sched_yield();
        else cpu_relax();
    }
    spinning.store(false, std::memory_order_release);
    lk.lock();
}

void ManualClock::advance_to(int64_t t) {
    int64_t cur = now_.load(std::memory_order_acquire);
    while (t > cur && !now_.compare_exchange_weak(cur, t, std::memory_order_acq_rel)) {
    }
    if (listener_) listener_();
}

}  // namespace mlx5async::emu
