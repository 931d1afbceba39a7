#include "throttle.hpp"

namespace mlx5async::devx {

bool Throttle::try_acquire() noexcept {
    std::lock_guard lk(mu_);
    if (in_flight_ >= limit_) return false;
    if (++in_flight_ > peak_) peak_ = in_flight_;
    return true;
}

void Throttle::acquire() noexcept {
    std::unique_lock lk(mu_);
    freed_.wait(lk, [&] { return in_flight_ < limit_; });
    if (++in_flight_ > peak_) peak_ = in_flight_;
}

void Throttle::release() noexcept {
    {
        std::lock_guard lk(mu_);
        if (in_flight_ > 0) --in_flight_;
    }
    freed_.notify_one();
}

unsigned Throttle::in_flight() const noexcept {
    std::lock_guard lk(mu_);
    return in_flight_;
}

unsigned Throttle::peak() const noexcept {
    std::lock_guard lk(mu_);
    return peak_;
}

void Throttle::reset_peak() noexcept {
    std::lock_guard lk(mu_);
    peak_ = in_flight_;
}

}  // namespace mlx5async::devx
