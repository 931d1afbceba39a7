// The emulator's TX->RX loopback (drivers/emu/datapath) on split and on
// packed rings: packets per second and ns per packet through one queue pair,
// 64 chains in flight each way, at two packet sizes. The emulator's own
// datapath cost, not a ConnectX's: what changing the ring layout costs the
// loopback. The driver sides are tools/vhost-user-guest's ring drivers;
// guest memory is a local buffer behind a one-span translator.
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <vector>

#include "bench_common.hpp"
#include "drivers/emu/datapath/loopback.hpp"
#include "tools/vhost-user-guest/packed_ring_driver.hpp"

namespace mlx5async::bench {
namespace {

using namespace emu::dp;

constexpr uint32_t kMkey = 1;
constexpr uint64_t kBase = 0x100000, kStride = 0x100000;  // per queue: ring, then buffers
constexpr uint16_t kSize = 256, kInFlight = 64;
constexpr size_t kHdr = 12;

struct Guest {
    std::vector<std::byte> mem = std::vector<std::byte>(2 * kStride);
    Translator tr = [this](uint32_t k, uint64_t a, size_t l) -> Result<std::vector<HostSpan>> {
        if (k != kMkey || a < kBase || a + l > kBase + mem.size())
            return fail(Errc::InvalidArgument, "outside the bench's guest memory");
        return std::vector<HostSpan>{{mem.data() + (a - kBase), l}};
    };
    vug::SplitRingDriver::HostFn host() {
        return [this](uint64_t gpa, uint64_t) { return reinterpret_cast<uint8_t*>(mem.data() + (gpa - kBase)); };
    }
    static uint64_t ring(uint16_t q) { return kBase + q * kStride; }
    static uint64_t buf(uint16_t q, uint16_t slot) { return ring(q) + 0x4000 + slot * 2048ull; }
};

prm::VirtqAttr attr_of(uint16_t q, prm::VirtqType type) {
    prm::VirtqAttr a;
    a.queue_index = q;
    a.queue_size = kSize;
    a.virtio_q_type = type;
    a.virtio_version_1_0 = true;
    a.virtio_q_mkey = kMkey;
    a.desc_addr = Guest::ring(q);
    a.available_addr = Guest::ring(q) + 0x1000;
    a.used_addr = Guest::ring(q) + 0x2000;
    if (type == prm::VirtqType::PACKED) a.hw_available_index = a.hw_used_index = vug::kWrapCounter;
    return a;
}

// The driver's side of a queue pair in one layout: posts TX chains
// ([header][payload], two descriptors) and RX chains (one 2 KiB
// descriptor) up to kInFlight each, takes back what was used.
class SplitDriver {
public:
    explicit SplitDriver(Guest& g)
        : rx_(g.host(), Guest::ring(0), Guest::ring(0) + 0x1000, Guest::ring(0) + 0x2000, kSize),
          tx_(g.host(), Guest::ring(1), Guest::ring(1) + 0x1000, Guest::ring(1) + 0x2000, kSize) {}
    static constexpr prm::VirtqType kType = prm::VirtqType::SPLIT;
    void post(size_t payload) {
        while (uint16_t(tx_.next_avail() - tx_.used_idx()) < kInFlight) {
            const uint16_t s = tx_.next_avail() % kInFlight;
            tx_.write_desc(2 * s, vug::VringDesc{Guest::buf(1, s), uint32_t(kHdr), vug::kDescNext, uint16_t(2 * s + 1)});
            tx_.write_desc(2 * s + 1, vug::VringDesc{Guest::buf(1, s) + 64, uint32_t(payload), 0, 0});
            tx_.push_avail(uint16_t(2 * s));
        }
        while (uint16_t(rx_.next_avail() - rx_.used_idx()) < kInFlight) {
            const uint16_t s = rx_.next_avail() % kInFlight;
            rx_.write_desc(s, vug::VringDesc{Guest::buf(0, s), 2048, vug::kDescWrite, 0});
            rx_.push_avail(s);
        }
        tx_.publish();
        rx_.publish();
    }
    void reap() {}  // the used idx the device moved frees the slots

private:
    vug::SplitRingDriver rx_, tx_;
};

class PackedDriver {
public:
    explicit PackedDriver(Guest& g)
        : rx_(g.host(), Guest::ring(0), Guest::ring(0) + 0x1000, Guest::ring(0) + 0x2000, kSize),
          tx_(g.host(), Guest::ring(1), Guest::ring(1) + 0x1000, Guest::ring(1) + 0x2000, kSize) {
        for (uint16_t s = 0; s < kInFlight; ++s) tx_free_.push_back(s), rx_free_.push_back(s);
    }
    static constexpr prm::VirtqType kType = prm::VirtqType::PACKED;
    void post(size_t payload) {
        while (!tx_free_.empty()) {
            const uint16_t s = tx_free_.back();
            const vug::PackedBuf b[] = {{Guest::buf(1, s), uint32_t(kHdr), false},
                                        {Guest::buf(1, s) + 64, uint32_t(payload), false}};
            if (!tx_.add(b, s)) break;
            tx_free_.pop_back();
        }
        while (!rx_free_.empty()) {
            const uint16_t s = rx_free_.back();
            const vug::PackedBuf b{Guest::buf(0, s), 2048, true};
            if (!rx_.add({&b, 1}, s)) break;
            rx_free_.pop_back();
        }
    }
    void reap() {
        while (auto e = tx_.take_used()) tx_free_.push_back(e->id);
        while (auto e = rx_.take_used()) rx_free_.push_back(e->id);
    }

private:
    vug::PackedRingDriver rx_, tx_;
    std::vector<uint16_t> tx_free_, rx_free_;
};

template <class Driver>
void BM_Loopback(benchmark::State& st) {
    const size_t payload = size_t(st.range(0));
    auto g = std::make_unique<Guest>();
    Driver d(*g);
    prm::VirtqAttr rxa = attr_of(0, Driver::kType), txa = attr_of(1, Driver::kType);
    prm::VirtqCounters rxc, txc;
    QueueIo txio{txa, txc}, rxio{rxa, rxc};
    uint64_t packets = 0;
    for (auto _ : st) {
        d.post(payload);
        LoopbackResult r = loopback(g->tr, txio, &rxio, kInFlight);
        d.reap();
        packets += r.packets;
        if (txio.error || rxio.error) {
            st.SkipWithError("the loopback failed a queue");
            break;
        }
    }
    st.SetItemsProcessed(int64_t(packets));
    st.counters["s_per_packet"] =
        benchmark::Counter(double(packets), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

}  // namespace

void register_datapath() {
    for (int64_t bytes : {64, 1450}) {
        benchmark::RegisterBenchmark("BM_Loopback/ring:split", BM_Loopback<SplitDriver>)->Arg(bytes);
        benchmark::RegisterBenchmark("BM_Loopback/ring:packed", BM_Loopback<PackedDriver>)->Arg(bytes);
    }
}

}  // namespace mlx5async::bench
