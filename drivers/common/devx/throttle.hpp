// Counting limit on outstanding firmware commands (mlx5_core admits about
// ceil(max_reg_cmds/2) general-object commands per function: 16 with 32
// slots). try_acquire() never blocks (the async path: a full throttle means
// "wait for the next completion"); acquire() blocks (the blocking baselines,
// like the kernel's semaphore for blocking commands). Records its high-water
// mark so tests can assert "never more than max_inflight".
#pragma once

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

    unsigned limit() const noexcept { return limit_; }
    unsigned in_flight() const noexcept;
    unsigned peak() const noexcept;
    // Restarts the high-water mark from the current in-flight count.
    void reset_peak() noexcept;

private:
    const unsigned limit_;
    mutable std::mutex mu_;  // protects in_flight_, peak_
    std::condition_variable freed_;
    unsigned in_flight_ = 0;
    unsigned peak_ = 0;
};

}  // namespace mlx5async::devx
