// QUERY_NIC_VPORT_CONTEXT codec. Offsets as read off Linux mlx5_ifc.h
// (mlx5_ifc_query_nic_vport_context_in/out_bits, nic_vport_context_bits);
// DPDK 22.11 mlx5_prm.h agrees on every field it names.
#include <gtest/gtest.h>

#include <vector>

#include "common/prm/status.hpp"
#include "common/prm/vport.hpp"
#include "common/prm/vport_layout.hpp"

namespace mlx5async::prm {
namespace {

using Bytes = std::vector<std::byte>;

TEST(NicVportContext, FieldsSitWhereMlx5IfcPutsThem) {
    namespace O = layout::query_nic_vport_context_out;
    namespace I = layout::query_nic_vport_context_in;
    // nic_vport_context starts at 0x80 of the output.
    EXPECT_EQ(O::mtu.bit_offset, 0x80u + 0x130u);
    EXPECT_EQ(O::mtu.bit_width, 16u);
    EXPECT_EQ(O::permanent_mac_47_32.bit_offset, 0x80u + 0x7a0u + 0x10u);
    EXPECT_EQ(O::promisc_uc.bit_offset, 0x80u + 0x780u);
    EXPECT_EQ(I::vport_number.bit_offset, 0x50u);
    EXPECT_EQ(I::allowed_list_type.bit_offset, 0x65u);
}

TEST(NicVportContext, InputIsTheOpcodeAlone) {
    Bytes in(kQueryNicVportContextInBytes, std::byte{0xaa});
    encode_query_nic_vport_context(in);
    Bytes want(kQueryNicVportContextInBytes);
    want[0] = std::byte{0x07};
    want[1] = std::byte{0x54};
    EXPECT_EQ(in, want);
    bool other = true;
    auto v = decode_query_nic_vport_context_in(in, other);
    ASSERT_TRUE(v);
    EXPECT_EQ(*v, 0);
    EXPECT_FALSE(other);
    in[10] = std::byte{0x01};  // vport_number 0x100
    in[8] = std::byte{0x80};   // other_vport
    v = decode_query_nic_vport_context_in(in, other);
    ASSERT_TRUE(v);
    EXPECT_EQ(*v, 0x100);
    EXPECT_TRUE(other);
    in[15] = std::byte{1};  // reserved_at_68
    EXPECT_FALSE(decode_query_nic_vport_context_in(in, other));
    EXPECT_FALSE(decode_query_nic_vport_context_in(std::span(in).first(8), other));
}

TEST(NicVportContext, OutputCarriesMtuAndMacAtTheirBytes) {
    Bytes out(kQueryNicVportContextOutBytes);
    encode_query_nic_vport_context_out({.mtu = 1522, .permanent_mac = 0x0200c0ffee01}, out);
    EXPECT_EQ(out[54], std::byte{0x05});  // 0x1b0 / 8: 1522 = 0x05f2
    EXPECT_EQ(out[55], std::byte{0xf2});
    EXPECT_EQ(out[0x836 / 8], std::byte{0x02});  // mac_addr_47_32 at 0x830
    EXPECT_EQ(out[0x858 / 8], std::byte{0x01});  // the last byte of mac_addr_31_0
    auto c = decode_query_nic_vport_context_out(out);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->mtu, 1522);
    EXPECT_EQ(c->permanent_mac, 0x0200c0ffee01u);
    out[0] = std::byte(uint8_t(Status::BAD_PARAM_ERR));
    auto e = decode_query_nic_vport_context_out(out);
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().opcode, 0x754);
    EXPECT_FALSE(decode_query_nic_vport_context_out(Bytes(16)));
}

}  // namespace
}  // namespace mlx5async::prm
