// Checksum offload in the emulated loopback (virtio 1.x §5.1.6.2 transmit,
// §5.1.6.4 receive), with features set the way the PMD sets them: virtio bits
// -> prm::queue_feature_mask -> queue_feature_bit_mask_12_3/_2_0. Expected
// checksums come from an independent computation: RFC 1071 over the IPv4
// pseudo-header and the L4 segment with its checksum field zeroed, as a
// sender without offload computes it; and every result must verify the way
// a receiver checks it.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "common/prm/counters.hpp"
#include "common/prm/virtq.hpp"
#include "emu/datapath/loopback.hpp"
#include "guest_rings.hpp"

namespace mlx5async::emu::test {
namespace {

using namespace mlx5async::emu::dp;
using Hdr = std::array<std::byte, kHdr>;

// VIRTIO_NET_F_* in virtio numbering; the codec converts them as for the PMD.
constexpr uint64_t kFCsum = 1ull << 0, kFGuestCsum = 1ull << 1;
constexpr uint8_t kNeedsCsum = 1;  // VIRTIO_NET_HDR_F_NEEDS_CSUM
constexpr uint8_t kGsoTcpv4 = 1;   // VIRTIO_NET_HDR_GSO_TCPV4
constexpr uint8_t kTcp = 6, kUdp = 17;
constexpr size_t kL4 = 14 + 20;  // Ethernet + IPv4 without options

void set_features(prm::VirtqAttr& a, uint64_t virtio_features) {
    uint16_t m = prm::queue_feature_mask(virtio_features);
    a.queue_feature_bit_mask_12_3 = prm::queue_feature_mask_12_3(m);
    a.queue_feature_bit_mask_2_0 = prm::queue_feature_mask_2_0(m);
}

void put16be(std::span<std::byte> b, size_t at, uint16_t v) {
    b[at] = std::byte(v >> 8);
    b[at + 1] = std::byte(v & 0xff);
}
uint16_t get16be(const std::byte* p) {
    return uint16_t(std::to_integer<unsigned>(p[0]) << 8 | std::to_integer<unsigned>(p[1]));
}
void put16le(Hdr& h, size_t at, uint16_t v) { std::memcpy(&h[at], &v, 2); }

// RFC 1071 §4.1: add byte pairs as 16-bit words (odd byte padded), fold.
uint32_t add16(uint32_t acc, std::span<const std::byte> b) {
    for (size_t i = 0; i < b.size(); i += 2)
        acc += std::to_integer<uint32_t>(b[i]) << 8 |
               (i + 1 < b.size() ? std::to_integer<uint32_t>(b[i + 1]) : 0u);
    return acc;
}
uint16_t fold(uint32_t s) {
    while (s >> 16) s = (s & 0xffff) + (s >> 16);
    return uint16_t(s);
}

// An Ethernet/IPv4 frame with TCP or UDP. Its L4 checksum field holds the
// folded pseudo-header sum, as a driver asking NEEDS_CSUM leaves it (Linux:
// th->check = ~tcp_v4_check(len, saddr, daddr, 0)).
struct Frame {
    std::vector<std::byte> bytes;
    uint8_t proto = 0;
    size_t csum_at = 0;                // L4 checksum field, from the frame start
    std::array<std::byte, 12> pseudo{};  // RFC 793 / 768 pseudo-header
};

Frame make_frame(uint8_t proto, size_t payload_len, uint8_t seed) {
    size_t l4_hdr = proto == kTcp ? 20 : 8, l4_len = l4_hdr + payload_len;
    Frame f{std::vector<std::byte>(kL4 + l4_len), proto, kL4 + (proto == kTcp ? 16 : 6), {}};
    std::span<std::byte> b = f.bytes;
    for (size_t i = 0; i < 12; ++i) b[i] = std::byte(2 + i);  // MACs
    put16be(b, 12, 0x0800);
    b[14] = std::byte(0x45);
    put16be(b, 16, uint16_t(20 + l4_len));
    b[22] = std::byte(64);
    b[23] = std::byte(proto);
    const uint8_t addrs[8] = {10, 0, 0, 1, 10, 0, 0, 2};  // src, dst
    for (size_t i = 0; i < 8; ++i) b[26 + i] = f.pseudo[i] = std::byte(addrs[i]);
    put16be(b, 24, uint16_t(~fold(add16(0, b.subspan(14, 20)))));
    put16be(b, kL4, uint16_t(40000 + seed));
    put16be(b, kL4 + 2, 80);
    if (proto == kTcp) {
        put16be(b, kL4 + 4, 0x1234);  // seq
        b[kL4 + 12] = std::byte(0x50);  // data offset 5
        b[kL4 + 13] = std::byte(0x18);  // PSH ACK
        put16be(b, kL4 + 14, 0xffff);   // window
    } else {
        put16be(b, kL4 + 4, uint16_t(l4_len));
    }
    for (size_t i = 0; i < payload_len; ++i) b[kL4 + l4_hdr + i] = std::byte((seed * 31 + i * 7) & 0xff);
    f.pseudo[9] = std::byte(proto);
    put16be(f.pseudo, 10, uint16_t(l4_len));
    put16be(b, f.csum_at, fold(add16(0, f.pseudo)));
    return f;
}

// Pseudo-header + segment with a zero checksum field (no device involved).
uint16_t segment_sum(const Frame& f) {
    std::vector<std::byte> seg(f.bytes.begin() + kL4, f.bytes.end());
    put16be(seg, f.csum_at - kL4, 0);
    return fold(add16(add16(0, f.pseudo), seg));
}
// The checksum to send; 0 goes out as 0xffff (RFC 768, and the same value to TCP).
uint16_t reference_csum(const Frame& f) {
    uint16_t c = uint16_t(~segment_sum(f));
    return c ? c : 0xffff;
}
// The receiver's check: pseudo-header + segment as received sum to 0xffff.
bool verifies(const Frame& f, const std::byte* frame) {
    return fold(add16(add16(0, f.pseudo), {frame + kL4, f.bytes.size() - kL4})) == 0xffff;
}

Hdr needs_csum_hdr(const Frame& f) {
    Hdr h{};
    h[0] = std::byte(kNeedsCsum);
    put16le(h, 2, uint16_t(kL4 + (f.proto == kTcp ? 20 : 8)));  // hdr_len
    put16le(h, 6, uint16_t(kL4));                               // csum_start
    put16le(h, 8, uint16_t(f.csum_at - kL4));                   // csum_offset
    return h;
}

class CsumOffload : public ::testing::Test, protected LoopbackRings {
protected:
    // The PMD gives every virtq the device's negotiated features.
    void negotiate(uint64_t f) {
        set_features(txa, f);
        set_features(rxa, f);
    }
    // Loops one frame back; what RX received (header + frame), empty if none.
    std::vector<std::byte> send(const Frame& f, const Hdr& h) {
        tx.post_tx(f.bytes, h);
        rx.post_rx();
        uint16_t before = rx.used_idx();
        if (loopback(tr, txio, &rxio, 1).packets != 1) return {};
        auto [id, len] = rx.elem(before);
        const std::byte* p = g.at(rx.buf(uint16_t(id / 2)));
        return {p, p + len};
    }
};

TEST_F(CsumOffload, CompletesChecksumAndClearsNeedsCsumWhenRxLacksGuestCsum) {
    negotiate(kFCsum);
    struct Shape {
        uint8_t proto;
        size_t payload;
    };
    uint8_t seed = 0;
    for (Shape s : {Shape{kTcp, 301}, Shape{kTcp, 0}, Shape{kTcp, 1460}, Shape{kUdp, 1}, Shape{kUdp, 1400}}) {
        SCOPED_TRACE(::testing::Message() << "proto " << int(s.proto) << " payload " << s.payload);
        Frame f = make_frame(s.proto, s.payload, seed++);
        Hdr h = needs_csum_hdr(f);
        auto got = send(f, h);
        ASSERT_EQ(got.size(), kHdr + f.bytes.size());
        EXPECT_EQ(got[0], std::byte(0));  // NEEDS_CSUM cleared, nothing set
        EXPECT_TRUE(std::equal(got.begin() + 1, got.begin() + 10, h.begin() + 1));  // as sent
        uint16_t num_buffers;
        std::memcpy(&num_buffers, got.data() + 10, 2);
        EXPECT_EQ(num_buffers, 1);
        const std::byte* frame = got.data() + kHdr;
        EXPECT_EQ(get16be(frame + f.csum_at), reference_csum(f));
        EXPECT_TRUE(verifies(f, frame));
        std::vector<std::byte> want = f.bytes;  // every other byte as sent
        put16be(want, f.csum_at, reference_csum(f));
        EXPECT_EQ(std::memcmp(frame, want.data(), want.size()), 0);
    }
    EXPECT_EQ(txio.error + rxio.error, 0);
    EXPECT_EQ(txc.error_cqes + rxc.error_cqes, 0u);
}

TEST_F(CsumOffload, ZeroChecksumIsStoredAsAllOnes) {
    negotiate(kFCsum);
    Frame f = make_frame(kUdp, 32, 9);
    // Pick the first payload word so that the segment sums to 0xffff.
    const size_t w = kL4 + 8;
    put16be(f.bytes, w, 0);
    put16be(f.bytes, w, uint16_t(0xffff - segment_sum(f)));
    ASSERT_EQ(uint16_t(~segment_sum(f)), 0);
    auto got = send(f, needs_csum_hdr(f));
    ASSERT_EQ(got.size(), kHdr + f.bytes.size());
    EXPECT_EQ(get16be(got.data() + kHdr + f.csum_at), 0xffff);
    EXPECT_TRUE(verifies(f, got.data() + kHdr));
}

TEST_F(CsumOffload, HeaderAndPacketPassThroughWhenRxHasGuestCsum) {
    negotiate(kFCsum | kFGuestCsum);
    Frame f = make_frame(kTcp, 301, 1);
    Hdr h = needs_csum_hdr(f);
    auto got = send(f, h);
    ASSERT_EQ(got.size(), kHdr + f.bytes.size());
    EXPECT_TRUE(std::equal(got.begin(), got.begin() + 10, h.begin()));  // NEEDS_CSUM kept
    // The pseudo-header seed is left for the receiver to complete.
    EXPECT_EQ(std::memcmp(got.data() + kHdr, f.bytes.data(), f.bytes.size()), 0);
}

TEST_F(CsumOffload, NeedsCsumIgnoredWithoutCsumOnTx) {
    negotiate(0);  // the driver breaks §5.1.6.2 (flags must be 0): not acted on
    Frame f = make_frame(kTcp, 100, 2);
    Hdr h = needs_csum_hdr(f);
    put16le(h, 6, 0xfff0);  // offsets outside the packet: not even looked at
    auto got = send(f, h);
    ASSERT_EQ(got.size(), kHdr + f.bytes.size());
    EXPECT_TRUE(std::equal(got.begin(), got.begin() + 10, h.begin()));
    EXPECT_EQ(std::memcmp(got.data() + kHdr, f.bytes.data(), f.bytes.size()), 0);
    EXPECT_EQ(txio.error, 0);
}

TEST_F(CsumOffload, GsoTypeIsNotActedOn) {
    negotiate(kFCsum);  // no HOST_TSO: the driver must not ask; one packet out
    Frame f = make_frame(kTcp, 1460, 3);
    Hdr h = needs_csum_hdr(f);
    h[1] = std::byte(kGsoTcpv4);
    put16le(h, 4, 500);  // gso_size
    auto got = send(f, h);
    ASSERT_EQ(got.size(), kHdr + f.bytes.size());
    EXPECT_EQ(got[0], std::byte(0));
    EXPECT_TRUE(std::equal(got.begin() + 1, got.begin() + 10, h.begin() + 1));
    EXPECT_TRUE(verifies(f, got.data() + kHdr));
    EXPECT_EQ(rx.used_idx(), 1);
}

// csum_start/csum_offset are the transmitter's: checked whatever RX negotiated.
class CsumOffsets : public CsumOffload, public ::testing::WithParamInterface<bool> {};

TEST_P(CsumOffsets, FieldEndingAtPacketEndIsAcceptedOneFurtherIsAnError) {
    negotiate(kFCsum | (GetParam() ? kFGuestCsum : 0));
    Frame f = make_frame(kUdp, 10, 4);
    Hdr h = needs_csum_hdr(f);
    put16le(h, 6, uint16_t(f.bytes.size() - 4));
    put16le(h, 8, 2);  // field = the last two bytes
    ASSERT_EQ(send(f, h).size(), kHdr + f.bytes.size());
    put16le(h, 8, 3);  // one byte past the end
    uint64_t writes = g.writes;
    EXPECT_TRUE(send(f, h).empty());
    EXPECT_EQ(txio.error, error_type::kNetHdr);
    EXPECT_EQ(txc.bad_desc_errors, 1u);
    EXPECT_EQ(txc.error_cqes, 1u);
    EXPECT_EQ(g.writes, writes);  // nothing written
    EXPECT_EQ(txa.hw_available_index, 1);  // the bad chain is not consumed
    EXPECT_EQ(rxa.hw_available_index, 1);
    EXPECT_EQ(rxio.error, 0);
    EXPECT_EQ(rxc.error_cqes, 0u);
}

INSTANTIATE_TEST_SUITE_P(RxGuestCsum, CsumOffsets, ::testing::Bool(),
                         [](const auto& i) { return std::string(i.param ? "with" : "without"); });

}  // namespace
}  // namespace mlx5async::emu::test
