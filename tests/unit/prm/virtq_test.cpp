// VIRTIO_NET_Q codec: golden command images, round trips, rejections.
//
// Golden bytes are derived by hand from the field table (prm-virtq-fields.tsv)
// and cross-checked against Linux include/linux/mlx5/mlx5_ifc.h
// (general_obj_in_cmd_hdr: opcode 0x0, obj_type 0x30, obj_id 0x40) and
// mlx5_ifc_vdpa.h (virtio_net_q_object: state 0x9c, context at 0x200), and
// DPDK 22.11 drivers/common/mlx5/mlx5_prm.h (mlx5_ifc_virtio_net_q_bits:
// tso_ipv4 0x80 .. rx_csum 0x83, queue_period_mode 0x342, queue_max_count
// 0x350 in the context). The object starts at byte 16 of the command.
#include <gtest/gtest.h>

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"
#include "common/prm/virtq.hpp"
#include "common/prm/virtq_layout.hpp"

namespace mlx5async::prm {
namespace {

namespace L = layout::virtio_net_q_object;
using Bytes = std::vector<std::byte>;

void put(Bytes& b, size_t at, std::initializer_list<uint8_t> v) {
    for (uint8_t x : v) b[at++] = std::byte{x};
}

TEST(VirtqGolden, ModifyToSuspendImage) {
    VirtqAttr a;
    a.modify_field_select = modify_bits::STATE;
    a.state = VirtqState::SUSPEND;
    Bytes in(kVirtqCmdInBytes, std::byte{0xee});
    ASSERT_TRUE(encode_modify_virtq(5, a, in));

    Bytes want(kVirtqCmdInBytes, std::byte{0});
    put(want, 0, {0x0a, 0x01});        // opcode 0xa01 MODIFY_GENERAL_OBJECT
    put(want, 6, {0x00, 0x0d});        // obj_type 0x000d VIRTIO_NET_Q
    put(want, 8, {0, 0, 0, 0x05});     // obj_id 5
    put(want, 16 + 7, {0x01});         // modify_field_select = STATE (bit 0)
    put(want, 16 + 19, {0x02});        // state nibble at object bit 0x9c = SUSPEND
    EXPECT_EQ(in, want);
}

TEST(VirtqGolden, QueryInIsHeaderOnly) {
    Bytes in(kGeneralObjInHdrBytes, std::byte{0xee});
    encode_query_virtq(0x123456, in);
    Bytes want(kGeneralObjInHdrBytes, std::byte{0});
    put(want, 0, {0x0a, 0x02, 0, 0, 0, 0, 0x00, 0x0d, 0x00, 0x12, 0x34, 0x56});
    EXPECT_EQ(in, want);
}

TEST(VirtqGolden, CreateImage) {
    VirtqAttr a;
    a.queue_feature_bit_mask_12_3 = 0x3c0;  // HOST_TSO4 HOST_TSO6 CSUM GUEST_CSUM
    a.dirty_bitmap_dump_enable = true;
    a.vhost_log_page = 12;
    a.queue_feature_bit_mask_2_0 = 0x4;  // MRG_RXBUF
    a.tisn_or_qpn = 0x123456;
    a.hw_available_index = 0x1111;
    a.hw_used_index = 0x2222;
    a.virtio_q_type = VirtqType::PACKED;
    a.event_mode = EventMode::QP;
    a.queue_index = 7;
    a.virtio_version_1_0 = true;
    a.event_qpn_or_msix = 0xabcdef;
    a.queue_size = 256;
    a.desc_addr = 0x1122334455667788;
    a.virtio_q_mkey = 0xdeadbeef;
    a.umem[0] = {0x11, 0x1000, 0};
    a.pd = 0xabc;
    a.queue_period_mode = 1;
    a.queue_period_us = 0x123;
    a.queue_max_count = 0x4567;
    a.desc_group_mkey = 0x99;
    Bytes in(kVirtqCmdInBytes, std::byte{0xee});
    ASSERT_TRUE(encode_create_virtq(a, in));

    Bytes want(kVirtqCmdInBytes, std::byte{0});
    put(want, 0, {0x0a, 0x00, 0, 0, 0, 0, 0x00, 0x0d});  // CREATE, VIRTIO_NET_Q, obj_id 0
    const size_t o = 16;                                 // object
    put(want, o + 16, {0xf0, 0x2c});      // 0x80: tso_ipv4..rx_csum; 0x8a dump, 0x8b page 12
    put(want, o + 20, {0x04, 0x12, 0x34, 0x56});  // 0xa5 mask_2_0, 0xa8 tisn_or_qpn
    put(want, o + 40, {0x11, 0x11, 0x22, 0x22});  // 0x140 hw_available, 0x150 hw_used
    const size_t c = o + 64;                      // virtio_q_context (0x200)
    put(want, c + 0, {0x01, 0x01, 0x00, 0x07});   // type PACKED, event_mode QP, queue_index 7
    put(want, c + 4, {0x40, 0xab, 0xcd, 0xef});   // version_1_0 (0x21), event_qpn_or_msix
    put(want, c + 10, {0x01, 0x00});              // queue_size 256 at ctx 0x50
    put(want, c + 16, {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88});  // desc_addr 0x80
    put(want, c + 40, {0xde, 0xad, 0xbe, 0xef});  // virtio_q_mkey 0x140
    put(want, c + 48, {0, 0, 0, 0x11, 0, 0, 0x10, 0});  // umem_1_id, umem_1_size 0x180
    put(want, c + 101, {0x00, 0x0a, 0xbc});            // pd 0x328
    put(want, c + 104, {0x11, 0x23, 0x45, 0x67});      // DPDK queue_period_*, 0x342..0x35f
    put(want, c + 108, {0, 0, 0, 0x99});               // desc_group_mkey 0x360
    EXPECT_EQ(in, want);
}

// The fields a CREATE takes from the entries that made its umems, counters
// and event QP: encoded with zeros, then filled, it is the image encoded
// with those ids.
TEST(VirtqGolden, CreateIdFieldsFilledLaterGiveTheSameImage) {
    VirtqAttr a;
    a.queue_size = 256;
    a.event_mode = EventMode::QP;
    a.umem = {{{0, 0x1000, 0}, {0, 0x2000, 0}, {0, 0x3000, 0}}};
    VirtqAttr b = a;
    b.umem[0].id = 0x11;
    b.umem[1].id = 0x22;
    b.umem[2].id = 0x33;
    b.counter_set_id = 0x44;
    b.event_qpn_or_msix = 0x55;
    Bytes in(kVirtqCmdInBytes), want(kVirtqCmdInBytes);
    ASSERT_TRUE(encode_create_virtq(a, in));
    ASSERT_TRUE(encode_create_virtq(b, want));
    const VirtqCreateIdFields& f = virtq_create_id_fields();
    for (uint32_t n = 0; n < 3; n++) set_bits(in, f.umem_id[n].bit_offset, f.umem_id[n].bit_width, 0x11 * (n + 1));
    set_bits(in, f.counter_set_id.bit_offset, f.counter_set_id.bit_width, 0x44);
    set_bits(in, f.event_qpn.bit_offset, f.event_qpn.bit_width, 0x55);
    EXPECT_EQ(in, want);
}

TEST(VirtqGolden, QueryOutImageDecodes) {
    Bytes out(kVirtqQueryOutBytes, std::byte{0});
    put(out, 8, {0, 0, 0, 0x2a});             // out hdr obj_id
    put(out, 16 + 19, {0x01});                // state RDY
    put(out, 16 + 40, {0x01, 0x02, 0x03, 0x04});  // hw_available 0x102, hw_used 0x304
    put(out, 16 + 64 + 2, {0x00, 0x09});      // queue_index 9
    put(out, 16 + 64 + 47, {0x05});           // error_type at ctx 0x178
    auto a = decode_query_virtq_out(out, 0x2a, 9);
    ASSERT_TRUE(a) << to_string(a.error());
    EXPECT_EQ(a->state, VirtqState::RDY);
    EXPECT_EQ(a->hw_available_index, 0x102);
    EXPECT_EQ(a->hw_used_index, 0x304);
    EXPECT_EQ(a->queue_index, 9);
    EXPECT_EQ(a->error_type, 5);
    VirtqAttr rest = *a;
    rest.state = VirtqState::INIT;
    rest.hw_available_index = rest.hw_used_index = rest.queue_index = 0;
    rest.error_type = 0;
    EXPECT_EQ(rest, VirtqAttr{});
}

TEST(VirtqDecode, FirmwareStatusBecomesErrorWithQueue) {
    Bytes out(kVirtqQueryOutBytes, std::byte{0});
    put(out, 0, {0x09, 0, 0, 0, 0x00, 0x00, 0x12, 0x34});
    auto a = decode_query_virtq_out(out, 0x12, 3);
    ASSERT_FALSE(a);
    EXPECT_EQ(a.error().code, Errc::Firmware);
    EXPECT_EQ(a.error().fw_status, 0x9);
    EXPECT_EQ(a.error().syndrome, 0x1234u);
    EXPECT_EQ(a.error().opcode, uint16_t(Opcode::QUERY_GENERAL_OBJECT));
    EXPECT_EQ(a.error().queue, 3);
    EXPECT_EQ(describe(a.error()),
              "QUERY_GENERAL_OBJECT obj 0x12 queue 3: BAD_RES_STATE_ERR (0x9) syndrome 0x1234");
}

// Every VirtqAttr member with its field, so tests can set it to any value.
struct Member {
    const Field& field;
    std::function<void(VirtqAttr&, uint64_t)> set;
};

std::vector<Member> members() {
    return {
        {L::modify_field_select, [](VirtqAttr& a, uint64_t v) { a.modify_field_select = v; }},
        {L::vhca_id, [](VirtqAttr& a, uint64_t v) { a.vhca_id = uint16_t(v); }},
        {L::queue_feature_bit_mask_12_3,
         [](VirtqAttr& a, uint64_t v) { a.queue_feature_bit_mask_12_3 = uint16_t(v); }},
        {L::dirty_bitmap_dump_enable, [](VirtqAttr& a, uint64_t v) { a.dirty_bitmap_dump_enable = v; }},
        {L::vhost_log_page, [](VirtqAttr& a, uint64_t v) { a.vhost_log_page = uint8_t(v); }},
        {L::state, [](VirtqAttr& a, uint64_t v) { a.state = VirtqState(v); }},
        {L::queue_feature_bit_mask_2_0,
         [](VirtqAttr& a, uint64_t v) { a.queue_feature_bit_mask_2_0 = uint8_t(v); }},
        {L::tisn_or_qpn, [](VirtqAttr& a, uint64_t v) { a.tisn_or_qpn = uint32_t(v); }},
        {L::dirty_bitmap_mkey, [](VirtqAttr& a, uint64_t v) { a.dirty_bitmap_mkey = uint32_t(v); }},
        {L::dirty_bitmap_size, [](VirtqAttr& a, uint64_t v) { a.dirty_bitmap_size = uint32_t(v); }},
        {L::dirty_bitmap_addr, [](VirtqAttr& a, uint64_t v) { a.dirty_bitmap_addr = v; }},
        {L::hw_available_index, [](VirtqAttr& a, uint64_t v) { a.hw_available_index = uint16_t(v); }},
        {L::hw_used_index, [](VirtqAttr& a, uint64_t v) { a.hw_used_index = uint16_t(v); }},
        {L::virtio_q_type, [](VirtqAttr& a, uint64_t v) { a.virtio_q_type = VirtqType(v); }},
        {L::event_mode, [](VirtqAttr& a, uint64_t v) { a.event_mode = EventMode(v); }},
        {L::queue_index, [](VirtqAttr& a, uint64_t v) { a.queue_index = uint16_t(v); }},
        {L::full_emulation, [](VirtqAttr& a, uint64_t v) { a.full_emulation = v; }},
        {L::virtio_version_1_0, [](VirtqAttr& a, uint64_t v) { a.virtio_version_1_0 = v; }},
        {L::offload_type, [](VirtqAttr& a, uint64_t v) { a.offload_type = uint8_t(v); }},
        {L::event_qpn_or_msix, [](VirtqAttr& a, uint64_t v) { a.event_qpn_or_msix = uint32_t(v); }},
        {L::doorbell_stride_index,
         [](VirtqAttr& a, uint64_t v) { a.doorbell_stride_index = uint16_t(v); }},
        {L::queue_size, [](VirtqAttr& a, uint64_t v) { a.queue_size = uint16_t(v); }},
        {L::device_emulation_id, [](VirtqAttr& a, uint64_t v) { a.device_emulation_id = uint32_t(v); }},
        {L::desc_addr, [](VirtqAttr& a, uint64_t v) { a.desc_addr = v; }},
        {L::used_addr, [](VirtqAttr& a, uint64_t v) { a.used_addr = v; }},
        {L::available_addr, [](VirtqAttr& a, uint64_t v) { a.available_addr = v; }},
        {L::virtio_q_mkey, [](VirtqAttr& a, uint64_t v) { a.virtio_q_mkey = uint32_t(v); }},
        {L::max_tunnel_desc, [](VirtqAttr& a, uint64_t v) { a.max_tunnel_desc = uint16_t(v); }},
        {L::error_type, [](VirtqAttr& a, uint64_t v) { a.error_type = uint8_t(v); }},
        {L::umem_1_id, [](VirtqAttr& a, uint64_t v) { a.umem[0].id = uint32_t(v); }},
        {L::umem_1_size, [](VirtqAttr& a, uint64_t v) { a.umem[0].size = uint32_t(v); }},
        {L::umem_1_offset, [](VirtqAttr& a, uint64_t v) { a.umem[0].offset = v; }},
        {L::umem_2_id, [](VirtqAttr& a, uint64_t v) { a.umem[1].id = uint32_t(v); }},
        {L::umem_2_size, [](VirtqAttr& a, uint64_t v) { a.umem[1].size = uint32_t(v); }},
        {L::umem_2_offset, [](VirtqAttr& a, uint64_t v) { a.umem[1].offset = v; }},
        {L::umem_3_id, [](VirtqAttr& a, uint64_t v) { a.umem[2].id = uint32_t(v); }},
        {L::umem_3_size, [](VirtqAttr& a, uint64_t v) { a.umem[2].size = uint32_t(v); }},
        {L::umem_3_offset, [](VirtqAttr& a, uint64_t v) { a.umem[2].offset = v; }},
        {L::counter_set_id, [](VirtqAttr& a, uint64_t v) { a.counter_set_id = uint32_t(v); }},
        {L::pd, [](VirtqAttr& a, uint64_t v) { a.pd = uint32_t(v); }},
        {L::dpdk::queue_period_mode, [](VirtqAttr& a, uint64_t v) { a.queue_period_mode = uint8_t(v); }},
        {L::dpdk::queue_period_us, [](VirtqAttr& a, uint64_t v) { a.queue_period_us = uint16_t(v); }},
        {L::dpdk::queue_max_count, [](VirtqAttr& a, uint64_t v) { a.queue_max_count = uint16_t(v); }},
        {L::desc_group_mkey, [](VirtqAttr& a, uint64_t v) { a.desc_group_mkey = uint32_t(v); }},
    };
}

size_t popcount(const Bytes& b) {
    size_t n = 0;
    for (std::byte x : b) n += std::bitset<8>(static_cast<uint8_t>(x)).count();
    return n;
}

TEST(VirtqRoundTrip, EveryFieldAloneAtMaximum) {
    for (const Member& m : members()) {
        VirtqAttr a;
        m.set(a, width_mask(m.field.bit_width));
        Bytes obj(kVirtqObjBytes);
        ASSERT_TRUE(write_virtq_object(a, obj)) << m.field.name;
        // Exactly the field's bits are set, all of them.
        EXPECT_EQ(popcount(obj), m.field.bit_width) << m.field.name;
        EXPECT_EQ(get_bits(obj, m.field.bit_offset, m.field.bit_width), width_mask(m.field.bit_width))
            << m.field.name;
        auto back = read_virtq_object(obj);
        ASSERT_TRUE(back);
        EXPECT_EQ(*back, a) << m.field.name;
        EXPECT_EQ(virtq_object_nonzero_reserved(obj), "") << m.field.name;
    }
}

TEST(VirtqRoundTrip, AllFieldsAtMaximum) {
    VirtqAttr a;
    for (const Member& m : members()) m.set(a, width_mask(m.field.bit_width));
    Bytes obj(kVirtqObjBytes);
    ASSERT_TRUE(write_virtq_object(a, obj));
    auto back = read_virtq_object(obj);
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, a);
    EXPECT_EQ(virtq_object_nonzero_reserved(obj), "");
    size_t bits = 0;
    for (const Member& m : members()) bits += m.field.bit_width;
    EXPECT_EQ(popcount(obj), bits);  // and no padding bit
}

TEST(VirtqRoundTrip, EveryValueFieldOfTheTableIsAMember) {
    size_t values = 0;
    for (const Field* f : layout::kVirtioNetQObject.fields) values += !f->reserved();
    EXPECT_EQ(members().size(), values + std::size(L::kCarried));
}

TEST(VirtqWrite, OverWideValueRejectedNamingTheField) {
    struct Case {
        std::function<void(VirtqAttr&)> set;
        const char* field;
    };
    const Case cases[] = {
        {[](VirtqAttr& a) { a.state = VirtqState(0x10); }, "virtio_net_q_object.state: value 0x10"},
        {[](VirtqAttr& a) { a.pd = 1u << 24; }, "virtio_net_q_object.virtio_q_context.pd:"},
        {[](VirtqAttr& a) { a.event_mode = EventMode(8); }, "virtio_q_context.event_mode:"},
        {[](VirtqAttr& a) { a.tisn_or_qpn = 0x1000000; }, "virtio_net_q_object.tisn_or_qpn:"},
        {[](VirtqAttr& a) { a.queue_feature_bit_mask_12_3 = 0x400; }, "queue_feature_bit_mask_12_3:"},
        {[](VirtqAttr& a) { a.queue_period_us = 0x1000; }, "virtio_q_context.queue_period_us:"},
        {[](VirtqAttr& a) { a.vhost_log_page = 32; }, "vhost_log_page: value 0x20 does not fit 5 bits"},
    };
    for (const Case& c : cases) {
        VirtqAttr a;
        c.set(a);
        Bytes obj(kVirtqObjBytes, std::byte{0xee});
        auto r = write_virtq_object(a, obj);
        ASSERT_FALSE(r) << c.field;
        EXPECT_EQ(r.error().code, Errc::InvalidArgument);
        EXPECT_NE(r.error().what.find(c.field), std::string::npos) << r.error().what;
        EXPECT_EQ(obj, Bytes(kVirtqObjBytes, std::byte{0xee})) << "buffer untouched";
        Bytes in(kVirtqCmdInBytes);
        EXPECT_FALSE(encode_create_virtq(a, in));
    }
}

TEST(VirtqWrite, ModifyRejectsUnknownSelectBits) {
    VirtqAttr a;
    a.modify_field_select = modify_bits::STATE | (1ull << 1);
    Bytes in(kVirtqCmdInBytes);
    auto r = encode_modify_virtq(1, a, in);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::InvalidArgument);
    EXPECT_NE(r.error().what.find("modify_field_select: unknown bits 0x2"), std::string::npos);
    a.modify_field_select = modify_bits::kAllKnown;
    EXPECT_TRUE(encode_modify_virtq(1, a, in));
}

TEST(VirtqDecode, ShortBuffersFailWithSizes) {
    Bytes obj(kVirtqObjBytes - 1);
    auto r = read_virtq_object(obj);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::ShortBuffer);
    EXPECT_NE(r.error().what.find("virtio_net_q_object: buffer of 191 bytes, need 192"),
              std::string::npos)
        << r.error().what;

    Bytes out(kVirtqQueryOutBytes - 4);  // status OK, object truncated
    auto q = decode_query_virtq_out(out, 7, 2);
    ASSERT_FALSE(q);
    EXPECT_EQ(q.error().code, Errc::ShortBuffer);
    EXPECT_EQ(q.error().queue, 2);
    EXPECT_EQ(q.error().obj_id, 7u);
    EXPECT_NE(q.error().what.find("need 208"), std::string::npos) << q.error().what;

    Bytes tiny(4);
    EXPECT_EQ(decode_query_virtq_out(tiny).error().code, Errc::ShortBuffer);
    EXPECT_EQ(write_virtq_object(VirtqAttr{}, obj).error().code, Errc::ShortBuffer);
    Bytes in(kVirtqCmdInBytes - 1);
    EXPECT_EQ(encode_create_virtq(VirtqAttr{}, in).error().code, Errc::ShortBuffer);
    EXPECT_EQ(encode_modify_virtq(1, VirtqAttr{}, in).error().code, Errc::ShortBuffer);
}

TEST(VirtqReserved, NonzeroPaddingIsNamedCarriedBitsAreNot) {
    Bytes obj(kVirtqObjBytes);
    ASSERT_TRUE(write_virtq_object(VirtqAttr{}, obj));
    EXPECT_EQ(virtq_object_nonzero_reserved(obj), "");
    set_bits(obj, 0xa0, 1, 1);
    EXPECT_EQ(virtq_object_nonzero_reserved(obj), "reserved_at_a0");
    set_bits(obj, 0xa0, 1, 0);
    set_bits(obj, 0x200 + 0x340, 2, 3);  // DPDK's reserved_at_340[2]: padding for both
    EXPECT_EQ(virtq_object_nonzero_reserved(obj), "reserved_at_340");
    EXPECT_EQ(virtq_object_nonzero_reserved(Bytes(10)), "virtio_net_q_object (short buffer)");
}

// Every one of the object's 1536 bits alone: named exactly when it lies in a
// reserved field that no carried field covers (the check is a precomputed
// mask; this walks the layout instead).
TEST(VirtqReserved, EveryBitAloneIsNamedIffReservedAndNotCarried) {
    auto owner = [](uint32_t bit, auto&& fields, bool want_reserved) -> const Field* {
        for (const Field* f : fields)
            if (f->reserved() == want_reserved && bit >= f->bit_offset && bit < f->end()) return f;
        return nullptr;
    };
    size_t named = 0;
    for (uint32_t bit = 0; bit < kVirtqObjBytes * 8; ++bit) {
        Bytes obj(kVirtqObjBytes);
        set_bits(obj, bit, 1, 1);
        const Field* reserved = owner(bit, layout::kVirtioNetQObject.fields, true);
        bool carried = false;
        for (const Field* f : L::kCarried) carried |= bit >= f->bit_offset && bit < f->end();
        std::string_view want = reserved && !carried ? reserved->name : std::string_view{};
        ASSERT_EQ(virtq_object_nonzero_reserved(obj), want) << "bit 0x" << std::hex << bit;
        named += !want.empty();
    }
    EXPECT_GT(named, 0u);
}

TEST(VirtqFeatures, VirtioFeatureBitsMapToPrmMask) {
    // VIRTIO_NET_F_CSUM 0, GUEST_CSUM 1, HOST_TSO4 11, HOST_TSO6 12, MRG_RXBUF 15.
    uint64_t f = (1ull << 0) | (1ull << 1) | (1ull << 11) | (1ull << 12) | (1ull << 15);
    uint16_t m = queue_feature_mask(f);
    EXPECT_EQ(m, (1u << 10) | (1u << 9) | (1u << 12) | (1u << 11) | (1u << 2));
    EXPECT_EQ(queue_feature_mask_12_3(m), 0x3c0);  // DPDK tso_ipv4..rx_csum
    EXPECT_EQ(queue_feature_mask_2_0(m), 0x4);
    EXPECT_EQ(queue_feature_mask(1ull << 32), 0);  // VIRTIO_F_VERSION_1 has no mask bit
    EXPECT_EQ(virtio_net_features_of(m), f);
}

TEST(VirtqFeatures, EveryPrmMaskBitMapsBackToOneVirtioFeature) {
    // The 13-bit mask (caps device_features_bits_mask uses the same numbering).
    for (unsigned b = 0; b < 13; b++) {
        uint64_t f = virtio_net_features_of(uint16_t(1u << b));
        bool defined = b == 2 || b == 4 || (b >= 6 && b <= 12);
        EXPECT_EQ(f != 0, defined) << b;
        if (defined) {
            EXPECT_EQ(f & (f - 1), 0u) << b;  // exactly one feature
            EXPECT_EQ(queue_feature_mask(f), 1u << b) << b;
        }
    }
    EXPECT_EQ(virtio_net_features_of(1u << 12), 1ull << 11);  // HOST_TSO4 (DPDK tso_ipv4)
    EXPECT_EQ(virtio_net_features_of(1u << 9), 1ull << 1);    // GUEST_CSUM (DPDK rx_csum)
}

TEST(VirtqStateName, NamesFollowThePrm) {
    EXPECT_STREQ(virtq_state_name(VirtqState::INIT), "INIT");
    EXPECT_STREQ(virtq_state_name(VirtqState::SUSPEND), "SUSPEND");
    EXPECT_STREQ(virtq_state_name(VirtqState(7)), "UNKNOWN_STATE");
}

}  // namespace
}  // namespace mlx5async::prm
