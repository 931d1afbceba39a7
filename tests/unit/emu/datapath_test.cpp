// The emulated virtio-net datapath: split ring, TX->RX loopback, exact
// SUSPEND, bad descriptors, dirty logging, counters. Guest memory is a local
// buffer reached through a fake translator (mkey kMkey, 4 KiB spans).
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <condition_variable>
#include <map>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "emu/datapath/datapath.hpp"
#include "emu/datapath/dirty_log.hpp"
#include "emu/datapath/host_access.hpp"
#include "emu/datapath/loopback.hpp"
#include "common/prm/mkey.hpp"
#include "emu_fixture.hpp"
#include "guest_rings.hpp"

namespace mlx5async::emu::test {
namespace {

using namespace mlx5async::emu::dp;
using prm::VirtqState;

// FakeGuest, DriverRing, payload(), eventually(): guest_rings.hpp.

// --- the loopback alone, no device ------------------------------------------

class Loopback : public ::testing::Test, protected LoopbackRings {};

TEST_F(Loopback, CopiesPacketsExactlyWithHeaderAndCompletesBoth) {
    constexpr uint32_t kN = 100;
    for (uint32_t i = 0; i < kN; ++i) {
        tx.post_tx(payload(i, 60 + i * 13));
        rx.post_rx();
    }
    LoopbackResult r = loopback(tr, txio, &rxio, 1000);
    EXPECT_EQ(r.packets, kN);
    EXPECT_FALSE(r.blocked);
    EXPECT_EQ(txa.hw_available_index, kN);
    EXPECT_EQ(txa.hw_used_index, kN);
    EXPECT_EQ(rxa.hw_used_index, kN);
    ASSERT_EQ(tx.used_idx(), kN);
    ASSERT_EQ(rx.used_idx(), kN);
    for (uint32_t i = 0; i < kN; ++i) {
        auto [tid, tlen] = tx.elem(i);
        EXPECT_EQ(tid, 2 * (i % kSlots));
        EXPECT_EQ(tlen, 0u);
        auto [rid, rlen] = rx.elem(i);
        auto p = payload(i, 60 + i * 13);
        ASSERT_EQ(rlen, kHdr + p.size());
        const std::byte* got = g.at(rx.buf(uint16_t(rid / 2)));
        EXPECT_EQ(g.load<uint16_t>(rx.buf(uint16_t(rid / 2)) + 10), 1);  // num_buffers
        for (size_t b = 0; b < 10; ++b) EXPECT_EQ(got[b], std::byte(0));
        EXPECT_EQ(std::memcmp(got + kHdr, p.data(), p.size()), 0) << "packet " << i;
    }
    EXPECT_EQ(txc.received_desc, 2 * kN);
    EXPECT_EQ(txc.completed_desc, 2 * kN);
    EXPECT_EQ(rxc.received_desc, kN);
    EXPECT_EQ(rxc.completed_desc, kN);
    EXPECT_EQ(txc.error_cqes + rxc.error_cqes, 0u);
}

TEST_F(Loopback, TxWaitsForRxBuffersAndIsNotConsumed) {
    for (uint32_t i = 0; i < 5; ++i) tx.post_tx(payload(i, 64));
    rx.post_rx();
    rx.post_rx();
    LoopbackResult r = loopback(tr, txio, &rxio, 100);
    EXPECT_EQ(r.packets, 2u);
    EXPECT_TRUE(r.blocked);
    EXPECT_EQ(txa.hw_available_index, 2);  // the third chain was not fetched
    EXPECT_EQ(tx.used_idx(), 2);
    r = loopback(tr, txio, nullptr, 100);  // RX not RDY: nothing moves
    EXPECT_EQ(r.packets, 0u);
    EXPECT_TRUE(r.blocked);
    rx.post_rx();
    EXPECT_EQ(loopback(tr, txio, &rxio, 100).packets, 1u);
    EXPECT_EQ(txa.hw_used_index, 3);
}

// virtio 1.x §5.1.6.4: with MRG_RXBUF a packet larger than one receive
// buffer spans several, their count in the first header's num_buffers;
// while too few are posted, nothing is consumed on either side.
TEST_F(Loopback, MergeableReceiveSpansBuffersAndCountsThem) {
    const uint16_t mrg = 1u << prm::queue_feature_bits::MRG_RXBUF;
    rxa.queue_feature_bit_mask_12_3 = prm::queue_feature_mask_12_3(mrg);
    rxa.queue_feature_bit_mask_2_0 = prm::queue_feature_mask_2_0(mrg);
    auto p = payload(7, 1400);
    tx.post_tx(p);
    rx.post_rx(600);
    rx.post_rx(600);
    EXPECT_TRUE(loopback(tr, txio, &rxio, 10).blocked);  // 1412 bytes, 1200 of room
    EXPECT_EQ(txa.hw_available_index, 0);
    EXPECT_EQ(rxa.hw_available_index, 0);
    rx.post_rx(600);
    EXPECT_EQ(loopback(tr, txio, &rxio, 10).packets, 1u);
    ASSERT_EQ(rx.used_idx(), 3);
    std::vector<std::byte> got;
    for (uint16_t i = 0; i < 3; ++i) {
        auto [id, len] = rx.elem(i);
        EXPECT_EQ(len, i < 2 ? 600u : kHdr + p.size() - 1200) << i;
        const std::byte* b = g.at(rx.buf(uint16_t(id / 2)));
        got.insert(got.end(), b, b + len);
    }
    uint16_t num_buffers;
    std::memcpy(&num_buffers, got.data() + 10, 2);
    EXPECT_EQ(num_buffers, 3);
    ASSERT_EQ(got.size(), kHdr + p.size());
    EXPECT_EQ(std::memcmp(got.data() + kHdr, p.data(), p.size()), 0);
    EXPECT_EQ(txa.hw_used_index, 1);
    EXPECT_EQ(rxc.completed_desc, 3u);
}

// As a device that flushes once per packet (QEMU's virtqueue_flush): a
// driver that sees the used index move sees every buffer of the packet
// (Linux drops a merged packet whose later buffers are not used yet).
TEST_F(Loopback, MergeableReceiveMovesTheUsedIndexOnceAfterEveryBuffer) {
    const uint16_t mrg = 1u << prm::queue_feature_bits::MRG_RXBUF;
    rxa.queue_feature_bit_mask_12_3 = prm::queue_feature_mask_12_3(mrg);
    rxa.queue_feature_bit_mask_2_0 = prm::queue_feature_mask_2_0(mrg);
    tx.post_tx(payload(9, 1400));
    for (int i = 0; i < 3; ++i) rx.post_rx(600);
    std::vector<uint64_t> rx_writes;  // start addresses, in order
    const WriteObserver record = [&](uint64_t a, size_t) { rx_writes.push_back(a); };
    rxio.on_write = &record;
    EXPECT_EQ(loopback(tr, txio, &rxio, 10).packets, 1u);
    const uint64_t idx_addr = rx.used() + 2;
    ASSERT_FALSE(rx_writes.empty());
    EXPECT_EQ(std::count(rx_writes.begin(), rx_writes.end(), idx_addr), 1);
    EXPECT_EQ(rx_writes.back(), idx_addr);  // buffers and used elems first
    EXPECT_EQ(rx.used_idx(), 3);
}

TEST_F(Loopback, WithoutMergeableAPacketIsCutToOneBuffer) {
    auto p = payload(3, 1400);
    tx.post_tx(p);
    rx.post_rx(600);
    rx.post_rx(600);
    EXPECT_EQ(loopback(tr, txio, &rxio, 10).packets, 1u);
    ASSERT_EQ(rx.used_idx(), 1);
    EXPECT_EQ(rx.elem(0).second, 600u);
    EXPECT_EQ(g.load<uint16_t>(rx.buf(0) + 10), 1);  // num_buffers
}

TEST_F(Loopback, HeaderLengthFollowsFeatures) {
    EXPECT_EQ(net_hdr_len(txa), 12u);  // VERSION_1
    txa.virtio_version_1_0 = false;
    EXPECT_EQ(net_hdr_len(txa), 10u);
    txa.queue_feature_bit_mask_2_0 = 1u << prm::queue_feature_bits::MRG_RXBUF;
    EXPECT_EQ(net_hdr_len(txa), 12u);
}

struct BadCase {
    const char* name;
    uint8_t error_type;
    uint32_t prm::VirtqCounters::*counter;
};

class LoopbackBad : public Loopback, public ::testing::WithParamInterface<BadCase> {
protected:
    // Makes TX chain 0 bad in the way the case says.
    void make_bad(const std::string& n) {
        tx.post_tx(payload(0, 64));
        if (n == "buffer") tx.put_desc(1, kBase + kMemBytes - 8, 64, 0, 0);
        if (n == "loop") tx.put_desc(1, tx.buf(0) + 64, 64, kDescNext, 0);
        if (n == "too-long")
            for (uint16_t i = 0; i < kSize; ++i) tx.put_desc(i, tx.buf(0), 16, kDescNext, uint16_t((i + 1) % kSize));
        if (n == "index") tx.put_desc(0, tx.buf(0), kHdr, kDescNext, kSize);
        if (n == "ring") txa.used_addr = kBase + kMemBytes - 16;
        if (n == "avail") g.store_idx(tx.avail_addr() + 2, kSize + 1);
        if (n == "csum") {  // CSUM negotiated, NEEDS_CSUM, field ends 1 byte past the packet
            txa.queue_feature_bit_mask_12_3 =
                prm::queue_feature_mask_12_3(1u << prm::queue_feature_bits::CSUM);
            g.store<uint8_t>(tx.buf(0), 1);
            g.store<uint16_t>(tx.buf(0) + 6, 60);
            g.store<uint16_t>(tx.buf(0) + 8, 3);
        }
    }
};

TEST_P(LoopbackBad, ErrorTypeCounterAndNoWrite) {
    rx.post_rx();
    make_bad(GetParam().name);
    uint64_t before = g.writes;
    LoopbackResult r = loopback(tr, txio, &rxio, 100);
    EXPECT_EQ(r.packets, 0u);
    EXPECT_EQ(txio.error, GetParam().error_type);
    EXPECT_EQ(txc.*GetParam().counter, 1u);
    EXPECT_EQ(txc.error_cqes, 1u);
    EXPECT_EQ(g.writes, before);  // nothing written, in or outside guest memory
    EXPECT_EQ(txa.hw_available_index, 0);
    EXPECT_EQ(rxa.hw_available_index, 0);
    EXPECT_EQ(rxio.error, 0);
}

// A frontend truncating the memfd behind guest memory: real hardware keeps
// the pages it pinned; the emulator's access faults (SIGBUS), and the queue
// fails with kHostFault instead of the process dying. The test touches the
// guest's memory no more after the truncation.
TEST_F(Loopback, MemoryTruncatedUnderTheDeviceFailsTheQueueNotTheProcess) {
    tx.post_tx(payload(0, 64));
    rx.post_rx();
    const uint64_t faults = host_faults();
    g.mem_pages.truncate();
    LoopbackResult r = loopback(tr, txio, &rxio, 100);
    EXPECT_EQ(r.packets, 0u);
    EXPECT_EQ(txio.error, error_type::kHostFault);
    EXPECT_TRUE(txio.host_fault);
    EXPECT_EQ(txa.hw_available_index, 0);
    EXPECT_GT(host_faults(), faults);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, LoopbackBad,
    ::testing::Values(BadCase{"buffer", error_type::kBufferAddr, &prm::VirtqCounters::invalid_buffer},
                      BadCase{"loop", error_type::kChainLoop, &prm::VirtqCounters::exceed_max_chain},
                      BadCase{"too-long", error_type::kChainTooLong, &prm::VirtqCounters::exceed_max_chain},
                      BadCase{"index", error_type::kDescIndex, &prm::VirtqCounters::bad_desc_errors},
                      BadCase{"ring", error_type::kRingAddr, &prm::VirtqCounters::bad_desc_errors},
                      BadCase{"avail", error_type::kAvailIndex, &prm::VirtqCounters::bad_desc_errors},
                      BadCase{"csum", error_type::kNetHdr, &prm::VirtqCounters::bad_desc_errors}),
    [](const auto& i) {
        std::string n = i.param.name;
        std::erase(n, '-');
        return n;
    });

// A virtq's dirty-bitmap fields over the fake guest's whole log.
prm::VirtqAttr logging_attr(const FakeGuest& g) {
    prm::VirtqAttr a;
    a.dirty_bitmap_dump_enable = true;
    a.dirty_bitmap_mkey = kLogMkey;
    a.dirty_bitmap_addr = kLogBase;
    a.dirty_bitmap_size = uint32_t(g.log.size());
    a.vhost_log_page = 12;
    return a;
}

TEST(DirtyLogUnit, MarksEveryPageOfARangeInTheVhostLayout) {
    FakeGuest g;
    Translator tr = g.translator();
    prm::VirtqAttr a = logging_attr(g);
    DirtyLog log(tr, a);
    log.mark(0x3ffe, 4);  // GPA pages 3 and 4
    EXPECT_EQ(g.log[0], std::byte(0x18));
    EXPECT_EQ(log.marked(), 2u);
    EXPECT_FALSE(log.failed());
    log.mark(kBase + kMemBytes + 0x1000000, 1);  // a page past the bitmap
    EXPECT_TRUE(log.failed());
    a.dirty_bitmap_dump_enable = false;
    DirtyLog off(tr, a);
    off.mark(0x10000, 1);
    EXPECT_EQ(g.log[2], std::byte(0));
}

TEST(DirtyLogUnit, ALogTruncatedUnderTheDeviceFailsTheMarkNotTheProcess) {
    FakeGuest g;
    Translator tr = g.translator();
    DirtyLog log(tr, logging_attr(g));
    g.log_pages.truncate();
    log.mark(0x3ffe, 4);
    EXPECT_TRUE(log.failed());
    EXPECT_EQ(log.marked(), 0u);
}

// --- the datapath of an emulated device --------------------------------------

class Datapath : public EmuTest {
protected:
    void SetUp() override {
        EmuTest::SetUp();
        // The device's own translator: guest memory through real mkeys
        // (a direct MTT mkey over a umem of each buffer).
        mkey_ = direct_mkey(g.mem, kBase);
        log_mkey_ = direct_mkey(g.log, kLogBase);
        dev_->datapath().set_write_observer(g.observer());
    }
    void TearDown() override {
        stop_driver();
        EmuTest::TearDown();
    }
    uint32_t new_counters(mlx5dv_devx_obj** obj) {
        std::vector<std::byte> in(prm::kCountersCreateInBytes), out(prm::kGeneralObjOutHdrBytes);
        prm::encode_create_counters(in);
        *obj = A.obj_create(ctx_, in.data(), in.size(), out.data(), out.size());
        EXPECT_NE(*obj, nullptr);
        objs_.push_back(*obj);
        return uint32_t(prm::get_bits(out, 64, 32));
    }
    prm::VirtqCounters counters(mlx5dv_devx_obj* c) {
        std::vector<std::byte> in(prm::kGeneralObjInHdrBytes), out(prm::kCountersQueryOutBytes);
        uint32_t id = cid_[c];
        prm::encode_query_counters(id, in);
        EXPECT_EQ(A.obj_query(c, in.data(), in.size(), out.data(), out.size()), 0);
        return prm::decode_query_counters_out(out, id).value_or(prm::VirtqCounters{});
    }
    Vq make_queue(DriverRing& r, mlx5dv_devx_obj** ctr) {
        prm::VirtqAttr a = valid_attr_on_ring(r.attr(), mkey_);
        a.counter_set_id = new_counters(ctr);
        cid_[*ctr] = a.counter_set_id;
        Vq vq = create_virtq(a);
        EXPECT_EQ(vq.ret.rc, 0);
        return vq;
    }
    void set_state(const Vq& vq, VirtqState s) {
        prm::VirtqAttr a;
        a.state = s;
        ASSERT_EQ(modify_virtq(vq, a, prm::modify_bits::STATE).rc, 0);
    }
    void start_pair() {
        rxq = make_queue(rx, &rxc);
        txq = make_queue(tx, &txc);
        set_state(rxq, VirtqState::RDY);
        set_state(txq, VirtqState::RDY);
    }
    prm::VirtqAttr query(const Vq& vq) {
        prm::VirtqAttr a;
        EXPECT_EQ(query_virtq(vq, &a).rc, 0);
        return a;
    }
    // A driver thread: keeps kSlots/2 packets in flight with sequence
    // numbers, recycles RX buffers, checks every received packet is the
    // next in sequence (lossless, in order, exact bytes).
    void start_driver() {
        driver_ = std::jthread([this](std::stop_token st) {
            while (!st.stop_requested() || uint16_t(tx.avail - tx.seen) != 0) {
                bool draining = st.stop_requested();
                while (!draining && uint16_t(tx.avail - tx.seen) < kSlots / 2) {
                    tx.post_tx(payload(sent_, 64 + sent_ % 200));
                    ++sent_;
                }
                while (uint16_t(rx.avail - rx.seen) < kSlots / 2) rx.post_rx();
                (void)dev_->kick(txq.id);
                (void)dev_->kick(rxq.id);
                while (rx.seen != rx.used_idx()) {
                    auto [id, len] = rx.elem(rx.seen);
                    auto p = payload(received_, 64 + received_ % 200);
                    const std::byte* got = g.at(rx.buf(uint16_t(id / 2)));
                    if (len != kHdr + p.size() || std::memcmp(got + kHdr, p.data(), p.size()))
                        ++mismatches_;
                    ++received_;
                    ++rx.seen;
                }
                tx.seen = tx.used_idx();
                ++rounds_;
                std::this_thread::yield();
                if (draining && rounds_ > drain_limit_) break;
            }
        });
    }
    void stop_driver() {
        if (!driver_.joinable()) return;
        drain_limit_ = rounds_ + 2'000'000;
        driver_.request_stop();
        driver_.join();
    }

    FakeGuest g;
    DriverRing rx{g, 0}, tx{g, 1};
    Vq rxq, txq;
    mlx5dv_devx_obj *rxc = nullptr, *txc = nullptr;
    std::map<mlx5dv_devx_obj*, uint32_t> cid_;
    uint32_t mkey_ = 0, log_mkey_ = 0;
    std::jthread driver_;
    std::atomic<uint32_t> sent_{0}, received_{0}, mismatches_{0};
    std::atomic<uint64_t> rounds_{0}, drain_limit_{~0ull};
};

TEST_F(Datapath, KickMovesPacketsThroughTheDevice) {
    start_pair();
    constexpr uint16_t kN = 40;
    for (uint32_t i = 0; i < kN; ++i) {
        tx.post_tx(payload(i, 100));
        rx.post_rx();
    }
    ASSERT_TRUE(dev_->kick(txq.id));
    ASSERT_TRUE(g.wait([&] { return tx.used_idx() == kN && rx.used_idx() == kN; }));
    auto t = query(txq), r = query(rxq);
    EXPECT_EQ(t.hw_available_index, kN);
    EXPECT_EQ(t.hw_used_index, kN);
    EXPECT_EQ(r.hw_used_index, kN);
    auto tc = counters(txc), rc = counters(rxc);
    EXPECT_EQ(tc.received_desc, 2u * kN);
    EXPECT_EQ(tc.completed_desc, 2u * kN);
    EXPECT_EQ(rc.completed_desc, kN);
    EXPECT_EQ(tc.error_cqes + rc.error_cqes, 0u);
    EXPECT_GE(dev_->virtq_info(txq.id)->kicks.delivered, 1u);
}

TEST_F(Datapath, DoorbellPageWriteIsAKick) {
    start_pair();
    mlx5dv_var* var = A.alloc_var(ctx_, 0);
    ASSERT_NE(var, nullptr);
    void* page = mmap(nullptr, var->length, PROT_READ | PROT_WRITE, MAP_SHARED, ctx_->cmd_fd, var->mmap_off);
    ASSERT_NE(page, MAP_FAILED);
    tx.post_tx(payload(7, 80));
    rx.post_rx();
    // DPDK mlx5 vdpa: rte_write32(queue index, doorbell).
    std::atomic_ref<uint32_t>(*static_cast<uint32_t*>(page)).store(1);
    ASSERT_TRUE(g.wait([&] { return rx.used_idx() == 1; }));
    EXPECT_EQ(dev_->virtq_info(txq.id)->kicks.total, 1u);
    EXPECT_GE(dev_->datapath().stats().doorbells, 1u);
    munmap(page, var->length);
    A.free_var(var);
}

TEST_F(Datapath, SuspendIsExactUnderConcurrentTraffic) {
    start_pair();
    start_driver();
    constexpr int kCycles = 150;
    for (int c = 0; c < kCycles; ++c) {
        // Let some traffic through, then suspend both queues of the pair.
        uint64_t w = g.writes;
        ASSERT_TRUE(g.wait([&] { return g.writes > w + 4; })) << "cycle " << c;
        set_state(txq, VirtqState::SUSPEND);
        set_state(rxq, VirtqState::SUSPEND);
        uint64_t frozen = g.writes;
        auto t = query(txq), r = query(rxq);
        // Exact: what the object says is what the guest sees, and every
        // fetched chain was completed.
        EXPECT_EQ(t.hw_used_index, tx.used_idx()) << "cycle " << c;
        EXPECT_EQ(r.hw_used_index, rx.used_idx()) << "cycle " << c;
        EXPECT_EQ(t.hw_available_index, t.hw_used_index);
        EXPECT_EQ(r.hw_available_index, r.hw_used_index);
        // The driver keeps posting and kicking: nothing may be written now.
        uint64_t rounds = rounds_;
        ASSERT_TRUE(eventually([&] { return rounds_ >= rounds + 20; })) << "driver stalled";
        EXPECT_EQ(g.writes, frozen) << "device wrote guest memory while suspended, cycle " << c;
        EXPECT_EQ(query(txq).hw_used_index, t.hw_used_index);
        EXPECT_GT(dev_->virtq_info(txq.id)->kicks.pending, 0u);
        set_state(rxq, VirtqState::RDY);
        set_state(txq, VirtqState::RDY);
    }
    stop_driver();
    EXPECT_EQ(uint16_t(tx.avail - tx.seen), 0) << "not drained";
    EXPECT_EQ(received_, sent_);
    EXPECT_EQ(mismatches_, 0u);
    EXPECT_GT(sent_, uint32_t(kCycles));
    auto tc = counters(txc);
    EXPECT_EQ(tc.completed_desc, 2ull * sent_);
    EXPECT_EQ(counters(rxc).completed_desc, uint64_t(sent_));
    EXPECT_GT(dev_->virtq_info(txq.id)->kicks.replayed, 0u);
}

bool readable(int fd, int ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, ms) == 1;
}

// An event channel subscribed to `vq`'s OBJECT_CHANGE with `cookie`.
mlx5dv_devx_event_channel* watch_errors(const devx::DevxApi& A, ibv_context* ctx, const Vq& vq,
                                        uint64_t cookie) {
    auto* ch = A.create_event_channel(ctx, mlx5dv_devx_create_event_channel_flags(0));
    uint16_t evs[] = {prm::kEventObjectChange};
    if (ch && A.subscribe_devx_event(ch, vq.obj, sizeof evs, evs, cookie) != 0) {
        A.destroy_event_channel(ch);
        return nullptr;
    }
    return ch;
}

TEST_F(Datapath, BadDescriptorMovesOnlyThatQueueToErrWithEvent) {
    start_pair();
    auto* ch = watch_errors(A, ctx_, txq, 0x77);
    ASSERT_NE(ch, nullptr);
    rx.post_rx();
    tx.post_tx(payload(0, 64));
    tx.put_desc(1, 0xdead00000000ull, 64, 0, 0);  // payload outside guest memory
    ASSERT_TRUE(dev_->kick(txq.id));
    ASSERT_TRUE(readable(ch->fd, 20000));
    alignas(8) std::byte buf[8 + kEqeBytes];
    auto* hdr = reinterpret_cast<mlx5dv_devx_async_event_hdr*>(buf);
    ASSERT_EQ(A.get_event(ch, hdr, sizeof buf), ssize_t(sizeof buf));
    EXPECT_EQ(hdr->cookie, 0x77u);
    auto info = dev_->virtq_info(txq.id);
    EXPECT_EQ(info->state, VirtqState::ERR);
    EXPECT_EQ(info->error_type, error_type::kBufferAddr);
    EXPECT_EQ(query(txq).error_type, error_type::kBufferAddr);
    EXPECT_EQ(state_of(rxq), VirtqState::RDY);
    auto tc = counters(txc);
    EXPECT_EQ(tc.invalid_buffer, 1u);
    EXPECT_EQ(tc.error_cqes, 1u);
    EXPECT_EQ(tc.completed_desc, 0u);
    EXPECT_EQ(g.writes, 0u);
    EXPECT_EQ(dev_->datapath().stats().errors, 1u);
    A.destroy_event_channel(ch);
}

// Through the device: the virtq whose memory the frontend truncated goes to
// ERR (kHostFault, an OBJECT_CHANGE event) and the datapath thread lives on.
TEST_F(Datapath, MemoryTruncatedUnderARunningQueueMovesItToErr) {
    start_pair();
    auto* ch = watch_errors(A, ctx_, txq, 0x78);
    ASSERT_NE(ch, nullptr);
    rx.post_rx();
    tx.post_tx(payload(0, 64));
    g.mem_pages.truncate();
    ASSERT_TRUE(dev_->kick(txq.id));
    ASSERT_TRUE(readable(ch->fd, 20000));
    auto info = dev_->virtq_info(txq.id);
    EXPECT_EQ(info->state, VirtqState::ERR);
    EXPECT_EQ(info->error_type, error_type::kHostFault);
    EXPECT_EQ(dev_->datapath().stats().errors, 1u);
    A.destroy_event_channel(ch);
}

TEST_F(Datapath, DirtyBitmapMarksExactlyTheWrittenPages) {
    start_pair();
    prm::VirtqAttr a;
    a.dirty_bitmap_mkey = log_mkey_;
    a.dirty_bitmap_addr = kLogBase;
    a.dirty_bitmap_size = uint32_t(g.log.size());
    a.vhost_log_page = 12;
    a.dirty_bitmap_dump_enable = true;
    namespace mb = prm::modify_bits;
    for (const Vq* q : {&rxq, &txq})
        ASSERT_EQ(modify_virtq(*q, a, mb::DIRTY_BITMAP_PARAMS | mb::DIRTY_BITMAP_DUMP_ENABLE).rc, 0);
    for (uint32_t i = 0; i < 20; ++i) {
        tx.post_tx(payload(i, 1500));
        rx.post_rx();
    }
    ASSERT_TRUE(dev_->kick(txq.id));
    ASSERT_TRUE(g.wait([&] { return rx.used_idx() == 20 && tx.used_idx() == 20; }));
    // The device marks a page right after writing it (used->idx included):
    // read the bitmap as the device writes it, atomically, until it settles.
    std::set<uint64_t> logged;
    auto read_log = [&] {
        logged.clear();
        for (size_t b = 0; b < g.log.size(); ++b) {
            auto v = std::atomic_ref<std::byte>(g.log[b]).load(std::memory_order_acquire);
            for (int bit = 0; bit < 8; ++bit)
                if (std::to_integer<int>(v) & (1 << bit)) logged.insert(b * 8 + bit);
        }
        std::lock_guard lk(g.mu);
        return logged == g.pages;
    };
    EXPECT_TRUE(eventually(read_log));
    std::lock_guard lk(g.mu);
    EXPECT_EQ(logged, g.pages);
    EXPECT_TRUE(logged.count(rx.used() >> 12) && logged.count(tx.used() >> 12));
    EXPECT_TRUE(logged.count(rx.buf(19) >> 12));
    EXPECT_FALSE(logged.count(tx.buf(0) >> 12));  // TX buffers are only read
}

TEST_F(Datapath, DirtyLogOffMarksNothing) {
    start_pair();
    for (uint32_t i = 0; i < 5; ++i) {
        tx.post_tx(payload(i, 200));
        rx.post_rx();
    }
    ASSERT_TRUE(dev_->kick(txq.id));
    ASSERT_TRUE(g.wait([&] { return rx.used_idx() == 5; }));
    for (std::byte b : g.log) EXPECT_EQ(b, std::byte(0));
}

TEST_F(Datapath, IdleThreadSleepsInsteadOfSpinning) {
    start_pair();
    ASSERT_TRUE(dev_->kick(txq.id));
    // After the spin phase every idle pass is followed by a sleep.
    auto s0 = dev_->datapath().stats();
    (void)eventually([&] { return dev_->datapath().stats().sleeps >= s0.sleeps + 20; });
    auto s1 = dev_->datapath().stats();
    ASSERT_GE(s1.sleeps, s0.sleeps + 20) << "datapath never slept";
    EXPECT_LE(s1.passes - s0.passes, (s1.sleeps - s0.sleeps) + 64 + 2);
}

}  // namespace
}  // namespace mlx5async::emu::test
