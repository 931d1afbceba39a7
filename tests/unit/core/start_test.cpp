// dev_conf's start on the device's strand (device.hpp, start()): it returns
// before the rings run, a ring the guest kicked before it ran is kicked by
// the driver, a start that fails afterwards is in the ledger and the next
// one tries again, two devices start side by side, a frontend that leaves
// while its start is queued leaves nothing behind.
#include <gtest/gtest.h>

#include <sys/eventfd.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "core_fixture.hpp"
#include "testkit/proc_counts.hpp"

namespace mlx5async::core {
namespace {

using testing_support::Fixture;
using testing_support::GuestRing;
using testing_support::kBufGpa;
using testing_support::kDescWrite;
using namespace std::chrono_literals;

// The result a start's `done` reported, waited for.
struct Done {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<Result<void>> r;
    Device::StartDone fn() {
        return [this](const Result<void>& res) {
            std::lock_guard lk(mu);
            r = res;
            cv.notify_all();
        };
    }
    Result<void> wait() {
        std::unique_lock lk(mu);
        EXPECT_TRUE(cv.wait_for(lk, 60s, [&] { return r.has_value(); })) << "no start result";
        return r.value_or(Result<void>(fail(Errc::Timeout, "no start result")));
    }
    bool has() {
        std::lock_guard lk(mu);
        return r.has_value();
    }
};

using Start = Fixture;

// On a manual clock a MODIFY waits until the test moves time: the start has
// been posted and dev_conf's call returned while no ring is RDY.
TEST_F(Start, ReturnsBeforeTheRingsRunAndTheyRunAfter) {
    emu_extra = ",clock=manual,modify_us=1000";
    open("cx7", 2);
    enable_all(4);
    Done d;
    ASSERT_TRUE(dev->start(guest(4), d.fn()));
    EXPECT_FALSE(d.has());
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Init));
    EXPECT_GE(dev->backlog(), 1u);
    while (!d.has()) {  // each wave of MODIFYs is due 1 ms after it started
        emu_dev().advance_clock(1ms);
        std::this_thread::yield();
    }
    ASSERT_TRUE(d.wait());
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Ready));
}

// A device that forgets doorbells for a virtq that is not RDY yet
// (early_kicks=drop): the guest posted a packet and kicked before the start;
// it flows only because the driver kicks every ring it started.
TEST_F(Start, AKickBeforeTheRingRanIsNotLost) {
    emu_extra = ",early_kicks=drop";
    open("cx7", 1);
    GuestConfig g = guest_in_ram(2);
    GuestRing rx{g.vrings[0]}, tx{g.vrings[1]};
    const uint16_t rx_used = rx.used_idx(), tx_used = tx.used_idx();
    rx.post(kBufGpa, 2048, kDescWrite);
    tx.post(kBufGpa + 4096, 12 + 64, 0);
    ASSERT_TRUE(emu_dev().kick(dev->vq_info()[1].obj_id));  // INIT: forgotten
    ASSERT_TRUE(emu_dev().kick(dev->vq_info()[0].obj_id));
    EXPECT_EQ(fw(1).kicks.dropped, 1u);
    enable_all(2);
    ASSERT_TRUE(dev->configure(g));
    ASSERT_TRUE(eventually([&] {
        return rx.used_idx() == uint16_t(rx_used + 1) && tx.used_idx() == uint16_t(tx_used + 1);
    })) << "the packet posted before the start never moved";
}

// The start fails after its call returned (a MODIFY refused by the
// firmware): the cause is in the result and the ledger, that ring stays
// stopped, the others run, and the next start brings it up.
TEST_F(Start, AFailureAfterTheCallReturnedIsRecordedAndTheNextStartTriesAgain) {
    start_attempts = 1;  // the failure itself, not the retry that would end it
    open("cx7", 2);
    enable_all(4);
    ASSERT_TRUE(emu_fault("op=modify vq=1 nth=1 status=0x3"));
    dev->ledger().mark(LedgerPhase::StartRequested);
    Done d;
    ASSERT_TRUE(dev->start(guest(4), d.fn()));
    auto r = d.wait();
    ASSERT_FALSE(r);
    EXPECT_NE(prm::describe(r.error()).find("queue 1"), std::string::npos) << prm::describe(r.error());
    auto s = dev->ledger().snapshot();
    EXPECT_LT(s.start_rc, 0);
    EXPECT_NE(s.start_error.find("queue 1"), std::string::npos) << s.start_error;
    EXPECT_EQ(s.start_rings, 3u);
    auto p = phases(4);
    EXPECT_EQ(p[1], VqPhase::Init);
    EXPECT_EQ(p[0], VqPhase::Ready);
    // The fault is spent: the next dev_conf starts every ring.
    dev->ledger().mark(LedgerPhase::StartRequested);
    ASSERT_TRUE(dev->configure(guest(4)));
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Ready));
    s = dev->ledger().snapshot();
    EXPECT_EQ(s.start_rc, 0);
    EXPECT_TRUE(s.start_error.empty());
}

// Two devices (each its own firmware): the second's start runs while the
// first's has not finished, as QEMU's next NIC follows once dev_conf returned.
TEST(StartTwo, DevicesStartSideBySide) {
    std::vector<std::unique_ptr<Device>> devs;
    for (int i = 0; i < 2; i++) {
        DeviceConfig c;
        c.emu_spec = std::string("cx7") + testing_support::kFast + ",modify_us=200000";
        c.queues = 1;
        c.queue_size = 256;
        auto d = Device::open(c, testing_support::unique_name());
        ASSERT_TRUE(d) << to_string(d.error());
        for (uint16_t r = 0; r < 2; r++) (*d)->set_vring_state(r, true);
        devs.push_back(std::move(*d));
    }
    GuestConfig g = testing_support::guest_rings(2);
    Done d[2];
    for (int i = 0; i < 2; i++) {
        devs[i]->ledger().mark(LedgerPhase::StartRequested);
        ASSERT_TRUE(devs[i]->start(g, d[i].fn()));
    }
    ASSERT_TRUE(d[0].wait());
    ASSERT_TRUE(d[1].wait());
    auto a = devs[0]->ledger().snapshot(), b = devs[1]->ledger().snapshot();
    auto at = [](const LedgerSnapshot& s, LedgerPhase p) { return s.at[size_t(p)].mono_ns; };
    // Each start is one wave of 200 ms MODIFYs: they overlap.
    EXPECT_LT(at(b, LedgerPhase::StartRequested), at(a, LedgerPhase::AllReady));
    EXPECT_LT(at(a, LedgerPhase::StartRequested), at(b, LedgerPhase::AllReady));
}

// The frontend leaves (dev_cleanup) while one start runs (its memory key
// held by a manual clock) and another is queued: the running one is
// abandoned with what it had not issued, the queued one is superseded, and
// the cleanup leaves the device as before the starts: no mkey, no umem of
// guest memory, no virtq running.
TEST_F(Start, AFrontendLeavingWhileItsStartIsQueuedLeavesNothing) {
    emu_extra = ",clock=manual,mkey_us=1000";
    open("cx7", 2);
    const auto base = emu_dev().object_counts();
    enable_all(4);
    Done running, queued;
    ASSERT_TRUE(dev->start(guest_in_ram(4), running.fn()));
    ASSERT_TRUE(emu_dev().wait_running(1, 20s));  // the memory key, due when the test moves time
    ASSERT_TRUE(dev->start(guest_in_ram(4), queued.fn()));
    std::atomic<bool> left{false};
    std::thread leaver([&] {
        dev->cleanup();  // posted behind both starts: waits for them
        left = true;
    });
    // The cleanup is queued once it has abandoned the running start.
    ASSERT_TRUE(eventually([&] { return dev->backlog() >= 3; }));
    while (!left) {
        emu_dev().advance_clock(1ms);
        std::this_thread::yield();
    }
    leaver.join();
    for (Done* d : {&running, &queued}) {
        auto r = d->wait();
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().code, Errc::Cancelled) << r.error().what;
    }
    const auto c = emu_dev().object_counts();
    EXPECT_EQ(c.mkeys, 0u);
    EXPECT_EQ(c.umems, base.umems);
    EXPECT_EQ(c.virtqs, base.virtqs);
    for (uint16_t i = 0; i < 4; i++) EXPECT_NE(fw(i).state, prm::VirtqState::RDY) << i;
}

// A stop (dev_close) while a start runs on slow firmware: the start gives
// up the commands it has not issued (the one in flight completes), a start
// still queued behind it never runs, and the stop hands back the device's
// indexes for the rings that started and vhost's for the others.
TEST_F(Start, AStopAbandonsWhatTheStartHasNotIssued) {
    emu_extra = ",clock=manual,modify_us=1000";
    open("cx7", 4, 16, Strategy::Sequential);  // virtqs 0-7 in INIT
    enable_all(8);
    Done running, queued;
    ASSERT_TRUE(dev->start(guest(8, 100), running.fn()));
    ASSERT_TRUE(dev->start(guest(8, 200), queued.fn()));
    ASSERT_TRUE(emu_dev().wait_running(1, 20s));  // ring 0's MODIFY, one at a time
    ASSERT_EQ(emu_dev().complete_next(1), 1u);
    ASSERT_TRUE(eventually([&] { return fw(0).state == prm::VirtqState::RDY; }));
    ASSERT_TRUE(emu_dev().wait_running(1, 20s));  // ring 1's
    std::vector<RingIndexes> out;
    Result<void> closed = fail(Errc::State, "not closed");
    std::atomic<bool> done{false};
    std::thread stopper([&] {
        closed = dev->close(out);
        done = true;
    });
    // The stop is queued (behind both starts) once it has abandoned the first.
    ASSERT_TRUE(eventually([&] { return dev->backlog() >= 3; }));
    ASSERT_TRUE(eventually([&] {  // ring 1's MODIFY, then the stop's suspends
        emu_dev().complete_next(1);
        return done.load();
    }));
    stopper.join();
    EXPECT_TRUE(closed) << to_string(closed.error());
    auto r = running.wait();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::Cancelled);
    EXPECT_NE(r.error().what.find("2 of 8 rings started"), std::string::npos) << r.error().what;
    auto q = queued.wait();
    ASSERT_FALSE(q);
    EXPECT_NE(q.error().what.find("superseded"), std::string::npos) << q.error().what;
    ASSERT_EQ(out.size(), 8u);
    for (const RingIndexes& ri : out) {
        const bool started = ri.ring < 2;
        EXPECT_EQ(ri.from_device, started) << ri.ring;
        // The queued start's session (vhost's 200 + i) is the one stopped:
        // a ring never started hands back its indexes; a started one the
        // device's, where the first session set it (100 + i).
        const uint16_t want = uint16_t((started ? 100 : 200) + ri.ring);
        EXPECT_EQ(ri.last_avail_idx, want) << ri.ring;
        EXPECT_EQ(ri.last_used_idx, want) << ri.ring;
        EXPECT_EQ(fw(ri.ring).state, started ? prm::VirtqState::SUSPEND : prm::VirtqState::INIT) << ri.ring;
    }
}

// A frontend that leaves (dev_cleanup) takes back what it made the device
// hold beyond its probe state: the virtq objects (and their umems and
// counters) of rings the probe did not pre-create or of another ring size,
// and the duplicates of its kick and call eventfds. The pre-created virtqs
// of the probe's size stay for the next frontend.
TEST_F(Start, ALeavingFrontendTakesWhatItMadeBeyondTheProbe) {
    open("cx7", 2);  // virtqs 0-3 pre-created, 256 entries
    const auto base = emu_dev().object_counts();
    const size_t fds = mlx5async::testing::open_fd_count();
    GuestConfig g = guest_in_ram(8);
    g.vrings[1].size = 1024;  // a pre-created ring of another size: re-created
    for (uint16_t i = 4; i < 8; i++) g.vrings[i].size = 1024;  // rings the probe did not make
    seed_rings(g);
    std::vector<int> efds;
    for (auto& v : g.vrings) {
        v.kickfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        v.callfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        efds.push_back(v.kickfd);
        efds.push_back(v.callfd);
    }
    enable_all(8);
    ASSERT_TRUE(dev->configure(g));
    EXPECT_EQ(phases(8), std::vector<VqPhase>(8, VqPhase::Ready));
    EXPECT_GT(emu_dev().object_counts().umems, base.umems);
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    for (int fd : efds) close(fd);  // vhost closes its own; the device's copies remain
    dev->cleanup();
    const auto c = emu_dev().object_counts();
    EXPECT_EQ(c.virtqs, base.virtqs - 1);  // ring 1's object was of another size
    EXPECT_EQ(c.counters, base.counters - 1);
    EXPECT_EQ(c.mkeys, 0u);
    const auto v = dev->vq_info();
    for (uint16_t i = 4; i < 8; i++) EXPECT_EQ(v[i].phase, VqPhase::Absent) << i;
    EXPECT_EQ(v[1].phase, VqPhase::Absent);  // its size was not the probe's
    for (uint16_t i : {0, 2, 3}) EXPECT_EQ(v[i].phase, VqPhase::Suspended) << i;
    // Ring 1's three umems went; the event QPs of the new rings stay with
    // the device (interrupts.hpp), one umem each.
    EXPECT_EQ(c.umems, base.umems - 3 + 4);
    EXPECT_EQ(mlx5async::testing::open_fd_count(), fds);
}

}  // namespace
}  // namespace mlx5async::core

namespace mlx5async::core {
namespace {

// Four devices start side by side and one's start fails (a fault rule on
// its firmware): the other three start every ring, and each device's
// emulator holds, after a cleanup, what it held before the start.
TEST(StartFour, OneDevicesFailureLeavesTheOthersAlone) {
    std::vector<std::unique_ptr<Device>> devs;
    std::vector<std::string> names;
    for (int i = 0; i < 4; i++) {
        DeviceConfig c;
        c.emu_spec = std::string("cx7") + testing_support::kFast;
        c.queues = 2;
        c.queue_size = 256;
        c.start_attempts = 1;  // device 2's start fails, not retried
        names.push_back(testing_support::unique_name());
        auto d = Device::open(c, names.back());
        ASSERT_TRUE(d) << to_string(d.error());
        for (uint16_t r = 0; r < 4; r++) (*d)->set_vring_state(r, true);
        devs.push_back(std::move(*d));
    }
    std::vector<emu::ObjectCounts> base;
    for (auto& n : names) base.push_back(emu::find_device(n + "-emu")->object_counts());
    ASSERT_TRUE(emu::inject_fault(names[2] + "-emu", "op=modify vq=0 nth=1 status=0x3"));
    GuestConfig g = testing_support::guest_rings(4);
    g.mem.push_back({0, 1ull << 30, testing_support::guest_ram()});
    testing_support::Fixture::seed_rings(g);
    Done d[4];
    for (int i = 0; i < 4; i++) ASSERT_TRUE(devs[i]->start(g, d[i].fn()));
    for (int i = 0; i < 4; i++) {
        auto r = d[i].wait();
        EXPECT_EQ(bool(r), i != 2) << "device " << i;
        auto v = devs[i]->vq_info();
        for (uint16_t q = 0; q < 4; q++)
            EXPECT_EQ(v[q].phase, i == 2 && q == 0 ? VqPhase::Init : VqPhase::Ready)
                << "device " << i << " ring " << q;
    }
    for (int i = 0; i < 4; i++) {
        std::vector<RingIndexes> out;
        (void)devs[i]->close(out);
        devs[i]->cleanup();
        const auto c = emu::find_device(names[i] + "-emu")->object_counts();
        EXPECT_EQ(c.mkeys, base[i].mkeys) << "device " << i;
        EXPECT_EQ(c.umems, base[i].umems) << "device " << i;
        EXPECT_EQ(c.virtqs, base[i].virtqs) << "device " << i;
    }
}

}  // namespace
}  // namespace mlx5async::core
