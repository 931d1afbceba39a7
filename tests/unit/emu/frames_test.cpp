// What the loopback sees of the frames a guest sends: ARP and gratuitous ARP
// counted per TX virtq (the downtime ledger's announce), frames longer than
// the port's MTU dropped as the port drops them, and any descriptor layout
// (VIRTIO_F_ANY_LAYOUT: the header need not have a descriptor of its own).
#include <cstring>

#include "emu/datapath/loopback.hpp"
#include "emu_fixture.hpp"
#include "guest_rings.hpp"

namespace mlx5async::emu::test {
namespace {

using namespace mlx5async::emu::dp;

// An Ethernet frame: broadcast destination, `type`, then `body`.
std::vector<std::byte> ether(uint16_t type, std::vector<std::byte> body, bool vlan = false) {
    std::vector<std::byte> f(12, std::byte{0xff});
    for (int i = 6; i < 12; ++i) f[i] = std::byte(0x50 + i);
    if (vlan) {
        f.push_back(std::byte{0x81});
        f.push_back(std::byte{0x00});
        f.push_back(std::byte{0x00});
        f.push_back(std::byte{0x07});  // VID 7
    }
    f.push_back(std::byte(type >> 8));
    f.push_back(std::byte(type & 0xff));
    f.insert(f.end(), body.begin(), body.end());
    return f;
}

// An IPv4-over-Ethernet ARP request (RFC 826) from `spa` for `tpa`.
std::vector<std::byte> arp(uint32_t spa, uint32_t tpa) {
    std::vector<std::byte> a = {std::byte{0}, std::byte{1}, std::byte{8}, std::byte{0},
                                std::byte{6}, std::byte{4}, std::byte{0}, std::byte{1}};
    auto put32 = [&](uint32_t v) {
        for (int s = 24; s >= 0; s -= 8) a.push_back(std::byte((v >> s) & 0xff));
    };
    for (int i = 0; i < 6; ++i) a.push_back(std::byte(0x50 + i));  // sha
    put32(spa);
    for (int i = 0; i < 6; ++i) a.push_back(std::byte{0});  // tha
    put32(tpa);
    a.resize(a.size() + 18);  // padded to Ethernet's 60-byte minimum
    return a;
}

class Frames : public ::testing::Test, protected LoopbackRings {
protected:
    FrameCounters frames;
    void SetUp() override { txio.frames = &frames; }
    uint32_t send(const std::vector<std::byte>& f) {
        tx.post_tx(f);
        rx.post_rx();
        return loopback(tr, txio, &rxio, 16).announces;
    }
};

TEST_F(Frames, CountsArpAndGratuitousArpPerTxQueue) {
    EXPECT_EQ(send(ether(0x0800, payload(1, 80))), 0u);           // IPv4
    EXPECT_EQ(send(ether(0x0806, arp(0x0a4d0001, 0x0a4d0002))), 0u);  // a request for a peer
    EXPECT_EQ(send(ether(0x0806, arp(0x0a4d0001, 0x0a4d0001))), 1u);  // gratuitous
    EXPECT_EQ(send(ether(0x0806, arp(0x0a4d0001, 0x0a4d0001), true)), 1u);  // behind a VLAN tag
    EXPECT_EQ(send(ether(0x86dd, payload(2, 80))), 0u);           // IPv6
    EXPECT_EQ(frames.arp, 3u);
    EXPECT_EQ(frames.announces, 2u);
    EXPECT_EQ(frames.oversize, 0u);
    EXPECT_EQ(rx.used_idx(), 5);  // every frame delivered
}

TEST_F(Frames, ShortOrForeignArpIsArpButNoAnnounce) {
    auto truncated = ether(0x0806, arp(0x0a4d0001, 0x0a4d0001));
    truncated.resize(14 + 20);
    EXPECT_EQ(send(truncated), 0u);
    auto other = arp(0x0a4d0001, 0x0a4d0001);
    other[2] = std::byte{0x86};  // ptype IPv6: not the IPv4 layout
    other[3] = std::byte{0xdd};
    EXPECT_EQ(send(ether(0x0806, other)), 0u);
    EXPECT_EQ(frames.arp, 2u);
    EXPECT_EQ(frames.announces, 0u);
}

TEST_F(Frames, ABlockedFrameIsCountedOnceWhenItLeaves) {
    tx.post_tx(ether(0x0806, arp(1, 1)));
    EXPECT_TRUE(loopback(tr, txio, &rxio, 16).blocked);  // no receive buffer yet
    EXPECT_TRUE(loopback(tr, txio, &rxio, 16).blocked);
    EXPECT_EQ(frames.arp, 0u);
    rx.post_rx();
    EXPECT_EQ(loopback(tr, txio, &rxio, 16).announces, 1u);
    EXPECT_EQ(frames.arp, 1u);
    EXPECT_EQ(frames.announces, 1u);
}

TEST_F(Frames, LongerThanThePortPassesIsConsumedAndDropped) {
    txio.max_frame = max_frame_of_mtu(1500);
    tx.post_tx(ether(0x0800, payload(1, 1500)));  // 1514 bytes: passes
    tx.post_tx(ether(0x0800, payload(2, 1505)));  // 1519: over 1518
    tx.post_tx(ether(0x0800, payload(3, 1504), true));  // 1522 with a tag: over
    tx.post_tx(ether(0x0800, payload(4, 1500), true));  // 1518 with a tag: passes
    for (int i = 0; i < 4; ++i) rx.post_rx();
    LoopbackResult r = loopback(tr, txio, &rxio, 16);
    EXPECT_EQ(r.packets, 2u);
    EXPECT_EQ(r.dropped, 2u);
    EXPECT_EQ(frames.oversize, 2u);
    EXPECT_EQ(tx.used_idx(), 4);  // all four consumed
    EXPECT_EQ(rx.used_idx(), 2);
    EXPECT_EQ(std::memcmp(g.at(rx.buf(uint16_t(rx.elem(1).first / 2))) + kHdr + 18,
                          payload(4, 1500).data(), 1500), 0);
}

// VIRTIO_F_ANY_LAYOUT (virtio 1.x §2.6.4): the device cannot rely on the
// header having a descriptor of its own. A TX chain with the header and the
// frame in one descriptor, and one with the header cut across three, reach
// the receiver byte for byte as the two-descriptor layout does.
TEST_F(Frames, AnyDescriptorLayoutCarriesTheSameFrame) {
    const auto frame = ether(0x0800, payload(9, 200));
    std::vector<std::byte> whole(kHdr);
    whole.insert(whole.end(), frame.begin(), frame.end());
    std::memcpy(g.at(tx.buf(0)), whole.data(), whole.size());
    tx.put_desc(0, tx.buf(0), uint32_t(whole.size()), 0, 0);  // one descriptor
    tx.publish(0);
    std::memcpy(g.at(tx.buf(1)), whole.data(), whole.size());
    tx.put_desc(2, tx.buf(1), 5, kDescNext, 3);  // 5 + 4 header bytes, then 3 + the frame
    tx.put_desc(3, tx.buf(1) + 5, 4, kDescNext, 4);
    tx.put_desc(4, tx.buf(1) + 9, uint32_t(whole.size() - 9), 0, 0);
    tx.publish(2);
    rx.post_rx();
    rx.post_rx();
    ASSERT_EQ(loopback(tr, txio, &rxio, 16).packets, 2u);
    whole[10] = std::byte{1};  // what the receiver gets: num_buffers 1
    for (uint16_t i = 0; i < 2; ++i) {
        auto [id, len] = rx.elem(i);
        ASSERT_EQ(len, whole.size()) << i;
        EXPECT_EQ(std::memcmp(g.at(rx.buf(uint16_t(id / 2))), whole.data(), whole.size()), 0) << i;
    }
}

}  // namespace
}  // namespace mlx5async::emu::test
