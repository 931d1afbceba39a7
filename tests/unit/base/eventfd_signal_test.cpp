#include "common/base/eventfd_signal.hpp"

#include <gtest/gtest.h>
#include <poll.h>

namespace mlx5async {
namespace {

bool readable(const UniqueFd& fd) {
    pollfd p{fd.get(), POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
}

// A blocking eventfd, as the emulator's completion fds: a read of a zero
// counter would hang the test, so every path here must avoid one.
UniqueFd blocking_eventfd() {
    auto fd = UniqueFd::eventfd(0, 0);
    EXPECT_TRUE(fd.has_value());
    return std::move(*fd);
}

TEST(EventfdSignal, ArmOnceWriteAfterUnlockDisarm) {
    UniqueFd fd = blocking_eventfd();
    EventfdSignal s;
    EXPECT_TRUE(s.arm_locked());
    EXPECT_FALSE(s.arm_locked());  // one pending wake-up covers both
    EXPECT_TRUE(s.writes_in_flight());
    EXPECT_FALSE(readable(fd));  // not written yet
    s.write(fd);
    EXPECT_FALSE(s.writes_in_flight());
    EXPECT_TRUE(readable(fd));
    s.disarm_locked(fd);
    EXPECT_FALSE(readable(fd));
    EXPECT_FALSE(s.armed());
}

// The reader takes the state between the writer's unlock and its write: the
// disarm finds nothing to read, the write lands on an empty state, and the
// reader's next look at the empty state clears it.
TEST(EventfdSignal, AWriteAfterTheDisarmIsClearedWhenTheStateIsFoundEmpty) {
    UniqueFd fd = blocking_eventfd();
    EventfdSignal s;
    ASSERT_TRUE(s.arm_locked());
    s.disarm_locked(fd);  // before the write: must not block on the zero counter
    EXPECT_FALSE(readable(fd));
    s.write(fd);
    EXPECT_TRUE(readable(fd));  // readable for nothing
    s.clear_stray_locked(fd);
    EXPECT_FALSE(readable(fd));
    s.clear_stray_locked(fd);  // nothing left to clear: no read of a zero counter
    EXPECT_FALSE(readable(fd));
}

// A new wake-up armed after the stray write is not taken for the stray.
TEST(EventfdSignal, ClearingAStrayLeavesANewWakeUpArmed) {
    UniqueFd fd = blocking_eventfd();
    EventfdSignal s;
    ASSERT_TRUE(s.arm_locked());
    s.disarm_locked(fd);
    s.write(fd);                // the stray
    ASSERT_TRUE(s.arm_locked());  // new state for the reader
    s.clear_stray_locked(fd);   // armed: left alone
    s.write(fd);
    EXPECT_TRUE(readable(fd));
    s.disarm_locked(fd);  // takes both writes
    EXPECT_FALSE(readable(fd));
}

}  // namespace
}  // namespace mlx5async
