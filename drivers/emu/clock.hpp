// Time source of the command interface. Steady: real time, timed waits.
// Manual: time moves only when a test steps it (Seastar manual_clock), so
// tests complete commands deterministically and assert counts, not times.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>

namespace mlx5async::emu {

inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

class Clock {
public:
    virtual ~Clock() = default;
    virtual int64_t now_ns() const = 0;
    // Blocks on cv until notified or, on a steady clock, until due_ns.
    // Callers re-check their predicate (spurious returns allowed). A steady
    // clock returns from a timed wait no earlier than due_ns unless notified.
    virtual void wait_until(std::unique_lock<std::mutex>& lk, std::condition_variable& cv,
                            int64_t due_ns) = 0;
};

// Real time. A command is done at its due time, never before (the model's
// latency is a lower bound). A sleeping thread wakes late by the host's
// wake-up delay, so a wait sleeps until kSpinAheadNs before the due time and
// then yields the CPU in a loop, checking the clock with the lock released:
// the thread is already running when the time comes. At most kMaxSpinners
// threads spin at once (the others sleep to the due time). Waits are never
// aimed early: a command never completes before its modelled latency
// (latency_test.cpp).
class SteadyClock final : public Clock {
public:
    int64_t now_ns() const override;
    void wait_until(std::unique_lock<std::mutex>& lk, std::condition_variable& cv,
                    int64_t due_ns) override;

private:
    std::atomic<int> spinners_{0};
};

class ManualClock final : public Clock {
public:
    int64_t now_ns() const override { return now_.load(std::memory_order_acquire); }
    void wait_until(std::unique_lock<std::mutex>& lk, std::condition_variable& cv,
                    int64_t) override {
        cv.wait(lk);
    }
    // The listener wakes waiters (it takes their mutex, so no wake-up is lost).
    void set_listener(std::function<void()> fn) { listener_ = std::move(fn); }
    void advance_to(int64_t t);
    void advance(int64_t delta_ns) { advance_to(now_ns() + delta_ns); }

private:
    std::atomic<int64_t> now_{0};
    std::function<void()> listener_;
};

}  // namespace mlx5async::emu
