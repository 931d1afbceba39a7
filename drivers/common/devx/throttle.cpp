#include "throttle.hpp"

namespace mlx5async::devx {

void Throttle::note_peak(unsigned now) noexcept {
    unsigned p = peak_.load();
    while (now > p && !peak_.compare_exchange_weak(p, now)) {
    }
}

bool Throttle::try_acquire() noexcept {
    unsigned n = in_flight_.load();
    do {
        if (n >= limit_) return false;
    } while (!in_flight_.compare_exchange_weak(n, n + 1));
    note_peak(n + 1);
    return true;
}

void Throttle::acquire() noexcept {
    if (try_acquire()) return;
    std::unique_lock lk(mu_);
    waiters_.fetch_add(1);
    freed_.wait(lk, [&] { return try_acquire(); });
    waiters_.fetch_sub(1);
}

void Throttle::release() noexcept {
    unsigned n = in_flight_.load();
    while (n > 0 && !in_flight_.compare_exchange_weak(n, n - 1)) {
    }
    if (waiters_.load() > 0) {
        std::lock_guard lk(mu_);  // a waiter between its check and its sleep cannot miss this
        freed_.notify_one();
    }
}

}  // namespace mlx5async::devx
