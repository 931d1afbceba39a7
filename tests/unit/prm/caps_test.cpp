// QUERY_HCA_CAP codec: golden images and round trips.
//
// Offsets cross-checked against Linux include/linux/mlx5/mlx5_ifc.h
// (mlx5_ifc_cmd_hca_cap_bits: vhca_id 0x30, event_cap 0x90, eth_net_offloads
// 0x21c, umem_uid_0 0x252, log_max_pd 0x32b, general_obj_types 0x400;
// mlx5_ifc_query_hca_cap_in_bits: op_mod 0x30) and, for
// virtio_emulation_cap, Linux mlx5_ifc.h plus DPDK 22.11 mlx5_prm.h
// (tso_ipv4 0x3 = top bit of device_features_bits_mask, max_num_virtio_queues
// 0x88, umem_1_buffer_param_a 0x100).
#include <gtest/gtest.h>

#include <vector>

#include "common/prm/caps.hpp"
#include "common/prm/caps_layout.hpp"
#include "common/prm/opcodes.hpp"

namespace mlx5async::prm {
namespace {

using Bytes = std::vector<std::byte>;

void put(Bytes& b, size_t at, std::initializer_list<uint8_t> v) {
    for (uint8_t x : v) b[at++] = std::byte{x};
}

TEST(CapsGolden, QueryHcaCapInForVirtioEmulation) {
    Bytes in(kQueryHcaCapInBytes, std::byte{0xee});
    encode_query_hca_cap(cap_op_mod(kCapTypeVirtioEmulation), in);
    Bytes want(kQueryHcaCapInBytes, std::byte{0});
    put(want, 0, {0x01, 0x00});  // opcode 0x100 QUERY_HCA_CAP
    put(want, 6, {0x00, 0x27});  // op_mod (0x13 << 1) | current
    EXPECT_EQ(in, want);
    EXPECT_EQ(cap_op_mod(kCapTypeGeneral, false), 0);
}

GeneralCaps sample_general() {
    GeneralCaps c;
    c.vhca_id = 0x1234;
    c.event_cap = true;
    c.eth_net_offloads = true;
    c.umem_uid_0 = true;
    c.log_max_pd = 0x17;
    c.general_obj_types = (1ull << 13) | (1ull << 0x1c);
    return c;
}

Bytes general_image() {
    Bytes cap(kCapLayoutBytes, std::byte{0});
    put(cap, 6, {0x12, 0x34});  // vhca_id at 0x30
    put(cap, 0x12, {0x80});     // event_cap 0x90: byte 0x12, msb
    put(cap, 0x43, {0x08});     // eth_net_offloads 0x21c: byte 0x43, bit 4 from msb
    put(cap, 0x4a, {0x20});     // umem_uid_0 0x252: byte 0x4a, bit 2 from msb
    put(cap, 0x65, {0x17});     // log_max_pd 0x32b..0x32f: low 5 bits of byte 0x65
    put(cap, 0x84, {0x10, 0x00, 0x20, 0x00});  // general_obj_types bits 0x1c and 13
    return cap;
}

TEST(CapsGolden, GeneralCapsImage) {
    Bytes cap(kCapLayoutBytes, std::byte{0xee});
    write_general_caps(sample_general(), cap);
    EXPECT_EQ(cap, general_image());
    auto back = read_general_caps(general_image());
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, sample_general());
    EXPECT_TRUE(back->has_obj_type(uint16_t(ObjType::VIRTIO_NET_Q)));
    EXPECT_TRUE(back->has_obj_type(uint16_t(ObjType::VIRTIO_Q_COUNTERS)));
    EXPECT_FALSE(back->has_obj_type(12));
    EXPECT_FALSE(back->has_obj_type(64));
}

TEST(CapsGolden, VirtioEmulationImage) {
    VirtioEmulationCaps c;
    c.virtio_version_1_0 = true;
    c.device_features_bits_mask = 1u << 12;  // HOST_TSO4 = DPDK tso_ipv4 at 0x3
    c.event_mode = 0x3;
    c.virtio_queue_type = 0x1;
    c.log_doorbell_stride = 2;
    c.virtio_q_index_modify = true;  // DPDK 0x3a
    c.log_doorbell_bar_size = 0x11;
    c.doorbell_bar_offset = 0x10000;
    c.max_num_virtio_queues = 0x000100;
    c.desc_group_mkey_supported = true;
    c.freeze_to_rdy_supported = true;
    c.umem_param[0] = {128, 4096};
    Bytes cap(kCapLayoutBytes, std::byte{0xee});
    write_virtio_emulation_caps(c, cap);

    Bytes want(kCapLayoutBytes, std::byte{0});
    put(want, 0, {0x30, 0x00, 0x03, 0x01});  // version_1_0 (bit 2), tso_ipv4 (bit 3); modes
    put(want, 6, {0x02, 0x31});              // log_doorbell_stride; 0x3a flag, bar size 0x11
    put(want, 8, {0, 0, 0, 0, 0, 0x01, 0, 0});  // doorbell_bar_offset
    put(want, 0x10, {0x00, 0x00, 0x01, 0x00});  // max_num_virtio_queues at 0x88
    put(want, 0x1a, {0x18});                    // 0xd3 desc_group_mkey, 0xd4 freeze_to_rdy
    put(want, 0x20, {0, 0, 0, 0x80, 0, 0, 0x10, 0});  // umem_1 param a, b
    EXPECT_EQ(cap, want);
    auto back = read_virtio_emulation_caps(want);
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, c);
    EXPECT_EQ(back->umem_size(0, 256), 128u * 256 + 4096);
}

TEST(CapsRoundTrip, EveryFieldAtMaximum) {
    GeneralCaps g{0xffff, 0x1f, true, true, true, ~0ull};
    Bytes cap(kCapLayoutBytes);
    write_general_caps(g, cap);
    EXPECT_EQ(*read_general_caps(cap), g);
    EXPECT_EQ(first_nonzero_reserved(layout::kCmdHcaCap, cap), nullptr);

    VirtioEmulationCaps v;
    v.desc_tunnel_offload_type = v.eth_frame_offload_type = v.virtio_version_1_0 = true;
    v.device_features_bits_mask = 0x1fff;
    v.event_mode = v.virtio_queue_type = 0xff;
    v.max_tunnel_desc = 0xffff;
    v.log_doorbell_stride = v.log_doorbell_bar_size = 0x1f;
    v.doorbell_bar_offset = ~0ull;
    v.max_emulated_devices = 0xff;
    v.max_num_virtio_queues = 0xffffff;
    v.vnet_modify_ext = v.virtio_net_q_addr_modify = v.virtio_q_index_modify = true;
    v.desc_group_mkey_supported = v.freeze_to_rdy_supported = true;
    for (auto& p : v.umem_param) p = {0xffffffff, 0xffffffff};
    write_virtio_emulation_caps(v, cap);
    EXPECT_EQ(*read_virtio_emulation_caps(cap), v);
    // Only reserved_at_38 (the DPDK flags) among the padding is non-zero.
    EXPECT_EQ(first_nonzero_reserved(layout::kVirtioEmulationCap, cap),
              &layout::virtio_emulation_cap::reserved_at_38);
}

Bytes query_out(uint8_t status, const Bytes& cap) {
    Bytes out(16 + cap.size(), std::byte{0});
    out[0] = std::byte{status};
    put(out, 4, {0xaa, 0xbb, 0xcc, 0xdd});
    std::copy(cap.begin(), cap.end(), out.begin() + 16);
    return out;
}

TEST(CapsDecode, QueryOutCarriesCapsAtByte16) {
    Bytes full(kQueryHcaCapOutBytes, std::byte{0});
    Bytes img = general_image();
    std::copy(img.begin(), img.end(), full.begin() + 16);
    auto g = decode_query_general_caps_out(full);
    ASSERT_TRUE(g);
    EXPECT_EQ(*g, sample_general());
}

TEST(CapsDecode, FirmwareErrorAndShortBuffers) {
    auto e = decode_query_virtio_caps_out(query_out(0x2, Bytes(kCapLayoutBytes)));
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().code, Errc::Firmware);
    EXPECT_EQ(e.error().opcode, uint16_t(Opcode::QUERY_HCA_CAP));
    EXPECT_EQ(e.error().syndrome, 0xaabbccddu);

    auto s = decode_query_general_caps_out(query_out(0, Bytes(kCapLayoutBytes - 1)));
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, Errc::ShortBuffer);
    EXPECT_NE(s.error().what.find("cmd_hca_cap"), std::string::npos);
    EXPECT_NE(s.error().what.find("271 bytes, need 272"), std::string::npos) << s.error().what;
    EXPECT_EQ(read_virtio_emulation_caps(Bytes(16)).error().code, Errc::ShortBuffer);
    EXPECT_EQ(read_general_caps(Bytes(255)).error().code, Errc::ShortBuffer);
}

TEST(CapsWriteDeathTest, OverWideValueAbortsNamingTheField) {
    GeneralCaps g;
    g.log_max_pd = 0x20;
    Bytes cap(kCapLayoutBytes);
    EXPECT_DEATH(write_general_caps(g, cap), "cmd_hca_cap.log_max_pd: value 0x20 does not fit 5 bits");
    VirtioEmulationCaps v;
    v.max_num_virtio_queues = 1u << 24;
    EXPECT_DEATH(write_virtio_emulation_caps(v, cap), "max_num_virtio_queues");
    Bytes small(10);
    EXPECT_DEATH(write_general_caps(GeneralCaps{}, small), "buffer of 10 bytes, need 256");
}

}  // namespace
}  // namespace mlx5async::prm
