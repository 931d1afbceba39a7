#include "clock.hpp"

#include <sys/prctl.h>

#include <algorithm>
#include <chrono>

namespace mlx5async::emu {

namespace {

constexpr int64_t kMaxLeadNs = 500'000;

int64_t real_now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace

int64_t SteadyClock::now_ns() const { return real_now_ns(); }

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
    int64_t lead = compensation_ns();
    int64_t target = due_ns - lead;  // in steady_clock time
    std::chrono::steady_clock::time_point tp{std::chrono::nanoseconds(target)};
    if (cv.wait_until(lk, tp) == std::cv_status::timeout) {
        int64_t late = real_now_ns() - target;  // EWMA (1/8) of the wake-up delay
        int64_t next = std::clamp<int64_t>(lead + (late - lead) / 8, 0, kMaxLeadNs);
        lead_.store(next, std::memory_order_relaxed);
    }
}

void ManualClock::advance_to(int64_t t) {
    int64_t cur = now_.load(std::memory_order_acquire);
    while (t > cur && !now_.compare_exchange_weak(cur, t, std::memory_order_acq_rel)) {
    }
    if (listener_) listener_();
}

}  // namespace mlx5async::emu
