// The downtime ledger (core/ledger.hpp), the live virtq query, and what
// each firmware batch is labelled in traces.
#include "vdpa/mlx5async/core/ledger.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "common/prm/opcodes.hpp"
#include "core_fixture.hpp"

namespace mlx5async::core {
namespace {

using testing_support::Fixture;
using testing_support::send_frame;
using P = LedgerPhase;

uint64_t at(const LedgerSnapshot& s, P p) { return s.at[size_t(p)].mono_ns; }

TEST(Ledger, EachHalfStartsAfreshAtItsFirstPhase) {
    Ledger l;
    l.mark(P::StartRequested);
    l.mark(P::AllReady);
    l.set_start(l.snapshot().start_seq, 32, 1);
    l.mark(P::StopRequested);
    l.mark(P::SuspendDone);
    auto s = l.snapshot();
    EXPECT_EQ(s.start_seq, 1u);
    EXPECT_EQ(s.stop_seq, 1u);
    EXPECT_TRUE(at(s, P::AllReady) && at(s, P::SuspendDone));
    EXPECT_LE(at(s, P::StartRequested), at(s, P::AllReady));
    EXPECT_NE(s.at[size_t(P::StopRequested)].wall_ns, 0u);
    // A new start clears the start half only.
    l.mark(P::StartRequested);
    s = l.snapshot();
    EXPECT_EQ(s.start_seq, 2u);
    EXPECT_EQ(at(s, P::AllReady), 0u);
    EXPECT_EQ(s.start_rings, 0u);
    EXPECT_NE(at(s, P::SuspendDone), 0u);
    EXPECT_EQ(s.stop_seq, 1u);
}

TEST(Ledger, NotifiersOfAnEarlierStartAreNotRecordedInALaterOne) {
    Ledger l;
    l.mark(P::StartRequested);
    uint64_t first = l.snapshot().start_seq;
    l.mark(P::StartRequested);
    l.notifiers_done(first, 0);  // the first start's set-up answered late
    auto s = l.snapshot();
    EXPECT_FALSE(s.notifiers_tried);
    EXPECT_EQ(at(s, P::NotifiersSet), 0u);
    l.notifiers_done(s.start_seq, -14);
    s = l.snapshot();
    EXPECT_TRUE(s.notifiers_tried);
    EXPECT_EQ(s.notifiers_rc, -14);
    EXPECT_NE(at(s, P::NotifiersSet), 0u);
}

// The observer (the PMD's trace points) hears each stamp once, with its
// record's seq and the stamp itself; not the ones the ledger refuses.
TEST(Ledger, TheObserverHearsEveryStampAndNoRefusedOne) {
    Ledger l;
    std::vector<std::pair<P, uint64_t>> heard;
    std::vector<uint64_t> stamps;
    l.set_observer([&](P p, uint64_t seq, const LedgerStamp& at) {
        heard.emplace_back(p, seq);
        stamps.push_back(at.mono_ns);
    });
    l.mark(P::StartRequested);
    l.mark_start(P::AllReady, 1);
    l.mark_start(P::AllReady, 7);  // no such start: refused
    l.device_announced(1);
    l.device_announced(1);  // once per start
    l.announced();
    l.notifiers_done(1, 0);
    l.mark(P::StopRequested);
    const std::vector<std::pair<P, uint64_t>> want = {
        {P::StartRequested, 1}, {P::AllReady, 1},     {P::DeviceAnnounced, 1},
        {P::Announced, 1},      {P::NotifiersSet, 1}, {P::StopRequested, 1}};
    EXPECT_EQ(heard, want);
    const auto s = l.snapshot();
    EXPECT_EQ(stamps[1], at(s, P::AllReady));
    EXPECT_EQ(stamps[2], at(s, P::DeviceAnnounced));
}

TEST(Ledger, PhaseNamesAreDistinct) {
    std::set<std::string> names;
    for (size_t i = 0; i < kLedgerPhases; i++) names.insert(ledger_phase_name(P(i)));
    EXPECT_EQ(names.size(), kLedgerPhases);
    EXPECT_TRUE(is_stop_phase(P::UsedRingsLogged));
    EXPECT_FALSE(is_stop_phase(P::StartRequested));
}

using DeviceLedger = Fixture;

// announced: the first gratuitous ARP the guest sends through the device
// after a start began (the emulated datapath stamps it as the frame leaves);
// ordinary traffic and ARP for a peer do not; a later start clears it.
TEST_F(DeviceLedger, TheGuestsFirstGratuitousArpStampsAnnounced) {
    open("cx7", 1);
    GuestConfig g = guest_in_ram(2);
    enable_all(2);
    dev->ledger().mark(P::StartRequested);
    ASSERT_TRUE(dev->configure(g));
    send_frame(*this, g, 0x0800, 0, 0);
    send_frame(*this, g, 0x0806, 0x0a4d0001, 0x0a4d0009);  // a request for a peer
    EXPECT_EQ(at(dev->ledger().snapshot(), P::Announced), 0u);
    send_frame(*this, g, 0x0806, 0x0a4d0001, 0x0a4d0001);
    auto s = dev->ledger().snapshot();  // stamped before the frame's used entry was written
    const uint64_t first = at(s, P::Announced);
    EXPECT_NE(first, 0u);
    EXPECT_GE(first, at(s, P::AllReady));
    auto v = dev->vq_info();
    EXPECT_EQ(v[1].arp_frames, 2u);
    EXPECT_EQ(v[1].announce_frames, 1u);
    EXPECT_EQ(v[0].arp_frames, 0u);
    send_frame(*this, g, 0x0806, 0x0a4d0001, 0x0a4d0001);
    EXPECT_EQ(at(dev->ledger().snapshot(), P::Announced), first);
    EXPECT_EQ(dev->vq_info()[1].announce_frames, 2u);
    dev->ledger().mark(P::StartRequested);
    EXPECT_EQ(at(dev->ledger().snapshot(), P::Announced), 0u);
}

// The core's own phases of a start (dev_conf) and a stop (dev_close), in
// order; the glue adds the vhost-side ones (ledger.hpp).
TEST_F(DeviceLedger, ConfigureAndCloseStampTheirPhasesInOrder) {
    open("cx7", 4);
    enable_all(8);
    dev->ledger().mark(P::StartRequested);
    ASSERT_TRUE(dev->configure(guest(8)));
    auto s = dev->ledger().snapshot();
    EXPECT_LE(at(s, P::StartRequested), at(s, P::MemoryRegistered));
    EXPECT_LE(at(s, P::MemoryRegistered), at(s, P::VirtqsCreated));
    EXPECT_LE(at(s, P::VirtqsCreated), at(s, P::AllReady));
    EXPECT_NE(at(s, P::MemoryRegistered), 0u);
    EXPECT_EQ(s.start_rings, 8u);
    dev->ledger().mark(P::StopRequested);
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    s = dev->ledger().snapshot();
    EXPECT_LE(at(s, P::StopRequested), at(s, P::SuspendIssued));
    EXPECT_LE(at(s, P::SuspendIssued), at(s, P::SuspendDone));
    EXPECT_NE(at(s, P::SuspendIssued), 0u);
}

// A RDY virtq's indexes move with traffic: the live query reads them from
// the device, while vq_info() keeps what the start programmed.
TEST_F(DeviceLedger, LiveQueryReadsRunningIndexesSavedOnesStay) {
    open("cx7", 2);
    enable_all(4);
    ASSERT_TRUE(dev->configure(guest(4, 10)));
    auto saved = dev->vq_info();
    for (uint16_t i = 0; i < 4; i++)
        ASSERT_TRUE(emu_dev().advance_virtq(saved[i].obj_id, uint16_t(5 + i), uint16_t(3 + i)));
    auto live = dev->query_vq_info();
    for (uint16_t i = 0; i < 4; i++) {
        EXPECT_TRUE(live[i].live) << i;
        EXPECT_EQ(live[i].hw_available_index, 10 + i + 5 + i) << i;
        EXPECT_EQ(live[i].hw_used_index, 10 + i + 3 + i) << i;
        EXPECT_FALSE(dev->vq_info()[i].live);
        EXPECT_EQ(dev->vq_info()[i].hw_available_index, 10 + i) << i;  // as started
    }
    EXPECT_FALSE(live[5].live);  // no object: nothing queried
}

// Trace spans carry what their batch was for: counters and set-up are not
// suspends.
TEST_F(DeviceLedger, TraceLabelsEveryBatchByWhatItIsFor) {
    open("cx7", 2);
    dev->trace_enable(true);
    enable_all(4);
    ASSERT_TRUE(dev->configure(guest(4)));
    auto kinds = [&] {
        std::set<uint8_t> k;
        for (const auto& s : dev->trace_read(1 << 16)) k.insert(s.op);
        return k;
    };
    auto conf = kinds();
    EXPECT_TRUE(conf.count(uint8_t(BatchKind::Resume)));
    EXPECT_FALSE(conf.count(uint8_t(BatchKind::Suspend)));
    ASSERT_TRUE(dev->counters(0));
    EXPECT_EQ(kinds(), std::set<uint8_t>({uint8_t(BatchKind::Counters)}));
    dev->query_vq_info();
    EXPECT_EQ(kinds(), std::set<uint8_t>({uint8_t(BatchKind::Query)}));
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    EXPECT_EQ(kinds(), std::set<uint8_t>({uint8_t(BatchKind::Suspend)}));
    EXPECT_STREQ(batch_kind_name(BatchKind::DirtyLog), "dirty_log");
}

}  // namespace
}  // namespace mlx5async::core
