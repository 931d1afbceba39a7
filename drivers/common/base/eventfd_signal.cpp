#include "eventfd_signal.hpp"

#include <poll.h>

namespace mlx5async {

bool EventfdSignal::arm_locked() noexcept {
    if (armed_) return false;
    armed_ = true;
    in_flight_.fetch_add(1, std::memory_order_relaxed);
    return true;
}

void EventfdSignal::write(const UniqueFd& fd) noexcept {
    fd.signal(1);
    in_flight_.fetch_sub(1, std::memory_order_release);
}

void EventfdSignal::disarm_locked(const UniqueFd& fd) noexcept {
    if (!armed_ && !stray_) return;
    const bool pending = writes_in_flight();
    // Every arm written, no stray: the counter is > 0 and the read returns
    // at once. Otherwise the counter may be 0: poll first.
    if (pending || stray_) {
        pollfd p{fd.get(), POLLIN, 0};
        if (::poll(&p, 1, 0) == 1) (void)fd.drain();
    } else {
        (void)fd.drain();
    }
    armed_ = false;
    stray_ = pending;
}

void EventfdSignal::clear_stray_locked(const UniqueFd& fd) noexcept {
    if (!armed_ && stray_) disarm_locked(fd);
}

}  // namespace mlx5async
