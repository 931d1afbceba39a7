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
    // `woken_waiting`: whether threads the caller woke have yet to run; a
    // wait that would keep the CPU gives it to them first.
    virtual void wait_until(std::unique_lock<std::mutex>& lk, std::condition_variable& cv,
                            int64_t due_ns, const std::function<bool()>& woken_waiting) = 0;
};

// How late this host wakes a thread from a timed sleep, learnt from every
// timed wait of the process (a property of the host, not of one device): a
// running mean and mean deviation, each sample capped so that a preemption
// by another process does not move the aim for long.
class WakeupDelay {
public:
    // The longest spin a wait aims for, and the largest delay one sample
    // reports: a thread preempted by another process for a millisecond says
    // nothing about the next wake-up.
    static constexpr int64_t kMaxAheadNs = 100'000;

    void add(int64_t late_ns) noexcept;
    // How long before a due time a timed wait aims, to be awake at it.
    int64_t aim_ahead_ns() const noexcept;

private:
    std::atomic<int64_t> mean_ns_{0};
    std::atomic<int64_t> dev_ns_{0};
};

// Real time. A command is done at its due time, never before (the model's
// latency is a lower bound). Each device has one timed waiter, its firmware
// thread (blocking callers wait for it to signal them). A thread sleeping
// with an absolute deadline wakes late by the host's wake-up delay (longer
// on a VM whose idle vCPU halts), so the wait sleeps until
// WakeupDelay's aim before the due time, then spins for what is left: the
// spin lasts as long as the delay is uncertain, not as long as the command.
// It pauses without a system call, but yields (sched_yield) while threads
// the waiter woke have yet to run: on a CPU they share, a pause-spin would
// hold them off until the due time. One thread of the process spins at a time; another
// due meanwhile sleeps to its due time (late by the wake-up delay). Never
// returns before the due time unless notified (latency_test.cpp).
class SteadyClock final : public Clock {
public:
    int64_t now_ns() const override;
    void wait_until(std::unique_lock<std::mutex>& lk, std::condition_variable& cv,
                    int64_t due_ns, const std::function<bool()>& woken_waiting) override;
};

class ManualClock final : public Clock {
public:
    int64_t now_ns() const override { return now_.load(std::memory_order_acquire); }
    void wait_until(std::unique_lock<std::mutex>& lk, std::condition_variable& cv, int64_t,
                    const std::function<bool()>&) override {
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
