#include "common/base/unique_fd.hpp"

#include <fcntl.h>
#include <sys/eventfd.h>

#include <gtest/gtest.h>

namespace mlx5async {
namespace {

bool fd_open(int fd) { return fcntl(fd, F_GETFD) != -1; }

TEST(UniqueFd, ClosesOnDestructionAndMove) {
    int raw;
    {
        auto fd = UniqueFd::eventfd(0, EFD_NONBLOCK);
        ASSERT_TRUE(fd);
        raw = fd->get();
        UniqueFd moved = std::move(*fd);
        EXPECT_FALSE(fd->valid());
        EXPECT_TRUE(fd_open(raw));
    }
    EXPECT_FALSE(fd_open(raw));
}

TEST(UniqueFd, EventfdDrainIsEmptyWhenNothingSignalled) {
    auto fd = UniqueFd::eventfd(0, EFD_NONBLOCK);
    ASSERT_TRUE(fd);
    EXPECT_FALSE(fd->drain().has_value());
    fd->signal(2);
    fd->signal(3);
    EXPECT_EQ(fd->drain().value_or(0), 5u);
    EXPECT_FALSE(fd->drain().has_value());
}

}  // namespace
}  // namespace mlx5async
