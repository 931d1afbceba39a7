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

void Throttle::release_quiet() noexcept {
    unsigned n = in_flight_.load();
    while (n > 0 && !in_flight_.compare_exchange_weak(n, n - 1)) {
    }
}

void Throttle::release() noexcept {
    release_quiet();
    wake_waiters(1);
}

void Throttle::wake_waiters(unsigned n) noexcept {
    unsigned w = waiters_.load();
    if (w == 0 || n == 0) return;
    // A waiter between its check and its sleep holds mu_, so passing
    // through it first means none misses this. The notify comes after
    // the unlock: a waiter woken under mu_ on this CPU would preempt us
    // only to block on it (two context switches more per slot).
    { std::lock_guard lk(mu_); }
    if (n >= w) {
        freed_.notify_all();
        return;
    }
    for (unsigned i = 0; i < n; ++i) freed_.notify_one();
}

}  // namespace mlx5async::devx
