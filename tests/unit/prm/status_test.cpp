// Status names, errno mapping (Linux mlx5_core cmd_status_to_err) and
// error descriptions.
#include <gtest/gtest.h>

#include <cerrno>
#include <set>
#include <string>

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

TEST(Status, DescribeOtherErrorsAndUnknownValues) {
    Error fw = firmware_error(0x77, 1, 0x1, 0, -1, "ctx");
    EXPECT_EQ(fw.sys_errno, EIO);
    EXPECT_EQ(describe(fw), "UNKNOWN_OPCODE: UNKNOWN_STATUS (0x77) syndrome 0x1 (ctx)");
    Error sb = Error::make(Errc::ShortBuffer, "virtio_net_q_object: buffer of 1 bytes, need 192");
    sb.opcode = uint16_t(Opcode::QUERY_GENERAL_OBJECT);
    sb.queue = 4;
    EXPECT_EQ(describe(sb),
              "short buffer: QUERY_GENERAL_OBJECT queue 4: virtio_net_q_object: buffer of 1 bytes, "
              "need 192");
}

TEST(Status, EveryEnumeratorHasItsOwnName) {
    const Status all[] = {Status::OK, Status::INT_ERR, Status::BAD_OP_ERR,
                          Status::BAD_PARAM_ERR, Status::BAD_SYS_STATE_ERR, Status::BAD_RES_ERR,
                          Status::RES_BUSY, Status::NOT_READY, Status::LIM_ERR,
                          Status::BAD_RES_STATE_ERR, Status::IX_ERR, Status::NO_RES_ERR,
                          Status::BAD_QP_STATE_ERR, Status::BAD_PKT_ERR,
                          Status::BAD_SIZE_OUTS_CQES_ERR, Status::BAD_INP_LEN_ERR,
                          Status::BAD_OUTP_LEN_ERR};
    std::set<std::string> names;
    for (Status s : all) names.insert(status_name(s));
    EXPECT_EQ(names.size(), std::size(all));
    EXPECT_FALSE(names.count("UNKNOWN_STATUS"));
}

}  // namespace
}  // namespace mlx5async::prm
