// Send queue commands (CREATE/MODIFY/DESTROY_SQ), the inline send WQE and
// the error CQE's syndromes. Golden bytes derived by hand from the offsets
// sq_layout.hpp lists (Linux mlx5_ifc.h sqc/wq, struct mlx5_wqe_ctrl_seg and
// struct mlx5_wqe_eth_seg): sqc at byte 32 of create_sq_in and modify_sq_in,
// its wq at byte 48 of the sqc. The attribute values are those of the
// driver's announce SQ (core/announce_sq.cpp).
#include "common/prm/sq.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/prm/event_qp.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/sq_layout.hpp"
#include "common/prm/status.hpp"

namespace mlx5async::prm {
namespace {

namespace L = layout;

std::vector<std::byte> buf(size_t n) { return std::vector<std::byte>(n); }
using Bytes = std::vector<std::pair<size_t, uint8_t>>;
Bytes nonzero(std::span<const std::byte> b) {
    Bytes v;
    for (size_t i = 0; i < b.size(); ++i)
        if (b[i] != std::byte{0}) v.emplace_back(i, uint8_t(b[i]));
    return v;
}
bool has(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

SqAttr announce_sq() {
    SqAttr s;
    s.flush_in_error_en = true;
    s.state = uint8_t(SqState::RST);
    s.ts_format = uint8_t(SqTsFormat::DEFAULT);
    s.cqn = 0x000456;
    s.tis_lst_sz = 1;
    s.tis_num_0 = 0x000abc;
    s.wq_type = kWqTypeCyclic;
    s.pd = 0x000123;
    s.uar_page = 0x012345;
    s.dbr_addr = 0x1040;
    s.log_wq_stride = 6;
    s.log_wq_sz = 4;
    s.dbr_umem_valid = s.wq_umem_valid = true;
    s.dbr_umem_id = s.wq_umem_id = 0x21;
    s.wq_umem_offset = 0x800;
    return s;
}

// A frame whose bytes differ from each other and from zero.
std::vector<std::byte> frame_of(size_t n) {
    std::vector<std::byte> f(n);
    for (size_t i = 0; i < n; ++i) f[i] = std::byte(uint8_t(i * 7 + 1));
    return f;
}

TEST(SqCodec, SizesMatchTheLayouts) {
    EXPECT_EQ(kCreateSqInBytes, 272u);
    EXPECT_EQ(kModifySqInBytes, 272u);
    EXPECT_EQ(L::kSqc.bits, 0x780u);
    EXPECT_EQ(L::kCreateSqIn.bytes(), kCreateSqInBytes);
    EXPECT_EQ(L::kModifySqIn.bytes(), kModifySqInBytes);
    EXPECT_EQ(L::kDestroySqIn.bytes(), kSqCmdBytes);
    EXPECT_EQ(L::kWqeCtrlSeg.bytes(), kWqeSegment);
    EXPECT_EQ(L::kWqeEthSeg.bytes(), kWqeSegment);
}

TEST(SqCodec, CreateSqGolden) {
    auto in = buf(kCreateSqInBytes);
    ASSERT_TRUE(encode_create_sq(announce_sq(), in));
    Bytes want = {
        {0, 0x09}, {1, 0x04},                // opcode 0x904
        {32, 0x10},                          // sqc.flush_in_error_en, 0x3
        {35, 0x10},                          // sqc.ts_format DEFAULT, 0x1a
        {42, 0x04}, {43, 0x56},              // sqc.cqn, 0x48
        {65, 0x01},                          // sqc.tis_lst_sz, 0x100
        {78, 0x0a}, {79, 0xbc},              // sqc.tis_num_0, 0x168
        {80, 0x10},                          // wq.wq_type CYCLIC, 0x180
        {90, 0x01}, {91, 0x23},              // wq.pd, 0x1c8
        {93, 0x01}, {94, 0x23}, {95, 0x45},  // wq.uar_page, 0x1e8
        {102, 0x10}, {103, 0x40},            // wq.dbr_addr, 0x200
        {113, 0x06},                         // wq.log_wq_stride, 0x28c
        {115, 0x04},                         // wq.log_wq_sz, 0x29b
        {116, 0xc0},                         // wq.dbr_umem_valid 0x2a0, wq.wq_umem_valid 0x2a1
        {123, 0x21},                         // wq.dbr_umem_id, 0x2c0
        {127, 0x21},                         // wq.wq_umem_id, 0x2e0
        {134, 0x08},                         // wq.wq_umem_offset, 0x300
    };
    EXPECT_EQ(nonzero(in), want);
    auto back = decode_create_sq_in(in);
    ASSERT_TRUE(back) << back.error().what;
    EXPECT_EQ(*back, announce_sq());
    EXPECT_TRUE(create_sq_in_nonzero_reserved(in).empty());
}

TEST(SqCodec, CreateSqRefusesWhatDoesNotFit) {
    auto in = buf(kCreateSqInBytes);
    SqAttr a = announce_sq();
    a.cqn = 1u << 24;
    auto r = encode_create_sq(a, in);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::InvalidArgument);
    EXPECT_TRUE(has(r.error().what, "create_sq_in.") && has(r.error().what, "cqn")) << r.error().what;
    a = announce_sq();
    a.log_wq_sz = 32;  // 5 bits
    EXPECT_TRUE(has(encode_create_sq(a, in).error().what, "log_wq_sz"));
    auto small = buf(kCreateSqInBytes - 1);
    EXPECT_FALSE(encode_create_sq(announce_sq(), small));
    EXPECT_FALSE(decode_create_sq_in(small));
    EXPECT_EQ(create_sq_in_nonzero_reserved(small), "create_sq_in (short buffer)");
}

TEST(SqCodec, CreateSqDecodeRefusesAnotherOpcodeAndNamesAReservedBit) {
    auto in = buf(kCreateSqInBytes);
    ASSERT_TRUE(encode_create_sq(announce_sq(), in));
    in[1] = std::byte{0x05};  // MODIFY_SQ
    auto r = decode_create_sq_in(in);
    ASSERT_FALSE(r);
    EXPECT_TRUE(has(r.error().what, "is not CREATE_SQ")) << r.error().what;
    in[1] = std::byte{0x04};
    in[32] |= std::byte{0x80};  // sqc.reserved_at_0 (rlky)
    EXPECT_TRUE(has(std::string(create_sq_in_nonzero_reserved(in)), "reserved_at_0"));
    in[32] &= std::byte{0x7f};
    in[124 + 16] = std::byte{0x01};  // the wq past wq_umem_offset (lwm, counters, ...)
    EXPECT_FALSE(create_sq_in_nonzero_reserved(in).empty());
}

TEST(SqCodec, ModifySqGolden) {
    auto in = buf(kModifySqInBytes);
    const SqModify up{0x000abc, uint8_t(SqState::RST), uint8_t(SqState::RDY)};
    ASSERT_TRUE(encode_modify_sq(up, in));
    Bytes want = {{0, 0x09}, {1, 0x05},    // opcode 0x905
                  {10, 0x0a}, {11, 0xbc},  // sqn, 0x48 (sq_state RST: 0)
                  {33, 0x10}};             // sqc.state RDY, 0x108
    EXPECT_EQ(nonzero(in), want);
    EXPECT_EQ(*decode_modify_sq_in(in), up);
    EXPECT_TRUE(modify_sq_in_nonzero_reserved(in).empty());

    const SqModify reset{0x000abc, uint8_t(SqState::ERR), uint8_t(SqState::RST)};
    ASSERT_TRUE(encode_modify_sq(reset, in));
    want = {{0, 0x09}, {1, 0x05}, {8, 0x30}, {10, 0x0a}, {11, 0xbc}};  // sq_state ERR, 0x40
    EXPECT_EQ(nonzero(in), want);
    EXPECT_EQ(*decode_modify_sq_in(in), reset);
}

TEST(SqCodec, ModifySqIsStateOnly) {
    auto in = buf(kModifySqInBytes);
    ASSERT_TRUE(encode_modify_sq({0x000abc, 0, 1}, in));
    in[23] = std::byte{0x01};  // modify_bitmask, 0x80
    EXPECT_EQ(modify_sq_in_nonzero_reserved(in), "modify_bitmask");
    in[23] = std::byte{0};
    in[43] = std::byte{0x01};  // sqc.cqn: a state-only modify carries no other context field
    EXPECT_TRUE(has(std::string(modify_sq_in_nonzero_reserved(in)), "cqn"));
    EXPECT_FALSE(encode_modify_sq({1u << 24, 0, 1}, in));
    EXPECT_FALSE(encode_modify_sq({1, 16, 1}, in));
    EXPECT_EQ(modify_sq_in_nonzero_reserved(buf(kModifySqInBytes - 1)), "modify_sq_in (short buffer)");
}

TEST(SqCodec, DestroyAndOutputs) {
    auto d = buf(kSqCmdBytes);
    encode_destroy_sq(0x000abc, d);
    Bytes want = {{0, 0x09}, {1, 0x06}, {10, 0x0a}, {11, 0xbc}};
    EXPECT_EQ(nonzero(d), want);
    EXPECT_EQ(*decode_destroy_sq_in(d), 0x000abcu);
    d[1] = std::byte{0x04};
    EXPECT_FALSE(decode_destroy_sq_in(d));

    auto out = buf(kSqCmdBytes);
    encode_create_sq_out(0x000def, out);
    EXPECT_EQ(nonzero(out), (Bytes{{10, 0x0d}, {11, 0xef}}));
    EXPECT_EQ(*decode_create_sq_out(out), 0x000defu);
    out[0] = std::byte{uint8_t(Status::BAD_PARAM_ERR)};
    out[7] = std::byte{0x42};
    auto r = decode_create_sq_out(out);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::Firmware);
    EXPECT_EQ(r.error().opcode, uint16_t(Opcode::CREATE_SQ));
    EXPECT_EQ(r.error().syndrome, 0x42u);
    EXPECT_TRUE(has(describe(r.error()), "CREATE_SQ")) << describe(r.error());

    encode_modify_sq_out(out);
    EXPECT_TRUE(nonzero(out).empty());
    EXPECT_TRUE(decode_modify_sq_out(out));
    out[0] = std::byte{uint8_t(Status::BAD_RES_STATE_ERR)};
    EXPECT_EQ(decode_modify_sq_out(out).error().opcode, uint16_t(Opcode::MODIFY_SQ));
}

TEST(SqCodec, StateNamesAndTimestampFormats) {
    EXPECT_STREQ(sq_state_name(uint8_t(SqState::RST)), "RST");
    EXPECT_STREQ(sq_state_name(uint8_t(SqState::RDY)), "RDY");
    EXPECT_STREQ(sq_state_name(uint8_t(SqState::ERR)), "ERR");
    EXPECT_STREQ(sq_state_name(2), "UNKNOWN_SQ_STATE");
    EXPECT_EQ(sq_ts_format_for_cap(0), SqTsFormat::FREE_RUNNING);
    EXPECT_EQ(sq_ts_format_for_cap(1), SqTsFormat::REAL_TIME);
    EXPECT_EQ(sq_ts_format_for_cap(2), SqTsFormat::DEFAULT);
    for (uint8_t cap = 0; cap < 3; ++cap)
        EXPECT_TRUE(sq_ts_format_allowed(cap, uint8_t(sq_ts_format_for_cap(cap)))) << int(cap);
    EXPECT_FALSE(sq_ts_format_allowed(0, uint8_t(SqTsFormat::REAL_TIME)));
    EXPECT_FALSE(sq_ts_format_allowed(1, uint8_t(SqTsFormat::FREE_RUNNING)));
    EXPECT_TRUE(sq_ts_format_allowed(2, uint8_t(SqTsFormat::REAL_TIME)));
    EXPECT_FALSE(sq_ts_format_allowed(2, 3));
}

TEST(SendWqe, InlineSendGolden) {
    // 42 bytes (a RARP before padding): ctrl + eth (2 inline bytes) + 40
    // bytes in 3 segments = 5 ds, 2 basic blocks.
    const auto frame = frame_of(42);
    ASSERT_EQ(inline_send_ds(frame.size()), 5);
    ASSERT_EQ(wqe_basic_blocks(5), 2);
    auto wqe = buf(2 * kWqeBasicBlock);
    ASSERT_TRUE(encode_inline_send(5, 0x000abc, /*signaled=*/true, frame, wqe));
    const Bytes ctrl = {{2, 0x05},               // wqe_index, 0x8
                        {3, 0x0a},               // opcode SEND, 0x18
                        {5, 0x0a}, {6, 0xbc},    // qpn_ds.sqn, 0x20
                        {7, 0x05},               // qpn_ds.ds, 0x3a
                        {11, 0x08},              // fm_ce_se: ce CQE always (MLX5_WQE_CTRL_CQ_UPDATE)
                        {29, 0x2a}};             // eth: inline_hdr_sz 42, byte 12
    EXPECT_EQ(nonzero(std::span(wqe).first(30)), ctrl);
    EXPECT_TRUE(std::equal(frame.begin(), frame.end(), wqe.begin() + 30));
    EXPECT_TRUE(nonzero(std::span(wqe).subspan(30 + 42)).empty());

    auto c = decode_wqe_ctrl(wqe);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->wqe_index, 5);
    EXPECT_EQ(c->opcode, kWqeOpcodeSend);
    EXPECT_EQ(c->sqn, 0x000abcu);
    EXPECT_EQ(c->ds, 5);
    EXPECT_EQ(c->ce, kWqeCeCqeAlways);

    ASSERT_TRUE(encode_inline_send(5, 0x000abc, /*signaled=*/false, frame, wqe));
    EXPECT_EQ(uint8_t(wqe[11]), 0);
}

TEST(SendWqe, RoundTripsEverySizeOneWqeHolds) {
    // 2 + 58 * 16 = 930 bytes fill the largest WQE (60 segments).
    for (size_t n : {size_t(kEthHeaderBytes), size_t(16), size_t(17), size_t(18), size_t(60), size_t(64),
                     size_t(930)}) {
        const auto frame = frame_of(n);
        const uint8_t ds = inline_send_ds(n);
        auto wqe = buf(size_t(wqe_basic_blocks(ds)) * kWqeBasicBlock);
        ASSERT_TRUE(encode_inline_send(uint16_t(n), 7, true, frame, wqe)) << n;
        auto s = decode_inline_send(std::span(wqe).first(size_t(ds) * kWqeSegment));
        ASSERT_TRUE(s) << n << ": " << s.error().what;
        EXPECT_EQ(s->frame, frame) << n;
        EXPECT_EQ(s->ctrl.ds, ds) << n;
        EXPECT_EQ(s->ctrl.wqe_index, uint16_t(n));
        EXPECT_EQ(s->trailing_ds, 0) << n;
    }
    EXPECT_EQ(inline_send_ds(930), kMaxWqeDs);
}

TEST(SendWqe, RefusesFramesNoWqeHolds) {
    auto wqe = buf(16 * kWqeBasicBlock);
    auto r = encode_inline_send(0, 7, true, frame_of(kEthHeaderBytes - 1), wqe);
    ASSERT_FALSE(r);
    EXPECT_TRUE(has(r.error().what, "shorter than its Ethernet header")) << r.error().what;
    r = encode_inline_send(0, 7, true, frame_of(931), wqe);
    ASSERT_FALSE(r);
    EXPECT_TRUE(has(r.error().what, "does not fit one WQE")) << r.error().what;
    EXPECT_FALSE(encode_inline_send(0, 1u << 24, true, frame_of(60), wqe));
    auto small = buf(kWqeBasicBlock);  // 60 bytes take 2 blocks
    EXPECT_FALSE(encode_inline_send(0, 7, true, frame_of(60), small));
}

// A good 60-byte send (6 ds, 96 bytes), for the malformed cases to break.
std::vector<std::byte> good_send() {
    auto wqe = buf(2 * kWqeBasicBlock);
    EXPECT_TRUE(encode_inline_send(3, 7, true, frame_of(60), wqe));
    wqe.resize(size_t(inline_send_ds(60)) * kWqeSegment);
    return wqe;
}

std::string malformed(std::vector<std::byte> wqe) {
    auto s = decode_inline_send(wqe);
    if (s) return "accepted";
    EXPECT_EQ(s.error().code, Errc::InvalidArgument);
    return s.error().what;
}

TEST(SendWqe, MalformedWqesAreRefusedNamingWhat) {
    ASSERT_TRUE(decode_inline_send(good_send()));

    auto w = good_send();
    w[3] = std::byte{0x08};  // RDMA_WRITE
    EXPECT_TRUE(has(malformed(w), "is not an Ethernet SEND"));

    w = good_send();
    w[0] = std::byte{0x01};  // opc_mod
    EXPECT_TRUE(has(malformed(w), "is not an Ethernet SEND"));

    w = good_send();
    w[7] = std::byte{0x01};  // ds 1: no Ethernet segment
    EXPECT_TRUE(has(malformed(w), "leaves no Ethernet segment"));

    w = good_send();
    w[7] = std::byte{0x07};  // ds 7: longer than the bytes given
    auto shorter = decode_inline_send(w);
    ASSERT_FALSE(shorter);
    EXPECT_EQ(shorter.error().code, Errc::ShortBuffer);
    EXPECT_TRUE(has(shorter.error().what, "send WQE: buffer of 96 bytes, need 112")) << shorter.error().what;

    w = good_send();
    w[7] |= std::byte{0x80};  // qpn_ds.reserved_at_38
    EXPECT_TRUE(has(malformed(w), "qpn_ds.reserved_at_38"));

    w = good_send();
    w[11] |= std::byte{0x10};  // fm_ce_se.reserved_at_5b
    EXPECT_TRUE(has(malformed(w), "fm_ce_se.reserved_at_5b"));

    w = good_send();
    w[16 + 4] = std::byte{0xc0};  // eth: cs_flags (L3/L4 checksum)
    EXPECT_TRUE(has(malformed(w), "wqe_eth_seg"));

    w = good_send();
    w[16 + 9] = std::byte{0x40};  // eth: mss (LSO)
    EXPECT_TRUE(has(malformed(w), "wqe_eth_seg"));

    w = good_send();
    w[16 + 13] = std::byte{0x5f};  // inline_hdr_sz 95: 6 ds hold 2 + 4 * 16 = 66
    EXPECT_TRUE(has(malformed(w), "inline_hdr_sz 95 is longer than its 6 segments hold"));

    EXPECT_FALSE(decode_wqe_ctrl(buf(kWqeSegment - 1)));
}

TEST(SendWqe, ASendWithDataSegmentsAfterItsInlineBytesCountsThem) {
    auto w = good_send();  // 6 ds
    w[7] = std::byte{0x08};  // 8 ds: two segments past the inline data
    w.resize(8 * kWqeSegment);
    auto s = decode_inline_send(w);
    ASSERT_TRUE(s) << s.error().what;
    EXPECT_EQ(s->frame, frame_of(60));
    EXPECT_EQ(s->trailing_ds, 2);
}

TEST(ErrorCqe, SyndromesRoundTrip) {
    const Cqe c{.vendor_err_synd = 0x68,
                .syndrome = uint8_t(CqeSyndrome::LOCAL_QP_OP_ERR),
                .qpn = 0x000abc,
                .wqe_counter = 0x0012,
                .opcode = uint8_t(CqeOpcode::REQ_ERR),
                .owner = true};
    std::array<std::byte, kCqeBytes> b{};
    encode_cqe(c, b);
    EXPECT_EQ(uint8_t(b[54]), 0x68);
    EXPECT_EQ(uint8_t(b[55]), 0x02);
    EXPECT_EQ(uint8_t(b[63]), 0xd1);  // REQ_ERR << 4 | owner
    EXPECT_EQ(decode_cqe(b), c);
}

}  // namespace
}  // namespace mlx5async::prm
