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
    virtual bool manual() const = 0;
    // How much earlier than its due time a command may be taken as done
    // (steady clock: the average wake-up delay of timed waits).
    virtual int64_t compensation_ns() const { return 0; }
    // Blocks on cv until notified or, on a steady clock, until due_ns.
    // Callers re-check their predicate (spurious returns allowed).
    virtual void wait_until(std::unique_lock<std::mutex>& lk, std::condition_variable& cv,
                            int64_t due_ns) = 0;
};

// Real time. Timed waits aim `lead` before the due time, the lead being an
// average of how late such waits wake up (host scheduling, 50-100 us here),
// so a command completes at about its modelled due time, not that much later.
class SteadyClock final : public Clock {
public:
    int64_t now_ns() const override;
    bool manual() const override { return false; }
    int64_t compensation_ns() const override { return lead_.load(std::memory_order_relaxed); }
    void wait_until(std::unique_lock<std::mutex>& lk, std::condition_variable& cv,
                    int64_t due_ns) override;

private:
    std::atomic<int64_t> lead_{0};
};

class ManualClock final : public Clock {
public:
    int64_t now_ns() const override { return now_.load(std::memory_order_acquire); }
    bool manual() const override { return true; }
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
