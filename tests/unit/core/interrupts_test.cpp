// Interrupts through the device core over mlx5emu: virtqs in QP event mode,
// the device's completions relayed to each ring's callfd, NO_INTERRUPT
// honoured, the event QPs kept across close/conf, event_mode=none.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "testkit/eventually.hpp"
#include "common/base/unique_fd.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"
#include "core_fixture.hpp"
#include "emu/faults.hpp"

namespace mlx5async::core {
namespace {

using testing_support::Fixture;
using testing_support::GuestRing;
using testing_support::guest_ram;
using testing_support::kBufGpa;
using testing_support::kDescWrite;
using Interrupts = Fixture;

constexpr uint16_t kNoInterrupt = 1;  // VRING_AVAIL_F_NO_INTERRUPT

// Reads an eventfd's counter (0 when nothing was written).
uint64_t drain(const UniqueFd& fd) {
    uint64_t n = 0;
    return read(fd.get(), &n, sizeof n) == ssize_t(sizeof n) ? n : 0;
}

using mlx5async::testing::eventually;

struct Pair : Interrupts {
    GuestConfig g;
    UniqueFd call[2];

    void start() {
        open("cx7", 1);
        g = guest_in_ram(2);
        for (int i = 0; i < 2; i++) {
            auto fd = UniqueFd::eventfd(0, EFD_NONBLOCK);
            ASSERT_TRUE(fd);
            call[i] = std::move(*fd);
            g.vrings[i].callfd = call[i].get();
        }
        enable_all(2);
        ASSERT_TRUE(dev->configure(g));
    }
    // What vhost does with dev_close's indexes: the next dev_conf's bases.
    void hand_back(const std::vector<RingIndexes>& out) {
        for (const auto& ri : out) {
            g.vrings[ri.ring].last_avail_idx = ri.last_avail_idx;
            g.vrings[ri.ring].last_used_idx = ri.last_used_idx;
        }
    }
    // One packet TX ring 1 -> RX ring 0, kicked; waits for both used indexes.
    void one_packet() {
        GuestRing rx{g.vrings[0]}, tx{g.vrings[1]};
        uint16_t rx_used = rx.used_idx(), tx_used = tx.used_idx();
        rx.post(kBufGpa, 2048, kDescWrite);
        tx.post(kBufGpa + 4096, 12 + 64, 0);  // virtio-net header + 64 bytes
        ASSERT_TRUE(emu_dev().kick(dev->vq_info()[1].obj_id));
        ASSERT_TRUE(eventually([&] { return rx.used_idx() == uint16_t(rx_used + 1) &&
                                            tx.used_idx() == uint16_t(tx_used + 1); }));
    }
};

TEST_F(Pair, VirtqsNameTheirOwnFirmwareQp) {
    start();
    uint32_t q0 = fw(0).attr.event_qpn_or_msix, q1 = fw(1).attr.event_qpn_or_msix;
    EXPECT_EQ(fw(0).attr.event_mode, prm::EventMode::QP);
    EXPECT_EQ(fw(1).attr.event_mode, prm::EventMode::QP);
    EXPECT_NE(q0, 0u);
    EXPECT_NE(q1, 0u);
    EXPECT_NE(q0, q1);
    EXPECT_TRUE(dev->irq_stats().enabled);
}

TEST_F(Pair, UsedBuffersEndAsCallfdWrites) {
    start();
    EXPECT_EQ(drain(call[0]) + drain(call[1]), 0u);  // idle: nothing
    one_packet();
    uint64_t got[2] = {};
    ASSERT_TRUE(eventually([&] {
        for (int i = 0; i < 2; i++) got[i] += drain(call[i]);
        return got[0] >= 1 && got[1] >= 1;
    }));
    EXPECT_EQ(got[0], 1u);  // one used buffer each: one interrupt each
    EXPECT_EQ(got[1], 1u);
    EXPECT_EQ(dev->irq_calls(0), 1u);
    EXPECT_EQ(dev->irq_calls(1), 1u);
    // Re-armed: the next packet interrupts again.
    one_packet();
    ASSERT_TRUE(eventually([&] { return dev->irq_calls(0) == 2 && dev->irq_calls(1) == 2; }));
    EXPECT_EQ(drain(call[0]), 1u);
    EXPECT_EQ(drain(call[1]), 1u);
    auto s = dev->irq_stats();
    EXPECT_EQ(s.completions, 4u);
    EXPECT_EQ(s.calls, 4u);
    EXPECT_EQ(s.no_callfd, 0u);
}

TEST_F(Pair, NoInterruptFlagSilencesTheRingNotItsTraffic) {
    start();
    GuestRing rx{g.vrings[0]}, tx{g.vrings[1]};
    rx.set_avail_flags(kNoInterrupt);
    tx.set_avail_flags(kNoInterrupt);
    for (int i = 0; i < 5; i++) one_packet();
    // The marker: RX wants interrupts again. The device's datapath (one
    // thread) decides the passes in order, so once the marker's interrupt
    // arrived every earlier pass was decided: TX, still silenced, raised
    // none. RX may also raise one for its last silent pass: the device reads
    // avail->flags after writing the used index (virtio 1.x 2.7.7), and the
    // flag was cleared right after that index was seen.
    rx.set_avail_flags(0);
    one_packet();
    ASSERT_TRUE(eventually([&] { return dev->irq_calls(0) >= 1; }));
    EXPECT_GE(fw(0).irq.raised, 1u);
    EXPECT_LE(fw(0).irq.raised, 2u);
    EXPECT_EQ(fw(1).irq.raised, 0u);
    EXPECT_EQ(fw(1).irq.needed, 0u);
    EXPECT_GE(fw(1).irq.suppressed, 1u);  // the flag was read, not missed
    EXPECT_GE(drain(call[0]), 1u);
    EXPECT_EQ(drain(call[1]), 0u);
    EXPECT_EQ(dev->irq_calls(1), 0u);
}

TEST_F(Pair, EventQpsSurviveCloseAndConf) {
    start();
    uint32_t q0 = fw(0).attr.event_qpn_or_msix;
    auto objects = emu_dev().object_counts();
    for (int cycle = 0; cycle < 3; cycle++) {
        std::vector<RingIndexes> out;
        ASSERT_TRUE(dev->close(out));
        hand_back(out);
        enable_all(2);
        ASSERT_TRUE(dev->configure(g));
        one_packet();
        ASSERT_TRUE(eventually([&] { return dev->irq_calls(0) == uint64_t(cycle + 1); }));
    }
    EXPECT_EQ(fw(0).attr.event_qpn_or_msix, q0);
    EXPECT_EQ(emu_dev().object_counts().virtqs, objects.virtqs);
    EXPECT_EQ(drain(call[0]), 3u);
}

TEST_F(Pair, CleanupDropsTheCallfds) {
    start();
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    hand_back(out);
    dev->cleanup();
    // No vhost connection: the device may still complete (a resume by the
    // application), nobody is told, nothing is written to a stale fd.
    enable_all(2);
    g.vrings[0].callfd = g.vrings[1].callfd = -1;
    ASSERT_TRUE(dev->configure(g));
    one_packet();
    ASSERT_TRUE(eventually([&] { return dev->irq_stats().no_callfd >= 2; }));
    EXPECT_EQ(drain(call[0]) + drain(call[1]), 0u);
}

// A frontend's callfd that takes no write (a blocking eventfd one short of
// its limit) must not wedge the relay: the ring's interrupt is dropped and
// counted, the other ring still gets its own, the counters answer.
TEST_F(Pair, ACallfdAtItsLimitBlocksNothing) {
    open("cx7", 1);
    g = guest_in_ram(2);
    auto full = UniqueFd::eventfd(0, 0);  // blocking, as a careless frontend's
    auto ok = UniqueFd::eventfd(0, EFD_NONBLOCK);
    ASSERT_TRUE(full && ok);
    ASSERT_EQ(eventfd_write(full->get(), 0xfffffffffffffffeull), 0);
    call[0] = std::move(*full);
    call[1] = std::move(*ok);
    g.vrings[0].callfd = call[0].get();
    g.vrings[1].callfd = call[1].get();
    enable_all(2);
    ASSERT_TRUE(dev->configure(g));
    for (int i = 0; i < 2; i++) {
        one_packet();
        ASSERT_TRUE(eventually([&] { return dev->irq_calls(1) == uint64_t(i + 1); }));
        ASSERT_TRUE(eventually([&] { return dev->irq_stats().callfd_full == uint64_t(i + 1); }));
    }
    EXPECT_EQ(dev->irq_calls(0), 0u);
    EXPECT_EQ(drain(call[1]), 2u);
}

// A start that creates its virtqs makes each ring's event QP as one chain
// (CQ, both QPs, their connection) in the batch of the virtqs' umems, after
// the ring's chain of umems (the QP's among them). One ring's INIT2RTR is
// refused, or never answered before the deadline:
// the start fails naming the step, the other rings keep their event QPs
// (nothing is made twice), the failed chain's objects are released once
// the device answers, its umem (another chain's step) after them, and the
// next start creates what is missing.
struct EventQpFault : Interrupts, ::testing::WithParamInterface<bool> {};

TEST_P(EventQpFault, OneRingsChainFailsTheOthersKeepTheirsAndTheNextStartEndsIt) {
    const bool hang = GetParam();
    timeout_ms = 100;
    // The start's deadline (timeout_ms per wave of its commands) before the
    // kernel's command timeout fails the hung command.
    emu_extra = ",cmd_timeout_ms=3000";
    start_attempts = 1;  // what one failed attempt leaves
    open("cx7", 0);
    const auto base = emu_dev().object_counts();
    emu::FaultRule r;
    r.match.opcode = uint16_t(prm::Opcode::INIT2RTR_QP);
    r.match.nth = 5;  // one QP of the third ring to get there
    if (hang) r.action = emu::FaultAction::Hang;
    else r.status = uint8_t(prm::Status::BAD_PARAM_ERR);
    emu_dev().faults().add(r);
    auto g = guest_in_ram(4);
    enable_all(4);
    auto res = dev->configure(g);
    ASSERT_FALSE(res);
    EXPECT_NE(res.error().what.find("connecting the"), std::string::npos) << res.error().what;
    EXPECT_NE(res.error().what.find(hang ? "deadline" : "INIT2RTR_QP"), std::string::npos) << res.error().what;
    emu_dev().faults().clear();
    ASSERT_TRUE(eventually([&] { return dev->command_health().unanswered == 0; }));
    // Three rings' pairs stay; the fourth's CQ and QPs are gone.
    ASSERT_TRUE(eventually([&] {
        auto c = emu_dev().object_counts();
        return c.cqs == base.cqs + 3 && c.qps == base.qps + 6;
    })) << "cqs " << emu_dev().object_counts().cqs << ", qps " << emu_dev().object_counts().qps;
    const size_t umems = emu_dev().object_counts().umems;  // the failed chain's umem among them
    ASSERT_TRUE(dev->configure(g));
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Ready));
    auto c = emu_dev().object_counts();
    EXPECT_EQ(c.cqs, base.cqs + 4);
    EXPECT_EQ(c.qps, base.qps + 8);
    EXPECT_EQ(c.umems, umems) << "the failed chain's umem deregistered, the new chain's registered";
    for (uint16_t i = 0; i < 4; i++) EXPECT_NE(fw(i).attr.event_qpn_or_msix, 0u) << "ring " << i;
}

INSTANTIATE_TEST_SUITE_P(Start, EventQpFault, ::testing::Values(false, true),
                         [](const auto& i) { return i.param ? "hang" : "refused"; });

// A ring's event-QP umem is registered in the ring's own chain, after its
// three virtq umems. Refused for the one ring a start adds: the start fails
// naming it, the ring gets no CQ, QP or virtq (their commands wait for that
// chain and are never issued), and the next start makes them.
TEST_F(Interrupts, ARefusedEventQpUmemFailsTheStartAndTheNextMakesIt) {
    open("cx7", 0);
    auto g = guest_in_ram(3);
    enable_all(2);
    ASSERT_TRUE(dev->configure(g));  // rings 0 and 1, and the memory
    const auto base = emu_dev().object_counts();
    emu::FaultRule r;
    r.match.opcode = uint16_t(prm::Opcode::CREATE_UMEM);
    r.match.nth = 4;  // ring 2's chain: its three umems, then its event QP's
    r.status = uint8_t(prm::Status::BAD_PARAM_ERR);
    emu_dev().faults().add(r);
    enable_all(3);
    auto res = dev->configure(g);
    ASSERT_FALSE(res);
    EXPECT_NE(res.error().what.find("virtq 2: event QP umem"), std::string::npos) << to_string(res.error());
    emu_dev().faults().clear();
    auto c = emu_dev().object_counts();
    EXPECT_EQ(c.cqs, base.cqs);
    EXPECT_EQ(c.qps, base.qps);
    EXPECT_EQ(phases(3)[2], VqPhase::Absent);
    ASSERT_TRUE(dev->configure(g));
    EXPECT_EQ(phases(3), std::vector<VqPhase>(3, VqPhase::Ready));
    c = emu_dev().object_counts();
    EXPECT_EQ(c.cqs, base.cqs + 1);
    EXPECT_EQ(c.qps, base.qps + 2);
    EXPECT_EQ(c.umems, base.umems + 4) << "ring 2's virtq umems kept from the failed start, its QP's added";
    EXPECT_NE(fw(2).attr.event_qpn_or_msix, 0u);
}

TEST_F(Interrupts, EventModeNoneKeepsNoMsix) {
    event_mode = EventMode::None;
    open("cx7", 1);
    EXPECT_EQ(fw(0).attr.event_mode, prm::EventMode::NO_MSIX);
    EXPECT_FALSE(dev->irq_stats().enabled);
}

}  // namespace
}  // namespace mlx5async::core
