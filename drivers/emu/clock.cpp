#include "clock.hpp"

#include <chrono>

namespace mlx5async::emu {

int64_t SteadyClock::now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

void SteadyClock::wait_until(std::unique_lock<std::mutex>& lk, std::condition_variable& cv,
                             int64_t due_ns) {
    if (due_ns == kNever) {
        cv.wait(lk);
        return;
    }
    std::chrono::steady_clock::time_point tp{std::chrono::nanoseconds(due_ns)};
    cv.wait_until(lk, tp);
}

void ManualClock::advance_to(int64_t t) {
    int64_t cur = now_.load(std::memory_order_acquire);
    while (t > cur && !now_.compare_exchange_weak(cur, t, std::memory_order_acq_rel)) {
    }
    if (listener_) listener_();
}

}  // namespace mlx5async::emu
