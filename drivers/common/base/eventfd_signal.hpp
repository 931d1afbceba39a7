// The readiness of an eventfd that tells a reader "the state under your lock
// has something for you", written after the writer releases that lock: a
// reader woken under the lock would, on the writer's CPU, preempt it only to
// block on the lock (two context switches more per wake-up).
//
// Under the lock: arm_locked() when the state gains something (true: the
// caller writes, with write(), after unlocking), disarm_locked() when the
// reader has taken everything. A write can then land after the disarm (the
// reader took the state before the writer wrote): the fd is readable with
// nothing behind it. It is cleared by the next disarm, or by
// clear_stray_locked() where a reader finds the state empty: one spurious
// wake-up at most, never a lost one, and the fd never stays readable for
// nothing (a level-triggered epoll loop would spin on it).
#pragma once

#include <atomic>

#include "unique_fd.hpp"

namespace mlx5async {

class EventfdSignal {
public:
    // Under the lock. True: the fd is not readable yet, the caller must
    // write() once it has unlocked.
    bool arm_locked() noexcept;
    // After the unlock, once per true arm_locked().
    void write(const UniqueFd& fd) noexcept;
    // Under the lock, the state taken: the fd stops being readable. Works on
    // a blocking fd (it never reads a zero counter).
    void disarm_locked(const UniqueFd& fd) noexcept;
    // Under the lock, the state found empty: clears a write that landed
    // after the last disarm. Leaves an armed fd alone.
    void clear_stray_locked(const UniqueFd& fd) noexcept;

    bool armed() const noexcept { return armed_; }  // under the lock
    bool writes_in_flight() const noexcept {
        return in_flight_.load(std::memory_order_acquire) > 0;
    }

private:
    bool armed_ = false;
    bool stray_ = false;              // a write may have landed after the last disarm
    std::atomic<int> in_flight_{0};  // armed, not yet written
};

}  // namespace mlx5async
