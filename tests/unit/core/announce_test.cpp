// The device's own announce (core/announcer.hpp): the RARP it sends when a
// start has every ring RDY, its rounds, what stops them, and SEND_RARP.
#include "vdpa/mlx5async/core/announcer.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "core_fixture.hpp"

namespace mlx5async::core {
namespace {

using testing_support::Fixture;
using testing_support::send_frame;
using P = LedgerPhase;

constexpr MacAddr kVportMac = 0x02a1b2c3d4e5;
constexpr MacAddr kFrontendMac = 0x5254000a0b0c;

TEST(RarpFrame, IsQemusSelfAnnounce) {
    const auto f = rarp_frame(kVportMac);
    const uint8_t want[42] = {
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0x80, 0x35,  // Ethernet
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x03,                                      // RARP, reverse request
        0x02, 0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0, 0, 0, 0,                                      // sender
        0x02, 0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0, 0, 0, 0,                                      // target
    };
    ASSERT_EQ(f.size(), 60u);
    EXPECT_EQ(std::memcmp(f.data(), want, sizeof want), 0);
    for (size_t i = sizeof want; i < f.size(); i++) EXPECT_EQ(f[i], std::byte{0}) << i;
    EXPECT_EQ(mac_string(kVportMac), "02:a1:b2:c3:d4:e5");
}

// QEMU's announce timer: 50, 150, 250, ... ms after each round, at most 550.
TEST(AnnounceDelay, GrowsByTheStepUpToTheMax) {
    AnnounceConfig c;
    EXPECT_EQ(announce_delay(c, 2).count(), 50);
    EXPECT_EQ(announce_delay(c, 3).count(), 150);
    EXPECT_EQ(announce_delay(c, 5).count(), 350);
    EXPECT_EQ(announce_delay(c, 7).count(), 550);
    EXPECT_EQ(announce_delay(c, 1000).count(), 550);
}

struct DeviceAnnounce : Fixture {
    void SetUp() override {
        announce.initial_ms = 1;
        announce.step_ms = 0;
        announce.max_ms = 1;
    }
    void open_with_mac(MacAddr mac, uint32_t queues = 1) {
        emu_extra = mac ? ",mac=" + mac_string(mac) : "";
        open("cx7", queues);
    }
    AnnounceStats stats() { return dev->announce_stats().value_or(AnnounceStats{}); }
    emu::dp::WireCounters wire() { return emu_dev().wire().counters(); }
    // Every frame on the wire is a RARP from `mac`.
    void expect_rarps_from(MacAddr mac) {
        const auto want = rarp_frame(mac);
        for (const auto& f : emu_dev().wire().frames()) {
            ASSERT_EQ(f.bytes.size(), want.size());
            EXPECT_EQ(std::memcmp(f.bytes.data(), want.data(), want.size()), 0);
        }
    }
};

// Each round is one RARP from the vport's MAC; the first leaves once every
// ring is RDY, stamped device_announced.
TEST_F(DeviceAnnounce, AStartWithEveryRingReadySendsItsRounds) {
    announce.rounds = 3;
    open_with_mac(kVportMac, 2);
    EXPECT_TRUE(dev->announces());
    enable_all(4);
    dev->ledger().mark(P::StartRequested);
    ASSERT_TRUE(dev->configure(guest(4)));
    const auto s = dev->ledger().snapshot();
    EXPECT_NE(s.at[size_t(P::DeviceAnnounced)].mono_ns, 0u);
    EXPECT_GE(s.at[size_t(P::DeviceAnnounced)].mono_ns, s.at[size_t(P::AllReady)].mono_ns);
    ASSERT_TRUE(eventually([&] { return wire().rarp == 3 && stats().sq.completed == 3; }));
    const AnnounceStats a = stats();
    EXPECT_EQ(a.starts, 1u);
    EXPECT_EQ(a.rounds, 3u);
    EXPECT_EQ(a.rounds_left, 0u);
    EXPECT_EQ(a.sq.posted, 3u);
    EXPECT_EQ(a.sq.errors, 0u);
    EXPECT_EQ(a.vport_mac, kVportMac);
    EXPECT_EQ(wire().frames, 3u);
    expect_rarps_from(kVportMac);
}

// The guest's gratuitous ARP ends the rounds: none is sent after it was seen.
TEST_F(DeviceAnnounce, TheGuestsOwnAnnounceStopsTheRounds) {
    announce.rounds = 1000;
    open_with_mac(kVportMac);
    GuestConfig g = guest_in_ram(2);
    enable_all(2);
    dev->ledger().mark(P::StartRequested);
    ASSERT_TRUE(dev->configure(g));
    send_frame(*this, g, 0x0806, 0x0a4d0001, 0x0a4d0001);
    ASSERT_TRUE(eventually([&] { return stats().stopped_early == 1; }));
    const AnnounceStats a = stats();
    EXPECT_EQ(a.rounds_left, 0u);
    EXPECT_LT(a.rounds, 1000u);
    EXPECT_TRUE(eventually([&] { return wire().rarp == a.rounds; }));
    EXPECT_EQ(stats().rounds, a.rounds);
    EXPECT_EQ(stats().sq.posted, a.rounds);
}

// dev_close: the VM leaves the port; its rounds left go with it.
TEST_F(DeviceAnnounce, CloseDropsTheRoundsLeft) {
    announce.rounds = 1000;
    announce.initial_ms = announce.max_ms = 100000;
    open_with_mac(kVportMac);
    enable_all(2);
    ASSERT_TRUE(dev->configure(guest(2)));
    EXPECT_EQ(stats().rounds_left, 999u);
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    EXPECT_EQ(stats().rounds_left, 0u);
    EXPECT_EQ(stats().rounds, 1u);
}

// Without a vport MAC a start is not announced; SEND_RARP sends at once
// from the frontend's MAC, which the later starts of the connection use,
// and which goes with the frontend.
TEST_F(DeviceAnnounce, SendRarpAnnouncesFromTheFrontendsMac) {
    announce.rounds = 2;
    open_with_mac(0);
    enable_all(2);
    ASSERT_TRUE(dev->configure(guest(2)));
    EXPECT_EQ(stats().starts, 0u);  // begin() ran on the strand before configure returned
    EXPECT_EQ(stats().sq.posted, 0u);
    dev->frontend_rarp(kFrontendMac);
    ASSERT_TRUE(eventually([&] { return wire().rarp == 1; }));
    EXPECT_EQ(stats().requests, 1u);
    EXPECT_EQ(stats().frontend_mac, kFrontendMac);
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    ASSERT_TRUE(dev->configure(guest(2)));
    ASSERT_TRUE(eventually([&] { return wire().rarp == 3; }))
        << "rarps " << wire().rarp << " starts " << stats().starts << " posted " << stats().sq.posted << " rounds " << stats().rounds << " left " << stats().rounds_left << " early " << stats().stopped_early << " full " << stats().sq.full << " err " << stats().sq.errors;
    EXPECT_EQ(stats().starts, 1u);
    expect_rarps_from(kFrontendMac);
    dev->cleanup();
    EXPECT_EQ(stats().frontend_mac, 0u);
}

// QEMU sends its first SEND_RARP before it starts the device: the frame
// waits for the start, whose first round is from the frontend's MAC.
TEST_F(DeviceAnnounce, SendRarpBeforeAStartWaitsForIt) {
    announce.rounds = 1;
    open_with_mac(kVportMac);
    dev->frontend_rarp(kFrontendMac);
    EXPECT_EQ(stats().requests, 1u);
    EXPECT_EQ(stats().sq.posted, 0u);  // synchronous: nothing was posted
    enable_all(2);
    ASSERT_TRUE(dev->configure(guest(2)));
    ASSERT_TRUE(eventually([&] { return wire().rarp == 1; }));
    EXPECT_EQ(stats().sq.posted, 1u);
    expect_rarps_from(kFrontendMac);
}

// A start with a ring the device could not start is not announced: the VM
// is not running here yet.
TEST_F(DeviceAnnounce, AStartWithARingRefusedIsNotAnnounced) {
    open_with_mac(kVportMac);
    GuestConfig g = guest(2);
    g.vrings[1].unusable = "test: unmapped";
    enable_all(2);
    EXPECT_FALSE(dev->configure(g));
    EXPECT_EQ(stats().starts, 0u);
    EXPECT_EQ(stats().sq.posted, 0u);
}

// announce=off: no SQ on the device, nothing sent, SEND_RARP ignored.
TEST_F(DeviceAnnounce, OffMakesNoSendQueueAndSendsNothing) {
    announce.on = false;
    open_with_mac(kVportMac);
    EXPECT_FALSE(dev->announces());
    EXPECT_FALSE(dev->announce_stats());
    EXPECT_EQ(emu_dev().object_counts().sqs, 0u);
    enable_all(2);
    ASSERT_TRUE(dev->configure(guest(2)));
    dev->frontend_rarp(kFrontendMac);  // synchronous: a no-op without an announcer
    EXPECT_EQ(wire().frames, 0u);
    EXPECT_EQ(dev->ledger().snapshot().at[size_t(P::DeviceAnnounced)].mono_ns, 0u);
}

TEST_F(DeviceAnnounce, OnByDefaultWithOneSendQueue) {
    open_with_mac(kVportMac);
    EXPECT_TRUE(dev->announces());
    EXPECT_EQ(emu_dev().object_counts().sqs, 1u);
}

}  // namespace
}  // namespace mlx5async::core
