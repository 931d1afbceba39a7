// Transport domain and TIS commands. Golden bytes derived by hand from the
// offsets in transport_layout.hpp (Linux mlx5_ifc.h: transport_domain and
// tisn at 0x48 -> bytes 9..11; tisc at 0x100 -> byte 32; tisc.prio at 0xc
// -> byte 33 low nibble; tisc.transport_domain at 0x128 -> bytes 37..39;
// tisc.pd at 0x168 -> bytes 32+45..47).
#include "common/prm/transport.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "common/prm/field.hpp"
#include "common/prm/transport_layout.hpp"

namespace mlx5async::prm {
namespace {

std::vector<std::byte> buf(size_t n) { return std::vector<std::byte>(n); }
uint8_t at(const std::vector<std::byte>& b, size_t i) { return uint8_t(b[i]); }

TEST(TransportCodec, AllocAndDeallocTransportDomainGolden) {
    auto in = buf(kTransportCmdBytes);
    encode_alloc_transport_domain(in);
    EXPECT_EQ(at(in, 0), 0x08);
    EXPECT_EQ(at(in, 1), 0x16);
    auto out = buf(kTransportCmdBytes);
    encode_alloc_transport_domain_out(0x123456, out);
    EXPECT_EQ(at(out, 9), 0x12);
    EXPECT_EQ(at(out, 10), 0x34);
    EXPECT_EQ(at(out, 11), 0x56);
    EXPECT_EQ(*decode_alloc_transport_domain_out(out), 0x123456u);
    auto d = buf(kTransportCmdBytes);
    encode_dealloc_transport_domain(0xabcdef, d);
    EXPECT_EQ(at(d, 0), 0x08);
    EXPECT_EQ(at(d, 1), 0x17);
    EXPECT_EQ(*decode_dealloc_transport_domain_in(d), 0xabcdefu);
}

TEST(TransportCodec, CreateTisGoldenAndRoundTrip) {
    TisAttr a;
    a.transport_domain = 0x0a0b0c;
    a.pd = 0x010203;
    a.prio = 0x5;
    auto in = buf(kCreateTisInBytes);
    ASSERT_TRUE(encode_create_tis(a, in));
    EXPECT_EQ(at(in, 0), 0x09);
    EXPECT_EQ(at(in, 1), 0x12);
    EXPECT_EQ(at(in, 32 + 1) & 0x0f, 0x5);  // prio
    EXPECT_EQ(at(in, 32 + 37), 0x0a);       // transport_domain
    EXPECT_EQ(at(in, 32 + 38), 0x0b);
    EXPECT_EQ(at(in, 32 + 39), 0x0c);
    EXPECT_EQ(at(in, 32 + 45), 0x01);       // pd
    EXPECT_EQ(at(in, 32 + 47), 0x03);
    auto back = decode_create_tis_in(in);
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, a);
    EXPECT_TRUE(create_tis_in_nonzero_reserved(in).empty());
}

TEST(TransportCodec, EveryTisFieldAtItsMaximumRoundTrips) {
    TisAttr a{0xffffff, 0xffffff, 0xffffff, 0xf, 0xf, true, true};
    auto in = buf(kCreateTisInBytes);
    ASSERT_TRUE(encode_create_tis(a, in));
    EXPECT_EQ(*decode_create_tis_in(in), a);
    EXPECT_TRUE(create_tis_in_nonzero_reserved(in).empty());
}

TEST(TransportCodec, OverWideValuesAreRejectedNamingTheField) {
    TisAttr a;
    a.transport_domain = 1u << 24;
    auto in = buf(kCreateTisInBytes);
    auto r = encode_create_tis(a, in);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().what.find("transport_domain"), std::string::npos);
}

TEST(TransportCodec, ReservedBitsAreFound) {
    auto in = buf(kCreateTisInBytes);
    ASSERT_TRUE(encode_create_tis({}, in));
    in[32 + 20] = std::byte{1};  // inside tisc.reserved_at_20
    EXPECT_EQ(create_tis_in_nonzero_reserved(in), "reserved_at_20");
}

TEST(TransportCodec, ShortBuffersAndWrongOpcodesFail) {
    auto small = buf(8);
    EXPECT_EQ(decode_create_tis_in(small).error().code, Errc::ShortBuffer);
    EXPECT_EQ(decode_destroy_tis_in(small).error().code, Errc::ShortBuffer);
    EXPECT_EQ(decode_alloc_transport_domain_out(small).error().code, Errc::ShortBuffer);
    auto in = buf(kTransportCmdBytes);
    encode_destroy_tis(7, in);
    EXPECT_EQ(*decode_destroy_tis_in(in), 7u);
    EXPECT_FALSE(decode_dealloc_transport_domain_in(in));  // DESTROY_TIS is not DEALLOC_TD
}

TEST(TransportCodec, FirmwareStatusInOutputIsAnError) {
    auto out = buf(kTransportCmdBytes);
    encode_create_tis_out(3, out);
    out[0] = std::byte{0x5};  // BAD_RES_ERR
    auto r = decode_create_tis_out(out);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().fw_status, 0x5);
}

}  // namespace
}  // namespace mlx5async::prm
