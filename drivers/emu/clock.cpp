#include "clock.hpp"

#include <sched.h>
#include <sys/prctl.h>

#include <chrono>

#include "common/base/steady_clock.hpp"

namespace mlx5async::emu {

namespace {

// How long before its due time a timed wait stops sleeping and starts
// yield-spinning: longer than the long tail of a VM's wake-up delay, short
// enough to burn little CPU.
constexpr int64_t kSpinAheadNs = 100'000;
// Spinners at once: a command in each of the 32 slots plus the firmware thread. A
// capped thread sleeps to its due time and wakes late, while a spinning one
// yields to any thread with work to do.
constexpr int kMaxSpinners = 33;

std::chrono::steady_clock::time_point to_tp(int64_t ns) {
    return std::chrono::steady_clock::time_point{std::chrono::nanoseconds(ns)};
}

}  // namespace

int64_t SteadyClock::now_ns() const { return steady_now_ns(); }

void SteadyClock::wait_until(std::unique_lock<std::mutex>& lk, std::condition_variable& cv,
                             int64_t due_ns) {
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
    constexpr int64_t ahead = kSpinAheadNs;
    if (steady_now_ns() < due_ns - ahead) {
        // Notified (state changed): the caller re-checks and calls again.
        if (cv.wait_until(lk, to_tp(due_ns - ahead)) == std::cv_status::no_timeout) return;
    }
    if (steady_now_ns() >= due_ns) return;
    if (spinners_.fetch_add(1, std::memory_order_relaxed) < kMaxSpinners) {
        // Unlocked, so the other commands' threads and the firmware thread
        // go on; a notification meanwhile is not lost for long: the caller
        // re-checks its predicate within `ahead` of now.
        lk.unlock();
        while (steady_now_ns() < due_ns) sched_yield();
        spinners_.fetch_sub(1, std::memory_order_relaxed);
        lk.lock();
        return;
    }
    spinners_.fetch_sub(1, std::memory_order_relaxed);
    cv.wait_until(lk, to_tp(due_ns));
}

void ManualClock::advance_to(int64_t t) {
    int64_t cur = now_.load(std::memory_order_acquire);
    while (t > cur && !now_.compare_exchange_weak(cur, t, std::memory_order_acq_rel)) {
    }
    if (listener_) listener_();
}

}  // namespace mlx5async::emu
