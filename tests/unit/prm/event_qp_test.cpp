// Event-QP commands: CREATE/DESTROY_CQ, CREATE/DESTROY_QP, the three QP
// transitions, the CQE and the CQ arm word. Golden bytes derived by hand from
// Linux mlx5_ifc.h offsets (event_qp_layout.hpp lists them): cqc at byte 16 of
// create_cq_in, qpc at byte 24 of create_qp_in and of the transitions; the
// attribute values are the ones DPDK drivers/vdpa/mlx5/mlx5_vdpa_event.c and
// drivers/common/mlx5/mlx5_devx_cmds.c (mlx5_devx_cmd_create_qp,
// mlx5_devx_cmd_modify_qp_state) send. CQE offsets: Linux struct mlx5_cqe64.
#include "common/prm/event_qp.hpp"

#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "common/prm/event_qp_layout.hpp"
#include "common/prm/field.hpp"
#include "common/prm/opcodes.hpp"

namespace mlx5async::prm {
namespace {

namespace L = layout;

std::vector<std::byte> buf(size_t n) { return std::vector<std::byte>(n); }
uint8_t at(const std::vector<std::byte>& b, size_t i) { return uint8_t(b[i]); }

// Bytes that differ from zero, as (index, value), for exact golden checks.
std::vector<std::pair<size_t, uint8_t>> nonzero(const std::vector<std::byte>& b) {
    std::vector<std::pair<size_t, uint8_t>> v;
    for (size_t i = 0; i < b.size(); ++i)
        if (b[i] != std::byte{0}) v.emplace_back(i, uint8_t(b[i]));
    return v;
}
using Bytes = std::vector<std::pair<size_t, uint8_t>>;

// The event CQ of a DPDK vDPA virtq (mlx5_vdpa_cq_create over
// mlx5_devx_cq_create): 16 CQEs of 64 bytes, collapsed (use_first_only), one
// umem for the ring with the doorbell record right after it.
CqAttr vdpa_event_cq() {
    CqAttr a;
    a.cc = true;
    a.log_cq_size = 4;
    a.uar_page = 0x012345;
    a.c_eqn = 0x2a;
    a.dbr_umem_valid = true;
    a.dbr_umem_id = 0x17;
    a.dbr_addr = 16 * kCqeBytes;
    a.cq_umem_valid = true;
    a.cq_umem_id = 0x17;
    a.cq_umem_offset = 0;
    return a;
}

// DPDK's firmware QP (uar_index 0): "Special QP to be managed by FW".
QpAttr fw_qp() {
    QpAttr a;
    a.st = uint8_t(QpServiceType::RC);
    a.pd = 0x000123;
    a.rq_type = uint8_t(QpRqType::ZERO_LEN);
    a.no_sq = true;
    return a;
}

// DPDK's driver RC QP: receive-only, 16 WQEs of 16 bytes, in a umem.
QpAttr driver_qp() {
    QpAttr a;
    a.st = uint8_t(QpServiceType::RC);
    a.pm_state = uint8_t(QpPmState::MIGRATED);
    a.pd = 0x000123;
    a.uar_page = 0x012345;
    a.no_sq = true;
    a.log_rq_size = 4;
    a.log_rq_stride = 0;  // 16 << 0 bytes (MLX5_WSEG_SIZE)
    a.rq_type = uint8_t(QpRqType::REGULAR);
    a.cqn_rcv = 0x000456;
    a.dbr_umem_valid = true;
    a.dbr_umem_id = 0x21;
    a.dbr_addr = 0x100;
    a.wq_umem_valid = true;
    a.wq_umem_id = 0x21;
    a.wq_umem_offset = 0;
    return a;
}

TEST(EventQpCodec, SizesMatchTheLayouts) {
    EXPECT_EQ(kCreateCqInBytes, 272u);
    EXPECT_EQ(kCreateQpInBytes, 272u);
    EXPECT_EQ(kQpModifyInBytes, 272u);
    EXPECT_EQ(L::kCqc.bits, 0x200u);
    EXPECT_EQ(L::kQpc.bits, 0x740u);
    EXPECT_EQ(L::kCreateCqIn.bytes(), kCreateCqInBytes);
    EXPECT_EQ(L::kCreateQpIn.bytes(), kCreateQpInBytes);
    EXPECT_EQ(L::kQpModifyIn.bytes(), kQpModifyInBytes);
}

TEST(EventQpCodec, CreateCqGolden) {
    auto in = buf(kCreateCqInBytes);
    ASSERT_TRUE(encode_create_cq(vdpa_event_cq(), in));
    Bytes want = {
        {0, 0x04},                 // opcode 0x400
        {16, 0x02},                // cqc.dbr_umem_valid, bit 0x6
        {17, 0x10},                // cqc.cc, bit 0xb
        {23, 0x17},                // cqc.dbr_umem_id, 0x20
        {28, 0x04},                // cqc.log_cq_size, 0x63
        {29, 0x01}, {30, 0x23}, {31, 0x45},  // cqc.uar_page, 0x68
        {39, 0x2a},                // cqc.c_eqn_or_apu_element, 0xa0 (DPDK c_eqn at 0xb8)
        {78, 0x04},                // cqc.dbr_addr 0x400, 0x1c0
        {91, 0x17},                // cq_umem_id, 0x2c0
        {92, 0x80},                // cq_umem_valid, 0x2e0
    };
    EXPECT_EQ(nonzero(in), want);
    auto back = decode_create_cq_in(in);
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, vdpa_event_cq());
    EXPECT_TRUE(create_cq_in_nonzero_reserved(in).empty());
}

TEST(EventQpCodec, FirmwareQpGolden) {
    auto in = buf(kCreateQpInBytes);
    ASSERT_TRUE(encode_create_qp(fw_qp(), in));
    Bytes want = {
        {0, 0x05},                          // opcode 0x500
        {30, 0x01}, {31, 0x23},             // qpc.pd, 0x28
        {34, 0x80},                         // qpc.no_sq, 0x50
        {196, 0x03},                        // qpc.rq_type ZERO_LEN, 0x565
    };
    EXPECT_EQ(nonzero(in), want);
    EXPECT_EQ(*decode_create_qp_in(in), fw_qp());
    EXPECT_TRUE(create_qp_in_nonzero_reserved(in).empty());
}

TEST(EventQpCodec, DriverQpGolden) {
    auto in = buf(kCreateQpInBytes);
    ASSERT_TRUE(encode_create_qp(driver_qp(), in));
    Bytes want = {
        {0, 0x05},
        {26, 0x18},                          // qpc.pm_state MIGRATED, 0x13
        {30, 0x01}, {31, 0x23},              // qpc.pd
        {33, 0x20},                          // qpc.log_rq_size 4, 0x49
        {34, 0x80},                          // qpc.no_sq
        {37, 0x01}, {38, 0x23}, {39, 0x45},  // qpc.uar_page, 0x68
        {182, 0x04}, {183, 0x56},            // qpc.cqn_rcv, 0x4e8
        {190, 0x01},                         // qpc.dbr_addr 0x100, 0x500
        {232, 0x10},                         // qpc.dbr_umem_valid, 0x683
        {255, 0x21},                         // qpc.dbr_umem_id, 0x720
        {267, 0x21},                         // wq_umem_id, 0x840
        {268, 0x80},                         // wq_umem_valid, 0x860
    };
    EXPECT_EQ(nonzero(in), want);
    EXPECT_EQ(*decode_create_qp_in(in), driver_qp());
}

TEST(EventQpCodec, Rst2InitGolden) {
    QpModify m{QpTransition::RST2INIT, 0x000456};
    m.vhca_port_num = 1;
    auto in = buf(kQpModifyInBytes);
    ASSERT_TRUE(encode_qp_modify(m, in));
    Bytes want = {{0, 0x05}, {1, 0x02}, {10, 0x04}, {11, 0x56},
                  {85, 0x01}};  // primary_address_path.vhca_port_num, 0x1e8
    EXPECT_EQ(nonzero(in), want);
    EXPECT_EQ(*decode_qp_modify_in(in), m);
}

TEST(EventQpCodec, Init2RtrGolden) {
    QpModify m{QpTransition::INIT2RTR, 0x000456};
    m.remote_qpn = 0x000789;
    m.mtu = 1;
    m.log_msg_max = 30;
    m.fl = true;
    m.vhca_port_num = 1;
    auto in = buf(kQpModifyInBytes);
    ASSERT_TRUE(encode_qp_modify(m, in));
    Bytes want = {{0, 0x05}, {1, 0x03}, {10, 0x04}, {11, 0x56},
                  {32, 0x3e},               // mtu 1 (0x40) | log_msg_max 30 (0x43)
                  {46, 0x07}, {47, 0x89},   // remote_qpn, 0xa8
                  {48, 0x80},               // primary_address_path.fl, 0xc0
                  {85, 0x01}};
    EXPECT_EQ(nonzero(in), want);
    EXPECT_EQ(*decode_qp_modify_in(in), m);
}

TEST(EventQpCodec, Rtr2RtsGolden) {
    QpModify m{QpTransition::RTR2RTS, 0x000456};
    m.retry_count = 7;
    m.rnr_retry = 7;
    auto in = buf(kQpModifyInBytes);
    ASSERT_TRUE(encode_qp_modify(m, in));
    Bytes want = {{0, 0x05}, {1, 0x04}, {10, 0x04}, {11, 0x56},
                  {137, 0x07},   // retry_count, 0x38d
                  {138, 0xe0}};  // rnr_retry, 0x390
    EXPECT_EQ(nonzero(in), want);
    EXPECT_EQ(*decode_qp_modify_in(in), m);
    EXPECT_STREQ(qp_transition_name(QpTransition::RTR2RTS), "RTR2RTS_QP");
}

TEST(EventQpCodec, DestroyAndOutputsGolden) {
    auto d = buf(kEventQpCmdBytes);
    encode_destroy_cq(0xabcdef, d);
    EXPECT_EQ(nonzero(d), (Bytes{{0, 0x04}, {1, 0x01}, {9, 0xab}, {10, 0xcd}, {11, 0xef}}));
    EXPECT_EQ(*decode_destroy_cq_in(d), 0xabcdefu);
    EXPECT_FALSE(decode_destroy_qp_in(d));  // DESTROY_CQ is not DESTROY_QP
    encode_destroy_qp(0x123456, d);
    EXPECT_EQ(at(d, 1), 0x01);
    EXPECT_EQ(at(d, 0), 0x05);
    EXPECT_EQ(*decode_destroy_qp_in(d), 0x123456u);

    auto out = buf(kEventQpCmdBytes);
    encode_create_cq_out(0x0a0b0c, out);
    EXPECT_EQ(nonzero(out), (Bytes{{9, 0x0a}, {10, 0x0b}, {11, 0x0c}}));
    EXPECT_EQ(*decode_create_cq_out(out), 0x0a0b0cu);
    encode_create_qp_out(0x0d0e0f, out);
    EXPECT_EQ(*decode_create_qp_out(out), 0x0d0e0fu);
    encode_qp_modify_out(out);
    EXPECT_TRUE(nonzero(out).empty());
    EXPECT_TRUE(decode_qp_modify_out(out));
}

// Every field: set alone to its maximum, it changes exactly its own bits
// (all of them) and round-trips. Offsets come from the layout, which the
// golden tests above pin to Linux.
template <typename S>
struct FieldCase {
    const Field* field;
    std::function<void(S&)> set_max;
};

template <typename S, typename Enc, typename Dec>
void check_isolation(const S& base, const std::vector<FieldCase<S>>& cases, size_t size,
                     Enc enc, Dec dec) {
    auto ref = buf(size);
    ASSERT_TRUE(enc(base, ref));
    for (const auto& c : cases) {
        SCOPED_TRACE(std::string(c.field->name));
        S s = base;
        c.set_max(s);
        auto got = buf(size);
        ASSERT_TRUE(enc(s, got));
        auto want = ref;
        set_bits(want, c.field->bit_offset, c.field->bit_width, width_mask(c.field->bit_width));
        EXPECT_EQ(got, want);
        auto back = dec(got);
        ASSERT_TRUE(back);
        EXPECT_EQ(*back, s);
    }
}

#define MAX_OF(S, member, f) \
    FieldCase<S> { &(f), [](S& s) { s.member = decltype(s.member)(width_mask((f).bit_width)); } }

TEST(EventQpCodec, EveryCqFieldIsIsolatedAndRoundTripsAtItsMaximum) {
    using F = CqAttr;
    namespace In = L::create_cq_in;
    namespace C = L::cqc;
    std::vector<FieldCase<F>> cases = {
        MAX_OF(F, uid, In::uid),
        MAX_OF(F, dbr_umem_valid, In::in_cqc(C::dbr_umem_valid)),
        MAX_OF(F, cqe_sz, In::in_cqc(C::cqe_sz)),
        MAX_OF(F, cc, In::in_cqc(C::cc)),
        MAX_OF(F, oi, In::in_cqc(C::oi)),
        MAX_OF(F, dbr_umem_id, In::in_cqc(C::dbr_umem_id)),
        MAX_OF(F, log_cq_size, In::in_cqc(C::log_cq_size)),
        MAX_OF(F, uar_page, In::in_cqc(C::uar_page)),
        MAX_OF(F, c_eqn, In::in_cqc(C::c_eqn_or_apu_element)),
        MAX_OF(F, log_page_size, In::in_cqc(C::log_page_size)),
        MAX_OF(F, dbr_addr, In::in_cqc(C::dbr_addr)),
        MAX_OF(F, cq_umem_offset, In::cq_umem_offset),
        MAX_OF(F, cq_umem_id, In::cq_umem_id),
        MAX_OF(F, cq_umem_valid, In::cq_umem_valid),
    };
    check_isolation<F>(F{}, cases, kCreateCqInBytes,
                       [](const F& a, std::vector<std::byte>& b) { return encode_create_cq(a, b); },
                       [](const std::vector<std::byte>& b) { return decode_create_cq_in(b); });
    F all;
    for (const auto& c : cases) c.set_max(all);
    auto in = buf(kCreateCqInBytes);
    ASSERT_TRUE(encode_create_cq(all, in));
    EXPECT_EQ(*decode_create_cq_in(in), all);
    EXPECT_TRUE(create_cq_in_nonzero_reserved(in).empty());
}

TEST(EventQpCodec, EveryQpFieldIsIsolatedAndRoundTripsAtItsMaximum) {
    using F = QpAttr;
    namespace In = L::create_qp_in;
    namespace Q = L::qpc;
    std::vector<FieldCase<F>> cases = {
        MAX_OF(F, uid, In::uid),
        MAX_OF(F, st, In::in_qpc(Q::st)),
        MAX_OF(F, pm_state, In::in_qpc(Q::pm_state)),
        MAX_OF(F, pd, In::in_qpc(Q::pd)),
        MAX_OF(F, log_rq_size, In::in_qpc(Q::log_rq_size)),
        MAX_OF(F, log_rq_stride, In::in_qpc(Q::log_rq_stride)),
        MAX_OF(F, no_sq, In::in_qpc(Q::no_sq)),
        MAX_OF(F, log_sq_size, In::in_qpc(Q::log_sq_size)),
        MAX_OF(F, ts_format, In::in_qpc(Q::ts_format)),
        MAX_OF(F, uar_page, In::in_qpc(Q::uar_page)),
        MAX_OF(F, log_page_size, In::in_qpc(Q::log_page_size)),
        MAX_OF(F, cqn_snd, In::in_qpc(Q::cqn_snd)),
        MAX_OF(F, cqn_rcv, In::in_qpc(Q::cqn_rcv)),
        MAX_OF(F, dbr_addr, In::in_qpc(Q::dbr_addr)),
        MAX_OF(F, rq_type, In::in_qpc(Q::rq_type)),
        MAX_OF(F, dbr_umem_valid, In::in_qpc(Q::dbr_umem_valid)),
        MAX_OF(F, dbr_umem_id, In::in_qpc(Q::dbr_umem_id)),
        MAX_OF(F, wq_umem_offset, In::wq_umem_offset),
        MAX_OF(F, wq_umem_id, In::wq_umem_id),
        MAX_OF(F, wq_umem_valid, In::wq_umem_valid),
    };
    check_isolation<F>(F{}, cases, kCreateQpInBytes,
                       [](const F& a, std::vector<std::byte>& b) { return encode_create_qp(a, b); },
                       [](const std::vector<std::byte>& b) { return decode_create_qp_in(b); });
    F all;
    for (const auto& c : cases) c.set_max(all);
    auto in = buf(kCreateQpInBytes);
    ASSERT_TRUE(encode_create_qp(all, in));
    EXPECT_EQ(*decode_create_qp_in(in), all);
    EXPECT_TRUE(create_qp_in_nonzero_reserved(in).empty());
}

TEST(EventQpCodec, EveryQpModifyFieldIsIsolatedAndRoundTripsAtItsMaximum) {
    using F = QpModify;
    namespace In = L::qp_modify_in;
    namespace Q = L::qpc;
    std::vector<FieldCase<F>> cases = {
        MAX_OF(F, qpn, In::qpn),
        MAX_OF(F, remote_qpn, In::in_qpc(Q::remote_qpn)),
        MAX_OF(F, mtu, In::in_qpc(Q::mtu)),
        MAX_OF(F, log_msg_max, In::in_qpc(Q::log_msg_max)),
        MAX_OF(F, min_rnr_nak, In::in_qpc(Q::min_rnr_nak)),
        MAX_OF(F, vhca_port_num, In::in_qpc(Q::vhca_port_num)),
        MAX_OF(F, fl, In::in_qpc(Q::fl)),
        MAX_OF(F, retry_count, In::in_qpc(Q::retry_count)),
        MAX_OF(F, rnr_retry, In::in_qpc(Q::rnr_retry)),
    };
    for (QpTransition t : {QpTransition::RST2INIT, QpTransition::INIT2RTR, QpTransition::RTR2RTS}) {
        SCOPED_TRACE(qp_transition_name(t));
        F base;
        base.transition = t;
        check_isolation<F>(base, cases, kQpModifyInBytes,
                           [](const F& m, std::vector<std::byte>& b) { return encode_qp_modify(m, b); },
                           [](const std::vector<std::byte>& b) { return decode_qp_modify_in(b); });
    }
    // The absolute qpc offsets of the address-path fields (ads at qpc 0xc0).
    EXPECT_EQ(In::in_qpc(Q::fl).bit_offset, 0xc0u + 0xc0u);
    EXPECT_EQ(In::in_qpc(Q::vhca_port_num).bit_offset, 0xc0u + 0xc0u + 0x128u);
}

TEST(EventQpCodec, OverWideValuesFailNamingTheField) {
    auto in = buf(kCreateCqInBytes);
    CqAttr c = vdpa_event_cq();
    c.log_cq_size = 32;
    auto r = encode_create_cq(c, in);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::InvalidArgument);
    EXPECT_NE(r.error().what.find("create_cq_in.cq_context.log_cq_size"), std::string::npos)
        << r.error().what;
    EXPECT_TRUE(nonzero(in).empty());  // rejected before touching the buffer

    QpAttr q = driver_qp();
    q.rq_type = 8;
    r = encode_create_qp(q, in);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().what.find("create_qp_in.qpc.rq_type"), std::string::npos);
    q = driver_qp();
    q.pd = 1u << 24;
    EXPECT_NE(encode_create_qp(q, in).error().what.find("qpc.pd"), std::string::npos);

    QpModify m{QpTransition::RTR2RTS, 1};
    m.retry_count = 8;
    r = encode_qp_modify(m, in);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().what.find("retry_count"), std::string::npos);
    m = QpModify{QpTransition::INIT2RTR, 1u << 24};
    r = encode_qp_modify(m, in);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().what.find("qpn"), std::string::npos);
    m = QpModify{QpTransition(0x505), 1};  // RTS2RTS is not one of ours
    EXPECT_EQ(encode_qp_modify(m, in).error().code, Errc::InvalidArgument);
}

TEST(EventQpCodec, ShortBuffersFailAndLongerInputsDecode) {
    auto small = buf(kCreateCqInBytes - 1);
    EXPECT_EQ(encode_create_cq({}, small).error().code, Errc::ShortBuffer);
    EXPECT_EQ(decode_create_cq_in(small).error().code, Errc::ShortBuffer);
    EXPECT_EQ(encode_create_qp({}, small).error().code, Errc::ShortBuffer);
    EXPECT_EQ(decode_create_qp_in(small).error().code, Errc::ShortBuffer);
    EXPECT_EQ(encode_qp_modify({}, small).error().code, Errc::ShortBuffer);
    EXPECT_EQ(decode_qp_modify_in(small).error().code, Errc::ShortBuffer);
    EXPECT_EQ(create_cq_in_nonzero_reserved(small), "create_cq_in (short buffer)");
    auto tiny = buf(kEventQpCmdBytes - 1);
    EXPECT_EQ(decode_destroy_cq_in(tiny).error().code, Errc::ShortBuffer);
    EXPECT_EQ(decode_destroy_qp_in(tiny).error().code, Errc::ShortBuffer);
    EXPECT_EQ(decode_create_cq_out(tiny).error().code, Errc::ShortBuffer);  // status OK, no cqn
    EXPECT_EQ(decode_qp_modify_out(tiny).error().code, Errc::ShortBuffer);

    // A caller may append pas[] entries: decode reads the fixed part only.
    auto longer = buf(kCreateCqInBytes + 4 * 8);
    ASSERT_TRUE(encode_create_cq(vdpa_event_cq(), longer));
    EXPECT_EQ(*decode_create_cq_in(longer), vdpa_event_cq());
    EXPECT_TRUE(create_cq_in_nonzero_reserved(longer).empty());
    auto qlonger = buf(kCreateQpInBytes + 8);
    ASSERT_TRUE(encode_create_qp(driver_qp(), qlonger));
    EXPECT_EQ(*decode_create_qp_in(qlonger), driver_qp());
}

TEST(EventQpCodec, WrongOpcodesFail) {
    auto in = buf(kCreateQpInBytes);
    ASSERT_TRUE(encode_create_qp(fw_qp(), in));
    EXPECT_EQ(decode_create_cq_in(in).error().code, Errc::InvalidArgument);
    EXPECT_EQ(decode_qp_modify_in(in).error().code, Errc::InvalidArgument);
    ASSERT_TRUE(encode_create_cq(vdpa_event_cq(), in));
    EXPECT_EQ(decode_create_qp_in(in).error().code, Errc::InvalidArgument);
}

TEST(EventQpCodec, NonzeroReservedBitsAreFound) {
    auto in = buf(kCreateCqInBytes);
    ASSERT_TRUE(encode_create_cq(vdpa_event_cq(), in));
    in[16 + 0xc8 / 8] = std::byte{1};  // cqc.reserved_at_c8
    EXPECT_EQ(create_cq_in_nonzero_reserved(in), "reserved_at_c8");
    ASSERT_TRUE(encode_create_cq(vdpa_event_cq(), in));
    in[16] |= std::byte{0x01};  // cqc bit 0x7: Linux apu_cq
    EXPECT_EQ(create_cq_in_nonzero_reserved(in), "reserved_at_7");
    ASSERT_TRUE(encode_create_cq(vdpa_event_cq(), in));
    in[100] = std::byte{1};  // after cq_umem_valid
    EXPECT_EQ(create_cq_in_nonzero_reserved(in), "reserved_at_2e1");

    auto q = buf(kCreateQpInBytes);
    ASSERT_TRUE(encode_create_qp(driver_qp(), q));
    q[0xa0 / 8] = std::byte{1};  // Linux ece: never sent by this driver
    EXPECT_EQ(create_qp_in_nonzero_reserved(q), "reserved_at_40");
    ASSERT_TRUE(encode_create_qp(driver_qp(), q));
    q[24] = std::byte{0x01};  // qpc.lag_tx_port_affinity (Linux), padding here
    EXPECT_EQ(create_qp_in_nonzero_reserved(q), "reserved_at_4");
    ASSERT_TRUE(encode_create_qp(driver_qp(), q));
    q[24 + 0x220 / 8] = std::byte{0x80};  // secondary_address_path.fl
    EXPECT_EQ(create_qp_in_nonzero_reserved(q), "reserved_at_1f0");
}

TEST(EventQpCodec, FirmwareStatusIsCheckedBeforeTheOutput) {
    auto out = buf(8);  // a failed command may return only the header
    out[0] = std::byte{0x5};  // BAD_RES_ERR
    out[7] = std::byte{0x42};
    for (auto r : {decode_create_cq_out(out), decode_create_qp_out(out)}) {
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().fw_status, 0x5);
        EXPECT_EQ(r.error().syndrome, 0x42u);
    }
    EXPECT_EQ(decode_create_cq_out(out).error().opcode, uint16_t(Opcode::CREATE_CQ));
    auto m = decode_qp_modify_out(out);
    ASSERT_FALSE(m);
    EXPECT_EQ(m.error().fw_status, 0x5);
}

TEST(EventQpCodec, CqeBytePositions) {
    Cqe c;
    c.byte_cnt = 0x11223344;
    c.qpn = 0xabcdef;
    c.wqe_counter = 0x5566;
    c.signature = 0x77;
    c.opcode = uint8_t(CqeOpcode::RESP_SEND);
    c.owner = true;
    std::array<std::byte, kCqeBytes> raw{};
    raw.fill(std::byte{0xff});  // encode zeroes the rest
    encode_cqe(c, raw);
    std::vector<std::byte> v(raw.begin(), raw.end());
    Bytes want = {{44, 0x11}, {45, 0x22}, {46, 0x33}, {47, 0x44},  // byte_cnt be32
                  {57, 0xab}, {58, 0xcd}, {59, 0xef},              // sop_drop_qpn & 0xffffff
                  {60, 0x55}, {61, 0x66},                          // wqe_counter be16
                  {62, 0x77},                                      // signature
                  {63, 0x21}};                                     // op_own: opcode << 4 | owner
    EXPECT_EQ(nonzero(v), want);
    EXPECT_EQ(decode_cqe(raw), c);

    c.opcode = uint8_t(CqeOpcode::INVALID);
    c.owner = false;
    encode_cqe(c, raw);
    EXPECT_EQ(uint8_t(raw[63]), 0xf0);
    EXPECT_EQ(decode_cqe(raw), c);
    // The hardware's sop/drop byte (56) and op_own's middle bits are not ours.
    raw[56] = std::byte{0xff};
    raw[63] |= std::byte{0x0e};
    EXPECT_EQ(decode_cqe(raw), c);
}

TEST(EventQpCodec, ArmWordAndDoorbell) {
    CqArm a{1, CqArmCmd::NEXT, 0x10};
    EXPECT_EQ(cq_arm_word(a), 0x10000010u);
    EXPECT_EQ(decode_cq_arm_word(0x10000010u), a);
    CqArm b{3, CqArmCmd::SOLICITED, 0xffffff};
    EXPECT_EQ(cq_arm_word(b), 0x31ffffffu);
    EXPECT_EQ(decode_cq_arm_word(cq_arm_word(b)), b);
    // sn wraps at 2 bits, ci at 24 (as Linux mlx5_cq_arm masks them).
    EXPECT_EQ(cq_arm_word(CqArm{4, CqArmCmd::NEXT, 0x1000001}), 0x00000001u);
    EXPECT_EQ(cq_uar_doorbell(cq_arm_word(a), 0x123456), 0x1000001000123456ull);
    EXPECT_EQ(cq_uar_doorbell(0, 0xff123456), 0x123456ull);
}

}  // namespace
}  // namespace mlx5async::prm
