// The emulated datapath on packed rings (virtio 1.x §2.8): the TX->RX
// loopback across wraps at every ring size the driver allows, positions
// (slot and wrap counter) kept across a suspend and a resume at every slot,
// mergeable receive, and malformed rings failing the queue. The driver side
// is tools/vhost-user-guest's PackedRingDriver; guest memory the fake
// translator of guest_rings.hpp.
#include <algorithm>
#include <cstring>
#include <deque>

#include <gtest/gtest.h>

#include "emu/datapath/loopback.hpp"
#include "emu/datapath/packed_ring.hpp"
#include "guest_rings.hpp"
#include "tools/vhost-user-guest/packed_ring_driver.hpp"

namespace mlx5async::emu::test {
namespace {

using namespace mlx5async::emu::dp;
static_assert(dp::kDescAvail == vug::kPackedAvail && dp::kDescUsed == vug::kPackedUsed);
static_assert(dp::kWrapBit == vug::kWrapCounter && dp::kEventFlagsDisable == vug::kEventDisable);

constexpr uint16_t kBufs = 64;  // buffers per queue, 2 KiB each

// One packed ring of the fake guest: descriptors (up to 32768 x 16 bytes),
// the two event suppression areas, then kBufs buffers.
struct PackedQueue {
    FakeGuest& g;
    uint16_t queue, size;
    vug::PackedRingDriver ring;
    std::deque<uint16_t> free_ids;  // buffer ids (buffer k is id k)

    PackedQueue(FakeGuest& guest, uint16_t q, uint16_t n)
        : g(guest), queue(q), size(n),
          ring([this](uint64_t gpa, uint64_t) { return reinterpret_cast<uint8_t*>(g.at(gpa)); }, desc(),
               driver_area(), device_area(), n) {
        for (uint16_t k = 0; k < std::min<uint16_t>(kBufs, n); ++k) free_ids.push_back(k);
    }
    uint64_t base() const { return kBase + queue * kQueueStride; }
    uint64_t desc() const { return base(); }
    uint64_t driver_area() const { return base() + 0x80000; }
    uint64_t device_area() const { return base() + 0x80100; }
    uint64_t buf(uint16_t id) const { return base() + 0x81000 + id * 2048ull; }

    // A TX chain: [12-byte header][payload] in two descriptors of one buffer.
    bool post_tx(std::span<const std::byte> p) {
        if (free_ids.empty()) return false;
        const uint16_t id = free_ids.front();
        std::memset(g.at(buf(id)), 0, kHdr);
        std::memcpy(g.at(buf(id) + 64), p.data(), p.size());
        const vug::PackedBuf bufs[] = {{buf(id), uint32_t(kHdr), false}, {buf(id) + 64, uint32_t(p.size()), false}};
        if (!ring.add(bufs, id)) return false;
        free_ids.pop_front();
        return true;
    }
    // An RX chain: one writable descriptor of `len` bytes.
    bool post_rx(uint32_t len = 2048) {
        if (free_ids.empty()) return false;
        const uint16_t id = free_ids.front();
        const vug::PackedBuf b{buf(id), len, true};
        if (!ring.add({&b, 1}, id)) return false;
        free_ids.pop_front();
        return true;
    }
    std::optional<vug::PackedUsed> take() {
        auto e = ring.take_used();
        if (e) free_ids.push_back(e->id);
        return e;
    }
    // Both rings idle at position `p`: the driver's state and the object's.
    void start_at(uint16_t p, prm::VirtqAttr& a) {
        ring.set_position(p);
        a.hw_available_index = a.hw_used_index = p;
    }
    prm::VirtqAttr attr() const {
        prm::VirtqAttr a;
        a.queue_index = queue;
        a.queue_size = size;
        a.virtio_q_type = prm::VirtqType::PACKED;
        a.virtio_version_1_0 = true;
        a.virtio_q_mkey = kMkey;
        a.desc_addr = desc();
        a.available_addr = driver_area();
        a.used_addr = device_area();
        a.hw_available_index = a.hw_used_index = vug::kWrapCounter;  // slot 0, both counters 1
        return a;
    }
};

// An RX (queue 0) and a TX (queue 1) packed ring of one size, and the
// loopback's per-queue state for each.
struct PackedPair {
    FakeGuest g;
    PackedQueue rx, tx;
    prm::VirtqAttr rxa, txa;
    prm::VirtqCounters rxc, txc;
    WriteObserver obs = g.observer();
    QueueIo txio{txa, txc, &obs}, rxio{rxa, rxc, &obs};
    Translator tr = g.translator();
    uint32_t sent = 0, received = 0, mismatches = 0;

    explicit PackedPair(uint16_t size) : rx(g, 0, size), tx(g, 1, size), rxa(rx.attr()), txa(tx.attr()) {}

    static size_t len_of(uint32_t seq) { return 60 + seq % 200; }
    // Posts what fits, runs the loopback once, takes back every used
    // descriptor and checks each received packet is the next in sequence.
    void round(uint32_t until) {
        while (sent < until && tx.post_tx(payload(sent, len_of(sent)))) ++sent;
        while (rx.post_rx()) {}
        loopback(tr, txio, &rxio, 32);
        while (auto e = tx.take())
            if (e->len != 0) ++mismatches;
        while (auto e = rx.take()) {
            auto p = payload(received, len_of(received));
            if (e->len != kHdr + p.size() || std::memcmp(g.at(rx.buf(e->id) + kHdr), p.data(), p.size()))
                ++mismatches;
            ++received;
        }
    }
    // Runs until `n` packets are through (bounded: every round moves some).
    bool run(uint32_t n) {
        for (uint32_t r = 0; received < n && r < 4 * n + 16; ++r) round(n);
        return received == n;
    }
    // The objects' positions are the driver's: every chain used, in order.
    void expect_positions() const {
        EXPECT_EQ(txa.hw_available_index, tx.ring.avail_pos());
        EXPECT_EQ(txa.hw_used_index, tx.ring.used_pos());
        EXPECT_EQ(rxa.hw_used_index, rx.ring.used_pos());
        EXPECT_EQ(tx.ring.in_flight(), 0);
    }
};

// --- wraps at every ring size ---------------------------------------------

class PackedSizes : public ::testing::TestWithParam<uint16_t> {};

TEST_P(PackedSizes, LoopbackIsExactAcrossWraps) {
    const uint16_t size = GetParam();
    PackedPair p(size);
    // TX chains take two slots, RX one: the rings wrap at different
    // packets, TX chains straddle the wrap on odd sizes' laps.
    const uint32_t n = 2u * size + 7;
    ASSERT_TRUE(p.run(n)) << p.received << " of " << n << " received";
    EXPECT_EQ(p.mismatches, 0u);
    EXPECT_EQ(p.sent, n);
    p.expect_positions();
    // 2n TX slots from slot 0, wrap counter 1: the same arithmetic the driver did.
    const uint32_t tx_slots = 2 * n, rx_slots = n;
    EXPECT_EQ(p.txa.hw_used_index & 0x7fff, tx_slots % size);
    EXPECT_EQ((p.txa.hw_used_index >> 15) & 1, (1 + tx_slots / size) & 1);
    EXPECT_EQ(p.rxa.hw_used_index & 0x7fff, rx_slots % size);
    EXPECT_EQ(p.txc.completed_desc, 2ull * n);
    EXPECT_EQ(p.rxc.completed_desc, uint64_t(n));
    EXPECT_EQ(p.txc.error_cqes + p.rxc.error_cqes, 0u);
}

// The driver's queue_size: a power of 2 in 2..32768 (config.cpp).
INSTANTIATE_TEST_SUITE_P(EverySize, PackedSizes,
                         ::testing::Values(2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192,
                                           16384, 32768));

// --- suspend and resume at every position -----------------------------------

// A device keeps a packed ring's state in its two positions alone: the
// object a migration's destination creates from the queried indexes
// (slot and wrap counter) carries on where the source stopped, at every
// slot of both laps and across the wrap that follows.
TEST(PackedResume, PositionsSurviveASuspendAtEverySlotOfBothLaps) {
    constexpr uint16_t kSize = 16;
    for (uint16_t p = 0; p < 2 * kSize; ++p) {
        const uint16_t pos = uint16_t((p % kSize) | (p >= kSize ? vug::kWrapCounter : 0));
        PackedPair a(kSize);
        a.tx.start_at(pos, a.txa);
        a.rx.start_at(pos, a.rxa);
        ASSERT_TRUE(a.run(5)) << "position " << pos;
        // Suspended: what the object says is where the driver is.
        a.expect_positions();
        // Resumed as a new object with the queried indexes (the loopback's
        // only state): past the wrap, and the packets still in order.
        const prm::VirtqAttr tq = a.txa, rq = a.rxa;
        a.txa = a.tx.attr();
        a.rxa = a.rx.attr();
        a.txa.hw_available_index = tq.hw_available_index;
        a.txa.hw_used_index = tq.hw_used_index;
        a.rxa.hw_available_index = rq.hw_available_index;
        a.rxa.hw_used_index = rq.hw_used_index;
        ASSERT_TRUE(a.run(5 + 2 * kSize)) << "position " << pos;
        EXPECT_EQ(a.mismatches, 0u) << "position " << pos;
        a.expect_positions();
        EXPECT_EQ(a.txc.error_cqes + a.rxc.error_cqes, 0u);
    }
}

// --- mergeable receive ---------------------------------------------------------

TEST(PackedMergeable, APacketSpansBuffersAndIsPublishedWhole) {
    PackedPair p(8);
    const uint16_t mrg = 1u << prm::queue_feature_bits::MRG_RXBUF;
    p.rxa.queue_feature_bit_mask_12_3 = prm::queue_feature_mask_12_3(mrg);
    p.rxa.queue_feature_bit_mask_2_0 = prm::queue_feature_mask_2_0(mrg);
    p.rx.start_at(6 | vug::kWrapCounter, p.rxa);  // the buffers straddle the wrap
    const auto pkt = payload(1, 1400);
    ASSERT_TRUE(p.tx.post_tx(pkt));
    for (int k = 0; k < 2; ++k) ASSERT_TRUE(p.rx.post_rx(512));
    EXPECT_TRUE(loopback(p.tr, p.txio, &p.rxio, 10).blocked);  // 1024 bytes of room: waits
    EXPECT_EQ(p.rxa.hw_used_index, 6 | vug::kWrapCounter);
    ASSERT_TRUE(p.rx.post_rx(512));
    EXPECT_EQ(loopback(p.tr, p.txio, &p.rxio, 10).packets, 1u);
    std::vector<vug::PackedUsed> used;
    while (auto e = p.rx.take()) used.push_back(*e);
    ASSERT_EQ(used.size(), 3u);
    EXPECT_EQ(p.g.load<uint16_t>(p.rx.buf(used[0].id) + 10), 3);  // num_buffers
    EXPECT_EQ(used[0].len + used[1].len + used[2].len, kHdr + pkt.size());
    std::vector<std::byte> got;
    for (const auto& e : used)
        got.insert(got.end(), p.g.at(p.rx.buf(e.id)), p.g.at(p.rx.buf(e.id)) + e.len);
    EXPECT_EQ(std::memcmp(got.data() + kHdr, pkt.data(), pkt.size()), 0);
    EXPECT_EQ(p.rxa.hw_used_index, 1);  // slots 6, 7, then 0 of the next lap (wrap 0)
    EXPECT_EQ(p.rxa.hw_used_index, p.rx.ring.used_pos());
}

// --- malformed rings ---------------------------------------------------------

struct PackedBad {
    const char* name;
    uint8_t error_type;
    uint32_t prm::VirtqCounters::*counter;
};

class PackedMalformed : public ::testing::TestWithParam<PackedBad> {};

TEST_P(PackedMalformed, FailsTheQueueWithItsErrorTypeAndWritesNothing) {
    const std::string n = GetParam().name;
    PackedPair p(8);
    ASSERT_TRUE(p.rx.post_rx());
    auto put = [&](uint16_t slot, uint64_t addr, uint32_t len, uint16_t id, uint16_t flags) {
        uint8_t raw[16];
        std::memcpy(raw, &addr, 8);
        std::memcpy(raw + 8, &len, 4);
        std::memcpy(raw + 12, &id, 2);
        std::memcpy(raw + 14, &flags, 2);
        std::memcpy(p.g.at(p.tx.desc() + 16ull * slot), raw, 16);
    };
    const uint16_t avail = vug::kPackedAvail;  // available in lap 1
    ASSERT_TRUE(p.tx.post_tx(payload(0, 64)));
    if (n == "slot") p.txa.hw_available_index = 8 | vug::kWrapCounter;  // a base past the ring
    if (n == "indirect") put(0, p.tx.buf(0), 16, 0, uint16_t(avail | kDescNext | kDescIndirect));
    if (n == "buffer") put(1, kBase + kMemBytes - 8, 64, 0, avail);
    if (n == "too-long")
        for (uint16_t s = 0; s < 8; ++s) put(s, p.tx.buf(0), 16, 0, uint16_t(avail | kDescNext));
    if (n == "writable") put(1, p.tx.buf(0) + 64, 64, 0, uint16_t(avail | kDescWrite));
    if (n == "ring") p.txa.desc_addr = kBase + kMemBytes - 64;
    const uint64_t before = p.g.writes;
    LoopbackResult r = loopback(p.tr, p.txio, &p.rxio, 10);
    EXPECT_EQ(r.packets, 0u);
    EXPECT_EQ(p.txio.error, GetParam().error_type);
    EXPECT_EQ(p.txc.*GetParam().counter, 1u);
    EXPECT_EQ(p.txc.error_cqes, 1u);
    EXPECT_EQ(p.g.writes, before);
    EXPECT_EQ(p.rxio.error, 0);
    EXPECT_EQ(p.rxa.hw_used_index, vug::kWrapCounter);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PackedMalformed,
    ::testing::Values(PackedBad{"slot", error_type::kAvailIndex, &prm::VirtqCounters::bad_desc_errors},
                      PackedBad{"indirect", error_type::kDescFlags, &prm::VirtqCounters::bad_desc_errors},
                      PackedBad{"buffer", error_type::kBufferAddr, &prm::VirtqCounters::invalid_buffer},
                      PackedBad{"too-long", error_type::kChainTooLong, &prm::VirtqCounters::exceed_max_chain},
                      PackedBad{"writable", error_type::kDescFlags, &prm::VirtqCounters::bad_desc_errors},
                      PackedBad{"ring", error_type::kRingAddr, &prm::VirtqCounters::bad_desc_errors}),
    [](const auto& i) {
        std::string s = i.param.name;
        std::erase(s, '-');
        return s;
    });

}  // namespace
}  // namespace mlx5async::emu::test
