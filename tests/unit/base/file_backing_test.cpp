#include "common/base/file_backing.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "common/base/unique_fd.hpp"

namespace mlx5async {
namespace {

UniqueFd memfd_of(off_t bytes) {
    UniqueFd fd(memfd_create("file-backing-test", MFD_CLOEXEC));
    EXPECT_TRUE(fd.valid());
    EXPECT_EQ(ftruncate(fd.get(), bytes), 0);
    return fd;
}

TEST(FileBacking, ARangeWithinTheFileIsAccepted) {
    UniqueFd fd = memfd_of(1 << 20);
    EXPECT_TRUE(check_file_covers(fd.get(), 0, 1 << 20));
    EXPECT_TRUE(check_file_covers(fd.get(), 4096, (1 << 20) - 4096));
}

TEST(FileBacking, AFileShorterThanItsRegionIsRefusedWithBothSizes) {
    UniqueFd fd = memfd_of(4095);  // what the vhost-user fuzzer's seed 1 sends
    auto r = check_file_covers(fd.get(), 0, 1 << 20);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::InvalidArgument);
    EXPECT_NE(r.error().what.find("4095 bytes"), std::string::npos) << r.error().what;
    EXPECT_NE(r.error().what.find("1048576"), std::string::npos) << r.error().what;
}

TEST(FileBacking, AnOffsetThatPushesTheRangePastTheEndIsRefused) {
    UniqueFd fd = memfd_of(1 << 20);
    EXPECT_FALSE(check_file_covers(fd.get(), 4096, 1 << 20));
}

TEST(FileBacking, ARangeThatWrapsAroundIsRefused) {
    UniqueFd fd = memfd_of(4096);
    auto r = check_file_covers(fd.get(), UINT64_MAX - 10, 4096);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().what.find("overflows"), std::string::npos) << r.error().what;
}

TEST(FileBacking, AFileThatIsNotRegularIsLeftToMmap) {
    int p[2];
    ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
    UniqueFd r(p[0]), w(p[1]);
    EXPECT_TRUE(check_file_covers(r.get(), 0, 1 << 20));
}

TEST(FileBacking, AClosedFdIsASystemError) {
    auto r = check_file_covers(-1, 0, 4096);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::System);
    EXPECT_EQ(r.error().sys_errno, EBADF);
}

}  // namespace
}  // namespace mlx5async
