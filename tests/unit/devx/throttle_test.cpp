#include "common/devx/throttle.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

namespace mlx5async::devx {
namespace {

TEST(Throttle, TryAcquireStopsAtTheLimit) {
    Throttle t(3);
    EXPECT_TRUE(t.try_acquire());
    EXPECT_TRUE(t.try_acquire());
    EXPECT_TRUE(t.try_acquire());
    EXPECT_FALSE(t.try_acquire());
    EXPECT_EQ(t.in_flight(), 3u);
    t.release();
    EXPECT_TRUE(t.try_acquire());
}

TEST(Throttle, RecordsHighWaterMarkUntilReset) {
    Throttle t(8);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(t.try_acquire());
    for (int i = 0; i < 4; ++i) t.release();
    EXPECT_EQ(t.peak(), 5u);
    EXPECT_EQ(t.in_flight(), 1u);
    t.reset_peak();
    EXPECT_EQ(t.peak(), 1u);
}

TEST(Throttle, BlockingAcquireWaitsForARelease) {
    Throttle t(1);
    ASSERT_TRUE(t.try_acquire());
    auto waiter = std::async(std::launch::async, [&] { t.acquire(); });
    // The waiter cannot get the only slot until it is released.
    EXPECT_EQ(t.in_flight(), 1u);
    t.release();
    waiter.get();
    EXPECT_EQ(t.in_flight(), 1u);
    EXPECT_EQ(t.peak(), 1u);
}

// The async loop frees a round of slots quietly, then wakes that many
// blocked workers at once: each gets a slot, and the rest keep waiting.
TEST(Throttle, QuietReleasesWakeAsManyWaitersAsSlotsFreed) {
    Throttle t(3);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(t.try_acquire());
    std::atomic<int> got{0};
    std::vector<std::future<void>> waiters;
    for (int i = 0; i < 3; ++i)
        waiters.push_back(std::async(std::launch::async, [&] {
            t.acquire();
            ++got;
        }));
    t.release_quiet();
    t.release_quiet();
    EXPECT_EQ(t.in_flight(), 1u);
    t.wake_waiters(2);
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (got.load() < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    EXPECT_EQ(got.load(), 2);  // the third has no slot
    EXPECT_EQ(t.in_flight(), 3u);
    t.release();  // the usual release wakes it
    for (auto& w : waiters) w.get();
    EXPECT_EQ(got.load(), 3);
    EXPECT_EQ(t.peak(), 3u);
}

TEST(Throttle, ZeroLimitMeansOne) {
    Throttle t(0);
    EXPECT_EQ(t.limit(), 1u);
}

}  // namespace
}  // namespace mlx5async::devx
