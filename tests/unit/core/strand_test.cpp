// The device's strand (core/strand.hpp): jobs in arrival order, never two
// at once; a waiter gets its job's result; stop drops what did not start.
#include "vdpa/mlx5async/core/strand.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <vector>

namespace mlx5async::core {
namespace {

using namespace std::chrono_literals;

// A job that blocks until open() is called: what runs while others queue.
struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool open_ = false, entered = false;
    void pass() {
        std::unique_lock lk(mu);
        entered = true;
        cv.notify_all();
        cv.wait(lk, [&] { return open_; });
    }
    void wait_entered() {
        std::unique_lock lk(mu);
        cv.wait(lk, [&] { return entered; });
    }
    void open() {
        std::lock_guard lk(mu);
        open_ = true;
        cv.notify_all();
    }
};

TEST(Strand, JobsRunInArrivalOrderOneAtATime) {
    Strand s("test-strand");
    std::vector<int> order;
    std::atomic<int> running{0}, peak{0};
    std::vector<Strand::Pending<Result<int>>> waits;
    for (int i = 0; i < 100; i++)
        waits.push_back(s.post([&, i]() -> Result<int> {
            peak = std::max(peak.load(), ++running);
            order.push_back(i);  // only the strand touches it
            --running;
            return i * 2;
        }));
    for (int i = 0; i < 100; i++) {
        auto r = waits[i].wait();
        ASSERT_TRUE(r);
        EXPECT_EQ(*r, i * 2);
    }
    EXPECT_EQ(peak.load(), 1);
    for (int i = 0; i < 100; i++) EXPECT_EQ(order[i], i);
}

TEST(Strand, StopDropsQueuedJobsAndFinishesTheRunningOne) {
    auto s = std::make_unique<Strand>("test-strand");
    Gate g;
    bool first_done = false, second_ran = false;
    auto first = s->post([&]() -> Result<void> {
        g.pass();
        first_done = true;
        return {};
    });
    auto second = s->post([&]() -> Result<void> {
        second_ran = true;
        return {};
    });
    g.wait_entered();
    EXPECT_EQ(s->backlog(), 2u);
    std::thread stopper([&] { s->stop(); });
    // The queued one is cancelled at once, before the running one ends.
    auto r2 = second.wait();
    ASSERT_FALSE(r2);
    EXPECT_EQ(r2.error().code, Errc::Cancelled);
    g.open();
    stopper.join();
    EXPECT_TRUE(first.wait());
    EXPECT_TRUE(first_done);
    EXPECT_FALSE(second_ran);
    auto late = s->post([]() -> Result<void> { return {}; }).wait();  // after stop: dropped
    EXPECT_EQ(late.error().code, Errc::Cancelled);
}

TEST(Strand, AnAbandonedWaitDropsAJobNotStarted) {
    Strand s("test-strand");
    Gate g;
    bool ran = false;
    auto busy = s.post([&]() -> Result<void> {
        g.pass();
        return {};
    });
    g.wait_entered();
    auto q = s.post([&]() -> Result<void> {
        ran = true;
        return {};
    });
    EXPECT_FALSE(q.wait_for(1ms));  // the strand is busy: given up
    g.open();
    EXPECT_TRUE(busy.wait());
    auto after = s.post([&]() -> Result<bool> { return ran; }).wait();  // behind where q was
    ASSERT_TRUE(after);
    EXPECT_FALSE(*after);
}

TEST(Strand, RunOnTheStrandItselfDoesNotWaitForItself) {
    Strand s("test-strand");
    auto r = s.post([&]() -> Result<int> {
        EXPECT_TRUE(s.on_strand());
        return s.run([]() -> Result<int> { return 7; });
    }).wait();
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, 7);
    EXPECT_FALSE(s.on_strand());
}

}  // namespace
}  // namespace mlx5async::core
