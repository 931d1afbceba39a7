#include "common/devx/throttle.hpp"

#include <gtest/gtest.h>

#include <future>

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

TEST(Throttle, ZeroLimitMeansOne) {
    Throttle t(0);
    EXPECT_EQ(t.limit(), 1u);
}

}  // namespace
}  // namespace mlx5async::devx
