// Interrupts in QP event mode, end to end: guest rings in memory, a queue
// pair whose virtqs send interrupts through firmware QP -> driver QP -> CQ,
// the driver side (post receive WQEs, poll CQEs, arm through the UAR page)
// written as DPDK's mlx5_vdpa_event.c does it. Properties, not times: the
// device thread is waited for with deadlines.
#include <endian.h>
#include <fcntl.h>
#include <poll.h>

#include <thread>

#include "common/prm/mkey.hpp"
#include "emu/datapath/datapath.hpp"
#include "event_qp_fixture.hpp"
#include "guest_rings.hpp"

namespace mlx5async::emu::test {
namespace {

using prm::VirtqState;
namespace mb = prm::modify_bits;

// The driver's end of one virtq's interrupt path.
struct Path {
    Made cq, fw, drv;
    prm::CqAttr ca;
    std::byte* cqes = nullptr;
    std::byte* cq_dbr = nullptr;
    std::byte* qp_dbr = nullptr;
    uint16_t posted = 0;  // receive WQEs posted (QP doorbell record)
    uint32_t ci = 0;      // CQEs consumed
    uint8_t sn = 0;       // arm sequence number
};

void store_be32(std::byte* p, uint32_t v) {
    std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(p)).store(htobe32(v), std::memory_order_release);
}

bool readable(int fd, int ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, ms) == 1;
}

class Interrupts : public EventQpTest {
protected:
    void SetUp() override {
        EventQpTest::SetUp();
        mkey_ = direct_mkey(g.mem, kBase);
        ch_ = A.create_event_channel(ctx_, mlx5dv_devx_create_event_channel_flags(0));
        ASSERT_NE(ch_, nullptr);
        fcntl(ch_->fd, F_SETFL, O_NONBLOCK);
    }
    void TearDown() override {
        if (ch_) A.destroy_event_channel(ch_);
        EventQpTest::TearDown();
    }
    // CQ (CQEs marked INVALID, owned by hardware), firmware QP, driver QP,
    // connected (DPDK mlx5_vdpa_event_qp_create), CQ subscribed with `cookie`.
    Path path(uint64_t cookie, bool collapsed = false, uint8_t log = 4) {
        Path p;
        p.ca = cq_attr(log, collapsed);
        p.cqes = cq_mem_[p.ca.cq_umem_id];
        p.cq_dbr = p.cqes + p.ca.dbr_addr;
        for (uint32_t i = 0; i < (1u << log); ++i) p.cqes[64 * i + 63] = std::byte{0xf1};
        p.cq = create_cq(p.ca);
        p.fw = create_qp(fw_qp_attr());
        prm::QpAttr qa = drv_qp_attr(p.cq.id, log);
        p.qp_dbr = qp_mem_[qa.wq_umem_id] + qa.dbr_addr;
        p.drv = create_qp(qa);
        EXPECT_TRUE(p.cq.obj && p.fw.obj && p.drv.obj);
        connect(p.fw, p.drv);
        uint16_t comp[] = {prm::kEventCompletion};
        EXPECT_EQ(A.subscribe_devx_event(ch_, p.cq.obj, sizeof comp, comp, cookie), 0);
        return p;
    }
    void post_wqes(Path& p, uint16_t n) {
        p.posted = uint16_t(p.posted + n);
        store_be32(p.qp_dbr, p.posted);
    }
    // mlx5_vdpa_cq_arm: record, then the UAR register (big-endian).
    void arm(Path& p, uint32_t ci) {
        uint32_t word = prm::cq_arm_word({p.sn++, prm::CqArmCmd::NEXT, ci});
        store_be32(p.cq_dbr + 4, word);
        write_uar(htobe64(prm::cq_uar_doorbell(word, p.cq.id)));
    }
    void write_uar(uint64_t be) {
        auto* reg = reinterpret_cast<uint64_t*>(static_cast<std::byte*>(uar_->base_addr) +
                                                prm::kUarCqDoorbellOffset);
        std::atomic_ref<uint64_t>(*reg).store(be, std::memory_order_release);
    }
    prm::Cqe cqe(const Path& p, uint32_t slot) {
        std::span<const std::byte, prm::kCqeBytes> s(p.cqes + 64 * slot, prm::kCqeBytes);
        return prm::decode_cqe(s);
    }
    // Linux-style poll: CQE `ci` is new when its owner bit matches the pass.
    uint32_t poll_cq(Path& p) {
        uint32_t n = 0, mask = (1u << p.ca.log_cq_size) - 1;
        for (;;) {
            prm::Cqe c = cqe(p, p.ci & mask);
            if (c.opcode == uint8_t(prm::CqeOpcode::INVALID) || c.owner != ((p.ci >> p.ca.log_cq_size) & 1))
                break;
            EXPECT_EQ(c.opcode, uint8_t(prm::CqeOpcode::RESP_SEND));
            EXPECT_EQ(c.wqe_counter, uint16_t(p.ci)) << "one receive WQE per CQE, in order";
            EXPECT_EQ(c.qpn, p.drv.id);
            ++p.ci;
            ++n;
        }
        store_be32(p.cq_dbr, p.ci);
        return n;
    }
    // Events on the channel: their cookies (each EQE checked).
    std::vector<uint64_t> events() {
        std::vector<uint64_t> cookies;
        alignas(8) std::byte buf[8 + kEqeBytes];
        auto* hdr = reinterpret_cast<mlx5dv_devx_async_event_hdr*>(buf);
        while (A.get_event(ch_, hdr, sizeof buf) == ssize_t(sizeof buf)) {
            auto eqe = std::span<const std::byte>(buf + 8, kEqeBytes);
            EXPECT_EQ(prm::get_bits(eqe, 8, 8), prm::kEventCompletion);
            cqn_of_.push_back(uint32_t(prm::get_bits(eqe, prm::kEqeCompCqnOffset * 8, 32)));
            cookies.push_back(hdr->cookie);
        }
        return cookies;
    }
    Vq queue(DriverRing& r, prm::EventMode mode, uint32_t fw_qpn) {
        prm::VirtqAttr a = valid_attr_on_ring(r.attr(), mkey_);
        a.event_mode = mode;
        a.event_qpn_or_msix = fw_qpn;
        Vq vq = create_virtq(a);
        EXPECT_EQ(vq.ret.rc, 0) << std::hex << vq.ret.syndrome;
        return vq;
    }
    void set_state(const Vq& vq, VirtqState s) {
        prm::VirtqAttr a;
        a.state = s;
        ASSERT_EQ(modify_virtq(vq, a, mb::STATE).rc, 0);
    }
    // RX queue 0 in QP mode through `rxp`; TX queue 1 in NO_MSIX.
    void start(Path& rxp) {
        rxq_ = queue(rx, prm::EventMode::QP, rxp.fw.id);
        txq_ = queue(tx, prm::EventMode::NO_MSIX, 0);
        set_state(rxq_, VirtqState::RDY);
        set_state(txq_, VirtqState::RDY);
    }
    // n packets looped back, RX used index waited for.
    void traffic(uint32_t n) {
        uint16_t want = uint16_t(rx.used_idx() + n);
        for (uint32_t i = 0; i < n; ++i) {
            tx.post_tx(payload(i, 64));
            rx.post_rx();
        }
        ASSERT_TRUE(dev_->kick(txq_.id));
        ASSERT_TRUE(eventually([&] { return rx.used_idx() == want; }));
        tx.seen = tx.used_idx();
        rx.seen = rx.used_idx();
    }
    IrqCounters irq(const Vq& vq) { return dev_->virtq_info(vq.id)->irq; }
    CqInfo cq(const Path& p) { return *dev_->cq_info(p.cq.id); }
    // Some whole datapath passes ran since now.
    void passes(uint64_t n = 50) {
        uint64_t p0 = dev_->datapath().stats().passes;
        ASSERT_TRUE(eventually([&] { return dev_->datapath().stats().passes >= p0 + n; }));
    }

    FakeGuest g;
    DriverRing rx{g, 0}, tx{g, 1};
    uint32_t mkey_ = 0;
    mlx5dv_devx_event_channel* ch_ = nullptr;
    Vq rxq_, txq_;
    std::vector<uint32_t> cqn_of_;
};

TEST_F(Interrupts, UsedMovesWriteACqeAndAnArmedCqRaisesOneEvent) {
    Path p = path(0xc0);
    post_wqes(p, 16);
    start(p);
    traffic(1);
    ASSERT_TRUE(eventually([&] { return cq(p).produced == 1; }));
    prm::Cqe c = cqe(p, 0);
    EXPECT_EQ(c.opcode, uint8_t(prm::CqeOpcode::RESP_SEND));
    EXPECT_EQ(c.wqe_counter, 0);
    EXPECT_FALSE(c.owner);
    EXPECT_EQ(irq(rxq_).raised, 1u);
    EXPECT_EQ(irq(txq_).raised, 0u) << "NO_MSIX: nobody is told";
    passes();
    EXPECT_TRUE(events().empty()) << "never armed: no event";
    // Armed with ci behind the CQEs written: the event fires at once.
    arm(p, 0);
    ASSERT_TRUE(readable(ch_->fd, 20000));
    EXPECT_EQ(events(), std::vector<uint64_t>{0xc0});
    EXPECT_EQ(cqn_of_.back(), p.cq.id);
    EXPECT_FALSE(cq(p).armed);
    // Poll, repost, re-arm at the consumer index: quiet until the next CQE.
    EXPECT_EQ(poll_cq(p), 1u);
    post_wqes(p, 1);
    arm(p, p.ci);
    ASSERT_TRUE(eventually([&] { return cq(p).armed; }));
    passes();
    EXPECT_TRUE(events().empty());
    traffic(3);
    ASSERT_TRUE(readable(ch_->fd, 20000));
    EXPECT_EQ(events().size(), 1u) << "one event per arm";
    ASSERT_TRUE(eventually([&] { return cq(p).produced == irq(rxq_).raised; }));
    EXPECT_GE(poll_cq(p), 1u);
    EXPECT_EQ(dev_->datapath().stats().irq.events, 2u);
    EXPECT_EQ(cq(p).events, 2u);
}

TEST_F(Interrupts, NoInterruptFlagSuppresses) {
    Path p = path(1);
    post_wqes(p, 16);
    start(p);
    g.store<uint16_t>(rx.avail_addr(), 1);  // VRING_AVAIL_F_NO_INTERRUPT
    traffic(5);
    ASSERT_TRUE(eventually([&] { return irq(rxq_).suppressed >= 1; }));
    passes();
    EXPECT_EQ(irq(rxq_).raised, 0u);
    EXPECT_EQ(cq(p).produced, 0u);
    g.store<uint16_t>(rx.avail_addr(), 0);
    traffic(1);
    ASSERT_TRUE(eventually([&] { return irq(rxq_).raised == 1; }));
    EXPECT_EQ(cq(p).produced, 1u);
    EXPECT_GE(dev_->datapath().stats().irq.suppressed, 1u);
}

TEST_F(Interrupts, WithoutAReceiveWqeTheInterruptWaitsAndIsNotLost) {
    Path p = path(2);
    start(p);  // no WQE posted
    traffic(1);
    ASSERT_TRUE(eventually([&] { return irq(rxq_).rnr == 1; }));
    EXPECT_TRUE(irq(rxq_).pending);
    traffic(4);  // coalesces with the owed one
    passes();
    EXPECT_EQ(irq(rxq_).rnr, 1u);
    EXPECT_EQ(cq(p).produced, 0u);
    arm(p, 0);
    post_wqes(p, 1);
    ASSERT_TRUE(eventually([&] { return irq(rxq_).raised == 1; }));
    ASSERT_TRUE(readable(ch_->fd, 20000));
    EXPECT_EQ(events().size(), 1u);
    EXPECT_FALSE(irq(rxq_).pending);
    EXPECT_EQ(poll_cq(p), 1u) << "owed interrupts coalesce into one CQE";
    EXPECT_EQ(dev_->qp_info(p.drv.id)->rq_consumed, 1);
}

TEST_F(Interrupts, SuspendedQueuesSendNothingAndResumeContinues) {
    Path p = path(3);
    start(p);
    traffic(2);
    ASSERT_TRUE(eventually([&] { return irq(rxq_).pending && irq(rxq_).rnr == 1; }));
    set_state(txq_, VirtqState::SUSPEND);
    set_state(rxq_, VirtqState::SUSPEND);
    arm(p, 0);
    post_wqes(p, 8);  // the owed interrupt could go now, but the queue is suspended
    passes();
    EXPECT_EQ(cq(p).produced, 0u);
    EXPECT_TRUE(irq(rxq_).pending);
    EXPECT_TRUE(events().empty());
    set_state(rxq_, VirtqState::RDY);
    set_state(txq_, VirtqState::RDY);
    ASSERT_TRUE(eventually([&] { return cq(p).produced == 1; }));
    ASSERT_TRUE(readable(ch_->fd, 20000));
    EXPECT_EQ(events().size(), 1u);
    EXPECT_EQ(poll_cq(p), 1u);
    traffic(1);  // and the datapath continues
    ASSERT_TRUE(eventually([&] { return cq(p).produced == 2; }));
}

// DPDK's collapsed CQ: every CQE at index 0, the driver reads the last
// wqe_counter and posts WQEs cq_size ahead of its consumer index.
TEST_F(Interrupts, CollapsedCqAsDpdkPollsIt) {
    Path p = path(4, true, 2);  // 4 CQEs, 4 WQEs
    post_wqes(p, 4);
    reinterpret_cast<uint16_t*>(p.cqes + 60)[0] = htobe16(0xffff);  // DPDK's initial wqe_counter
    start(p);
    uint16_t cq_ci = 0;
    for (int round = 0; round < 10; ++round) {
        traffic(1);
        ASSERT_TRUE(eventually([&] { return cq(p).produced == uint32_t(round + 1); }));
        uint16_t cur = cqe(p, 0).wqe_counter;
        uint16_t comp = uint16_t(cur + 1 - cq_ci);  // mlx5_vdpa_cq_poll
        EXPECT_EQ(comp, 1) << "round " << round;
        cq_ci = uint16_t(cq_ci + comp);
        store_be32(p.cq_dbr, cq_ci);
        store_be32(p.qp_dbr, uint32_t(cq_ci + 4));
    }
    EXPECT_EQ(irq(rxq_).rnr, 0u);
}

// No lost wake-up, end to end: a driver that looks at the ring only when an
// event arrives (poll the collapsed CQ, repost, re-arm: DPDK's
// ONLY_INTERRUPT mode) still sees every used entry once traffic stops.
TEST_F(Interrupts, EventDrivenDriverSeesEveryUsedEntry) {
    Path p = path(7, true, 4);
    post_wqes(p, 16);
    reinterpret_cast<uint16_t*>(p.cqes + 60)[0] = htobe16(0xffff);
    start(p);
    arm(p, 0);
    std::atomic<uint16_t> seen_used{0};
    std::atomic<uint32_t> wakeups{0};
    std::jthread driver([&](std::stop_token st) {
        uint16_t cq_ci = 0;
        while (!st.stop_requested()) {
            if (!readable(ch_->fd, 50)) continue;
            events();
            // wqe_counter: one load, the device rewrites the CQE concurrently.
            uint16_t raw = std::atomic_ref<uint16_t>(reinterpret_cast<uint16_t*>(p.cqes + 60)[0])
                               .load(std::memory_order_acquire);
            uint16_t comp = uint16_t(be16toh(raw) + 1 - cq_ci);
            cq_ci = uint16_t(cq_ci + comp);
            store_be32(p.cq_dbr, cq_ci);
            store_be32(p.qp_dbr, uint32_t(cq_ci + 16));
            seen_used = rx.used_idx();  // the guest's interrupt handler
            ++wakeups;
            arm(p, cq_ci);
        }
    });
    uint32_t total = 0;
    for (int round = 0; round < 100; ++round) {
        uint32_t n = 1 + round % 7;
        traffic(n);
        total += n;
    }
    EXPECT_TRUE(eventually([&] { return seen_used == uint16_t(total); }))
        << "driver saw " << seen_used << " of " << total;
    driver.request_stop();
    driver.join();
    EXPECT_GE(wakeups, 1u);
    EXPECT_EQ(irq(rxq_).raised, cq(p).produced);
}

// Two CQs on one UAR page: the register keeps only the last doorbell, the
// other CQ's arm is found in its doorbell record.
TEST_F(Interrupts, OverwrittenArmDoorbellIsFoundInTheRecord) {
    Path a = path(10), b = path(11);
    arm(a, 0);
    arm(b, 0);
    ASSERT_TRUE(eventually([&] { return cq(a).armed && cq(b).armed; }));
    // Both fire once (raise a CQE each by hand: connect a virtq to each).
    rxq_ = queue(rx, prm::EventMode::QP, a.fw.id);
    txq_ = queue(tx, prm::EventMode::QP, b.fw.id);
    post_wqes(a, 4);
    post_wqes(b, 4);
    set_state(rxq_, VirtqState::RDY);
    set_state(txq_, VirtqState::RDY);
    traffic(1);
    ASSERT_TRUE(eventually([&] { return cq(a).events == 1 && cq(b).events == 1; }));
    events();
    EXPECT_EQ(poll_cq(a), 1u);
    EXPECT_EQ(poll_cq(b), 1u);
    // Re-arm a in its record only; b's doorbell is the register's last write.
    uint32_t wa = prm::cq_arm_word({a.sn++, prm::CqArmCmd::NEXT, a.ci});
    store_be32(a.cq_dbr + 4, wa);
    arm(b, b.ci);
    ASSERT_TRUE(eventually([&] { return cq(a).armed && cq(b).armed; }));
    traffic(1);
    ASSERT_TRUE(eventually([&] { return cq(a).events == 2 && cq(b).events == 2; }));
    auto ev = events();
    std::sort(ev.begin(), ev.end());
    EXPECT_EQ(ev, (std::vector<uint64_t>{10, 11}));
}

}  // namespace
}  // namespace mlx5async::emu::test
