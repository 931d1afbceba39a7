// Counting limit on outstanding firmware commands (mlx5_core admits about
// ceil(max_reg_cmds/2) general-object commands per function: 16 with 32
// slots). try_acquire() never blocks (the async path: a full throttle means
// "wait for the next completion"); acquire() blocks (the blocking baselines,
// like the kernel's semaphore for blocking commands). Records its high-water
// mark so tests can assert "never more than max_inflight".
//
// The count is one atomic (workers release concurrently with the loop's
// acquires); the mutex and condition variable serve blocking waiters only.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace mlx5async::devx {

class Throttle {
public:
    explicit Throttle(unsigned limit) noexcept : limit_(limit ? limit : 1) {}
    Throttle(const Throttle&) = delete;
    Throttle& operator=(const Throttle&) = delete;

    bool try_acquire() noexcept;
    void acquire() noexcept;
    void release() noexcept;
    // release() without waking a blocked acquire(): a caller that frees
    // several slots in a row (a round of completions) wakes the waiters once
    // after it with wake_waiters(n), so no woken worker preempts it on its
    // CPU between two completions.
    void release_quiet() noexcept;
    void wake_waiters(unsigned n) noexcept;

    unsigned limit() const noexcept { return limit_; }
    unsigned in_flight() const noexcept { return in_flight_.load(); }
    unsigned peak() const noexcept { return peak_.load(); }
    // Restarts the high-water mark from the current in-flight count.
    void reset_peak() noexcept { peak_.store(in_flight_.load()); }

private:
    void note_peak(unsigned now) noexcept;

    const unsigned limit_;
    std::atomic<unsigned> in_flight_{0};
    std::atomic<unsigned> peak_{0};
    std::atomic<unsigned> waiters_{0};
    std::mutex mu_;  // pairs with freed_ for blocking acquire()
    std::condition_variable freed_;
};

}  // namespace mlx5async::devx
