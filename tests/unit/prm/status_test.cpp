// Status names, errno mapping (Linux mlx5_core cmd_status_to_err) and
// error descriptions.
#include <gtest/gtest.h>

#include <cerrno>

#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"

namespace mlx5async::prm {
namespace {

TEST(Status, NamesMatchEnumTable) {
    EXPECT_STREQ(status_name(Status::OK), "OK");
    EXPECT_STREQ(status_name(Status::BAD_RES_STATE_ERR), "BAD_RES_STATE_ERR");
    EXPECT_STREQ(status_name(uint8_t(0x51)), "BAD_OUTP_LEN_ERR");
    EXPECT_STREQ(status_name(uint8_t(0x0b)), "UNKNOWN_STATUS");
}

TEST(Status, ErrnoFollowsMlx5Core) {
    EXPECT_EQ(status_to_errno(0x0), 0);
    EXPECT_EQ(status_to_errno(0x1), EIO);
    EXPECT_EQ(status_to_errno(0x3), EINVAL);
    EXPECT_EQ(status_to_errno(0x6), EBUSY);
    EXPECT_EQ(status_to_errno(0x7), EAGAIN);
    EXPECT_EQ(status_to_errno(0x8), ENOMEM);
    EXPECT_EQ(status_to_errno(0x9), EINVAL);
    EXPECT_EQ(status_to_errno(0xf), EAGAIN);
    EXPECT_EQ(status_to_errno(0x50), EIO);
    EXPECT_EQ(status_to_errno(0xee), EIO);
}

TEST(Status, DescribeNamesOpcodeObjectQueueStatusSyndrome) {
    Error e = firmware_error(0x9, 0x1234, uint16_t(Opcode::MODIFY_GENERAL_OBJECT), 0x12, 3);
    EXPECT_EQ(e.code, Errc::Firmware);
    EXPECT_EQ(e.sys_errno, EINVAL);
    EXPECT_EQ(describe(e),
              "MODIFY_GENERAL_OBJECT obj 0x12 queue 3: BAD_RES_STATE_ERR (0x9) syndrome 0x1234");
}

}  // namespace
}  // namespace mlx5async::prm
