// General-object headers, the generic command header and check_out.
// Offsets as Linux mlx5_ifc.h general_obj_in/out_cmd_hdr and mbox_in/out
// (DPDK mlx5_prm.h has the same opcode/obj_type/obj_id/status/syndrome).
#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "common/prm/general_obj.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"

namespace mlx5async::prm {
namespace {

using Bytes = std::vector<std::byte>;

void put(Bytes& b, size_t at, std::initializer_list<uint8_t> v) {
    for (uint8_t x : v) b[at++] = std::byte{x};
}

TEST(GeneralObjGolden, DestroyImage) {
    Bytes in(kGeneralObjInHdrBytes, std::byte{0xee});
    encode_destroy_general_obj(uint16_t(ObjType::VIRTIO_NET_Q), 0xa1b2c3d4, in);
    Bytes want(kGeneralObjInHdrBytes, std::byte{0});
    put(want, 0, {0x0a, 0x03, 0, 0, 0, 0, 0x00, 0x0d, 0xa1, 0xb2, 0xc3, 0xd4});
    EXPECT_EQ(in, want);
}

TEST(GeneralObjGolden, InHeaderEveryField) {
    GeneralObjIn h{0xa00, 0x1234, 0x5678, 0x001c, 0xdeadbeef, 0x1f};
    Bytes in(kGeneralObjInHdrBytes);
    write_general_obj_in(h, in);
    Bytes want(kGeneralObjInHdrBytes, std::byte{0});
    put(want, 0, {0x0a, 0x00, 0x12, 0x34, 0x56, 0x78, 0x00, 0x1c, 0xde, 0xad, 0xbe, 0xef});
    put(want, 12, {0x1f});  // log_obj_range at 0x63..0x67
    EXPECT_EQ(in, want);
    auto back = read_general_obj_in(in);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->opcode, h.opcode);
    EXPECT_EQ(back->uid, h.uid);
    EXPECT_EQ(back->vhca_tunnel_id, h.vhca_tunnel_id);
    EXPECT_EQ(back->obj_type, h.obj_type);
    EXPECT_EQ(back->obj_id, h.obj_id);
    EXPECT_EQ(back->log_obj_range, h.log_obj_range);
}

TEST(GeneralObjGolden, OutHeaderRoundTrip) {
    Bytes out(kGeneralObjOutHdrBytes, std::byte{0xee});
    write_general_obj_out({0x9, 0x1234, 0x42}, out);
    Bytes want(kGeneralObjOutHdrBytes, std::byte{0});
    put(want, 0, {0x09, 0, 0, 0, 0, 0, 0x12, 0x34, 0, 0, 0, 0x42});
    EXPECT_EQ(out, want);
    auto back = read_general_obj_out(out);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->status, 0x9);
    EXPECT_EQ(back->syndrome, 0x1234u);
    EXPECT_EQ(back->obj_id, 0x42u);
}

TEST(GeneralObjHeader, OpcodeAndOpModOfAnyCommand) {
    Bytes in(8, std::byte{0});
    put(in, 0, {0x01, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x27});
    EXPECT_EQ(*read_opcode(in), 0x100);
    EXPECT_EQ(*read_op_mod(in), 0x27);
    EXPECT_EQ(read_opcode(Bytes(3)).error().code, Errc::ShortBuffer);
    EXPECT_EQ(read_op_mod(Bytes(7)).error().code, Errc::ShortBuffer);
}

TEST(GeneralObjCheckOut, StatusOkPassesOtherwiseFirmwareError) {
    Bytes out(kGeneralObjOutHdrBytes, std::byte{0});
    EXPECT_TRUE(check_out(out, 0xa01, 5, 2));
    put(out, 0, {0x06, 0, 0, 0, 0x00, 0x00, 0x00, 0x99});
    auto r = check_out(out, 0xa01, 5, 2);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::Firmware);
    EXPECT_EQ(r.error().fw_status, uint8_t(Status::RES_BUSY));
    EXPECT_EQ(r.error().sys_errno, EBUSY);
    EXPECT_EQ(r.error().syndrome, 0x99u);
    EXPECT_EQ(r.error().obj_id, 5u);
    EXPECT_EQ(r.error().queue, 2);
    auto s = check_out(Bytes(7), 0xa01, 5, 2);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, Errc::ShortBuffer);
    EXPECT_EQ(s.error().opcode, 0xa01);
}

TEST(GeneralObjDecode, ShortHeadersFail) {
    EXPECT_EQ(read_general_obj_in(Bytes(15)).error().code, Errc::ShortBuffer);
    auto r = read_general_obj_out(Bytes(15));
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().what.find("general_obj_out_cmd_hdr: buffer of 15 bytes, need 16"),
              std::string::npos);
}

TEST(GeneralObjWriteDeathTest, ShortOutputBufferAborts) {
    Bytes in(8);
    EXPECT_DEATH(encode_destroy_general_obj(0xd, 1, in), "general_obj_in_cmd_hdr: buffer of 8");
}

TEST(OpcodeNames, KnownAndUnknown) {
    EXPECT_STREQ(opcode_name(0xa01), "MODIFY_GENERAL_OBJECT");
    EXPECT_STREQ(opcode_name(0x100), "QUERY_HCA_CAP");
    EXPECT_STREQ(opcode_name(0xa0a), "DESTROY_UMEM");
    EXPECT_STREQ(opcode_name(0x1), "UNKNOWN_OPCODE");
    EXPECT_STREQ(obj_type_name(0x1c), "VIRTIO_Q_COUNTERS");
    EXPECT_STREQ(obj_type_name(0x2), "UNKNOWN_OBJ_TYPE");
}

}  // namespace
}  // namespace mlx5async::prm
