// The device core over mlx5emu (zero latency): the state of every virtq
// after each op sequence, exact index hand-back, errors on one queue.
#include "vdpa/mlx5async/core/device.hpp"

#include <gtest/gtest.h>

#include <sys/eventfd.h>
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <mutex>

#include "emu/emu.hpp"
#include "common/base/unique_fd.hpp"
#include "common/prm/opcodes.hpp"
#include "core_fixture.hpp"

namespace mlx5async::core {
namespace {

using testing_support::Fixture;
using testing_support::guest_ram;
using testing_support::kFast;

using DeviceCore = Fixture;

TEST_F(DeviceCore, ProbePrecreatesEveryVirtqInInit) {
    open("cx7", 4);
    EXPECT_EQ(phases(8), std::vector<VqPhase>(8, VqPhase::Init));
    for (uint16_t i = 0; i < 8; i++) EXPECT_EQ(fw(i).state, prm::VirtqState::INIT);
    EXPECT_EQ(dev->vq_info()[8].phase, VqPhase::Absent);
}

TEST_F(DeviceCore, TxVirtqsNameTheDevicesTisRxVirtqsNone) {
    open("cx7", 2);
    uint32_t tisn = fw(1).attr.tisn_or_qpn;
    EXPECT_NE(tisn, 0u);
    for (uint16_t i = 0; i < 4; i++)
        EXPECT_EQ(fw(i).attr.tisn_or_qpn, (i & 1) ? tisn : 0u) << i;
}

TEST_F(DeviceCore, ConfigureStartsEnabledRingsWithVhostIndexes) {
    open("cx7", 4);
    enable_all(6);  // rings 6, 7 not enabled by vhost: left alone
    ASSERT_TRUE(dev->configure(guest(8, 100)));
    auto p = phases(8);
    for (int i = 0; i < 6; i++) EXPECT_EQ(p[i], VqPhase::Ready) << i;
    EXPECT_EQ(p[6], VqPhase::Init);
    for (uint16_t i = 0; i < 6; i++) {
        auto f = fw(i);
        EXPECT_EQ(f.state, prm::VirtqState::RDY);
        EXPECT_EQ(f.hw_available_index, 100 + i);
        EXPECT_EQ(f.attr.desc_addr, 0x100000u + i * 0x10000);
        EXPECT_TRUE(f.attr.virtio_version_1_0);
    }
    EXPECT_EQ(dev->last_timing(Op::Resume).queues, 6u);
    EXPECT_EQ(dev->last_timing(Op::Resume).commands, 6u);  // one MODIFY per queue
}

TEST_F(DeviceCore, CloseHandsBackExactlyWhatTheDeviceReports) {
    open("cx7", 4);
    enable_all(8);
    ASSERT_TRUE(dev->configure(guest(8)));
    for (uint16_t i = 0; i < 8; i++)
        ASSERT_TRUE(emu_dev().advance_virtq(dev->vq_info()[i].obj_id, uint16_t(10 * i + 7), uint16_t(10 * i + 3)));
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    ASSERT_EQ(out.size(), 8u);
    for (uint16_t i = 0; i < 8; i++) {
        EXPECT_EQ(out[i].ring, i);
        EXPECT_EQ(out[i].last_avail_idx, i + 10 * i + 7) << i;
        EXPECT_EQ(out[i].last_used_idx, i + 10 * i + 3) << i;
        EXPECT_TRUE(out[i].from_device);
        EXPECT_EQ(fw(i).state, prm::VirtqState::SUSPEND);
    }
    EXPECT_EQ(phases(8), std::vector<VqPhase>(8, VqPhase::Suspended));
    auto t = dev->last_timing(Op::Suspend);
    EXPECT_EQ(t.queues, 8u);
    EXPECT_EQ(t.commands, 16u);  // MODIFY + QUERY per queue, one batch
    EXPECT_LE(t.peak_inflight, 16u);
}

TEST_F(DeviceCore, ConfCloseConfResumesSameObjectsWithFreezeCap) {
    open("cx7", 2);
    enable_all(4);
    ASSERT_TRUE(dev->configure(guest(4)));
    auto ids = dev->vq_info();
    for (uint16_t i = 0; i < 4; i++) ASSERT_TRUE(emu_dev().advance_virtq(ids[i].obj_id, 5, 5));
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    // vhost reconnects with the indexes it was given.
    auto g = guest(4);
    for (uint16_t i = 0; i < 4; i++) {
        g.vrings[i].last_avail_idx = out[i].last_avail_idx;
        g.vrings[i].last_used_idx = out[i].last_used_idx;
    }
    ASSERT_TRUE(dev->configure(g));
    auto now = dev->vq_info();
    for (uint16_t i = 0; i < 4; i++) {
        EXPECT_EQ(now[i].obj_id, ids[i].obj_id) << "resumed in place, not re-created";
        EXPECT_EQ(fw(i).state, prm::VirtqState::RDY);
        EXPECT_EQ(fw(i).hw_available_index, out[i].last_avail_idx);
    }
}

TEST_F(DeviceCore, WithoutFreezeCapResumeRecreatesFromSavedIndexes) {
    open("cx6dx", 2);
    enable_all(4);
    ASSERT_TRUE(dev->configure(guest(4)));
    auto ids = dev->vq_info();
    for (uint16_t i = 0; i < 4; i++) ASSERT_TRUE(emu_dev().advance_virtq(ids[i].obj_id, 9, 4));
    ASSERT_TRUE(dev->suspend_all());
    ASSERT_TRUE(dev->resume_all());
    auto now = dev->vq_info();
    for (uint16_t i = 0; i < 4; i++) {
        EXPECT_NE(now[i].obj_id, ids[i].obj_id) << "SUSPEND->RDY is illegal on cx6dx";
        EXPECT_EQ(fw(i).state, prm::VirtqState::RDY);
        EXPECT_EQ(fw(i).hw_available_index, i + 9);
        EXPECT_EQ(fw(i).hw_used_index, i + 4);
    }
}

TEST_F(DeviceCore, DisableStormIsOneBatchAndReEnableResumes) {
    open("cx7", 4);
    enable_all(8);
    ASSERT_TRUE(dev->configure(guest(8)));
    for (uint16_t i = 4; i < 8; i++) dev->set_vring_state(i, false);
    std::vector<RingIndexes> disabled;
    ASSERT_TRUE(dev->flush_vring_states(disabled));
    EXPECT_EQ(disabled.size(), 4u);
    auto t = dev->last_timing(Op::Suspend);
    EXPECT_EQ(t.queues, 4u);
    EXPECT_EQ(t.commands, 8u);
    auto p = phases(8);
    for (int i = 0; i < 4; i++) EXPECT_EQ(p[i], VqPhase::Ready);
    for (int i = 4; i < 8; i++) EXPECT_EQ(p[i], VqPhase::Suspended);
    for (uint16_t i = 4; i < 8; i++) dev->set_vring_state(i, true);
    disabled.clear();
    ASSERT_TRUE(dev->flush_vring_states(disabled));
    EXPECT_TRUE(disabled.empty());
    EXPECT_EQ(phases(8), std::vector<VqPhase>(8, VqPhase::Ready));
    EXPECT_EQ(dev->last_timing(Op::Resume).commands, 4u);
}

// A ring enabled after dev_conf starts from what the frontend set since:
// new addresses and, when the frontend set one, its base.
TEST_F(DeviceCore, RingEnabledLaterStartsFromTheFrontendsCurrentConfig) {
    open("cx7", 4);
    enable_all(6);
    GuestConfig g = guest(8, 100);
    ASSERT_TRUE(dev->configure(g));
    VringConfig moved = g.vrings[6];  // never started: new addresses and base
    moved.desc_gpa += 0x8000;
    moved.avail_gpa += 0x8000;
    moved.used_gpa += 0x8000;
    moved.last_avail_idx = moved.last_used_idx = 500;
    dev->update_vring(moved);
    dev->set_vring_state(6, true);
    dev->set_vring_state(4, false);  // started, then stopped at its own indexes
    std::vector<RingIndexes> disabled;
    ASSERT_TRUE(dev->flush_vring_states(disabled));
    ASSERT_EQ(disabled.size(), 1u);
    VringConfig rebased = g.vrings[4];
    rebased.last_avail_idx = rebased.last_used_idx = 7;  // the frontend's SET_VRING_BASE
    dev->frontend_set_base(4);
    dev->update_vring(rebased);
    VringConfig same = g.vrings[5];  // running: left alone
    same.desc_gpa += 0x8000;
    dev->update_vring(same);
    dev->set_vring_state(4, true);
    ASSERT_TRUE(dev->flush_vring_states(disabled));
    EXPECT_EQ(fw(6).state, prm::VirtqState::RDY);
    EXPECT_EQ(fw(6).attr.desc_addr, moved.desc_gpa);
    EXPECT_EQ(fw(6).attr.used_addr, moved.used_gpa);
    EXPECT_EQ(fw(6).hw_available_index, 500);
    EXPECT_EQ(fw(4).state, prm::VirtqState::RDY);
    EXPECT_EQ(fw(4).hw_available_index, 7);
    EXPECT_EQ(fw(5).attr.desc_addr, g.vrings[5].desc_gpa);
}

// A ring the frontend sets up only after dev_conf (QEMU starts a VM's queue
// pairs one after another; vhost calls dev_conf once the first is ready)
// starts from this session's base, whatever the object kept from the last.
TEST_F(DeviceCore, RingSetUpAfterDevConfStartsFromThisSessionsBase) {
    open("cx7", 4);
    enable_all(8);
    ASSERT_TRUE(dev->configure(guest(8, 100)));
    dev->set_vring_state(5, false);
    std::vector<RingIndexes> disabled;
    ASSERT_TRUE(dev->flush_vring_states(disabled));
    dev->cleanup();  // the frontend left
    GuestConfig next = guest(2, 300);
    ASSERT_TRUE(dev->configure(next));
    VringConfig later = guest(8, 300).vrings[5];
    dev->update_vring(later);
    dev->set_vring_state(5, true);
    ASSERT_TRUE(dev->flush_vring_states(disabled));
    EXPECT_EQ(fw(5).state, prm::VirtqState::RDY);
    EXPECT_EQ(fw(5).hw_available_index, later.last_avail_idx);
    EXPECT_EQ(fw(5).hw_used_index, later.last_used_idx);
}

// A ring re-enabled without a SET_VRING_BASE resumes where the device
// stopped, whatever vhost's copy says: the base the device handed back, or
// an older one (read at the enable, on vhost's thread, while the suspend
// and hand-back of the disable before had not run yet). From the older base
// it would take buffers the guest already has back and write into memory
// the guest freed.
TEST_F(DeviceCore, RingReEnabledWithoutANewBaseResumesFromTheDevice) {
    open("cx7", 4);
    enable_all(8);
    GuestConfig g = guest(8, 100);
    ASSERT_TRUE(dev->configure(g));
    for (auto [ring, behind] : {std::pair<uint16_t, uint16_t>{3, 0}, {4, 5}}) {
        dev->set_vring_state(ring, false);
        std::vector<RingIndexes> disabled;
        ASSERT_TRUE(dev->flush_vring_states(disabled));
        ASSERT_EQ(disabled.size(), 1u);
        VringConfig vhost = g.vrings[ring];
        vhost.last_avail_idx = uint16_t(disabled[0].last_avail_idx - behind);
        vhost.last_used_idx = uint16_t(disabled[0].last_used_idx - behind);
        dev->update_vring(vhost);
        dev->set_vring_state(ring, true);
        ASSERT_TRUE(dev->flush_vring_states(disabled));
        EXPECT_EQ(fw(ring).state, prm::VirtqState::RDY) << ring;
        EXPECT_EQ(fw(ring).hw_available_index, disabled[0].last_avail_idx) << ring;
        EXPECT_EQ(fw(ring).hw_used_index, disabled[0].last_used_idx) << ring;
        EXPECT_EQ(dev->last_timing(Op::Resume).commands, 1u);  // a resume, not a re-creation
    }
}


// A vhost log as vhost maps it: a shared mapping of the frontend's file.
struct SharedLog {
    explicit SharedLog(uint64_t bytes) : size(bytes) {
        p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        EXPECT_NE(p, MAP_FAILED);
    }
    ~SharedLog() { unmap(); }
    void unmap() {
        if (p && p != MAP_FAILED) munmap(p, size);
        p = nullptr;
    }
    DirtyLog log() const { return {uint64_t(uintptr_t(p)), size, 12}; }
    void* p = nullptr;
    uint64_t size;
};

TEST_F(DeviceCore, DirtyLoggingOnOffOn) {
    open("cx7", 2);
    enable_all(4);
    ASSERT_TRUE(dev->configure(guest(4)));
    SharedLog shm(1 << 20);
    DirtyLog log = shm.log();
    ASSERT_TRUE(dev->set_dirty_logging(true, log));
    EXPECT_TRUE(dev->dirty_logging());
    for (uint16_t i = 0; i < 4; i++) {
        EXPECT_TRUE(fw(i).attr.dirty_bitmap_dump_enable);
        EXPECT_EQ(fw(i).attr.dirty_bitmap_addr, log.host_addr);
    }
    ASSERT_TRUE(dev->set_dirty_logging(false, {}));
    EXPECT_FALSE(dev->dirty_logging());
    for (uint16_t i = 0; i < 4; i++) EXPECT_FALSE(fw(i).attr.dirty_bitmap_dump_enable);
    ASSERT_TRUE(dev->set_dirty_logging(true, log));
    for (uint16_t i = 0; i < 4; i++) EXPECT_TRUE(fw(i).attr.dirty_bitmap_dump_enable);
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Ready));
}

uint64_t modifies(emu::Device& d) {
    auto c = d.counters();
    auto it = c.by_opcode.find(uint16_t(prm::Opcode::MODIFY_GENERAL_OBJECT));
    return it == c.by_opcode.end() ? 0 : it->second;
}

// The virtqs' umems register in one batch (16 at a time): 96 of 20 ms each
// need 6 waves, past timeout_ms=50. The probe fails at the batch's deadline
// naming a virtq's umem, instead of running on; the registrations still in
// the kernel end before the device goes.
TEST(DeviceOpen, SlowUmemsStopAtTheBatchDeadline) {
    DeviceConfig c;
    c.emu_spec = "cx7,modify_us=0,query_us=0,create_us=0,destroy_us=0,general_us=0,umem_us=20000";
    c.queues = 16;
    c.queue_size = 256;
    c.timeout_ms = 50;
    auto d = Device::open(c, testing_support::unique_name());
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().code, Errc::Timeout);
    EXPECT_NE(d.error().what.find("umem"), std::string::npos) << d.error().what;
    EXPECT_NE(d.error().what.find("virtq "), std::string::npos) << d.error().what;
}

// A memory table the device cannot register is refused, naming the
// region, before anything is registered or allocated: overlapping regions
// (the hole size underflowed and KLM building ran out of memory), a region
// far away (2^60: billions of KLM entries), an unaligned or wrapping one.
// The device then serves the next, valid table.
TEST_F(DeviceCore, HostileMemoryTablesAreRefusedAndTheNextOneServed) {
    open("cx7", 2);
    enable_all(4);
    const uint64_t ram = guest_ram();
    const uint64_t G = 1ull << 30;
    struct Case {
        std::vector<MemRegion> mem;
        const char* expect;
    } cases[] = {
        {{{0, 64 << 20, ram}, {(64 << 20) - 4096, 64 << 20, ram + (128 << 20)}},
         "region 1 [gpa 0x3fff000, +0x4000000) at 0x"},
        {{{0, 64 << 20, ram}, {1ull << 60, 64 << 20, ram + (128 << 20)}}, "KLM entries (chunks of"},
        {{{0x1000, 0x1800, ram}}, "is not 4 KiB aligned"},
        {{{~0ull - 0xfff, 0x2000, ram}}, "wraps around"},
    };
    auto before = emu_dev().object_counts();
    for (const auto& c : cases) {
        GuestConfig g = guest(4);
        g.mem = c.mem;
        auto r = dev->configure(g);
        ASSERT_FALSE(r) << c.expect;
        EXPECT_EQ(r.error().code, Errc::InvalidArgument);
        EXPECT_NE(r.error().what.find(c.expect), std::string::npos) << r.error().what;
        EXPECT_NE(r.error().what.find("memory table refused"), std::string::npos);
        auto now = emu_dev().object_counts();
        EXPECT_EQ(now.umems, before.umems);
        EXPECT_EQ(now.mkeys, before.mkeys);
    }
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Init));
    GuestConfig ok = guest_in_ram(4);
    ok.mem = {{0, G, ram}};
    ASSERT_TRUE(dev->configure(ok));
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Ready));
}

// A ring the device would run outside guest memory (or misaligned, or of
// an impossible size) is refused by name and never started; the others are.
TEST_F(DeviceCore, RingsOutsideGuestMemoryAreNeverStarted) {
    open("cx7", 2);
    enable_all(4);
    struct Case {
        void (*bend)(VringConfig&);
        const char* expect;
    } cases[] = {
        {[](VringConfig& v) { v.used_gpa = (1ull << 30) - 8; }, "device area (used)"},
        {[](VringConfig& v) { v.desc_gpa = 1ull << 40; }, "not inside guest memory"},
        {[](VringConfig& v) { v.avail_gpa += 1; }, "2-byte aligned"},
        {[](VringConfig& v) { v.size = 300; }, "power of two"},
    };
    for (const auto& c : cases) {
        GuestConfig g = guest_in_ram(4);
        c.bend(g.vrings[2]);
        auto r = dev->configure(g);
        ASSERT_FALSE(r) << c.expect;
        EXPECT_EQ(r.error().code, Errc::InvalidArgument);
        EXPECT_NE(r.error().what.find("vring 2 refused"), std::string::npos) << r.error().what;
        EXPECT_NE(r.error().what.find(c.expect), std::string::npos) << r.error().what;
        auto p = phases(4);
        EXPECT_NE(p[2], VqPhase::Ready);
        EXPECT_EQ(p[3], VqPhase::Ready);
        std::vector<RingIndexes> out;
        ASSERT_TRUE(dev->close(out));
    }
}

// A packed ring's driver and device areas are 4-byte event suppression
// structures, not a split ring's avail and used rings.
TEST_F(DeviceCore, APackedRingsEventAreasAreCheckedAsFourBytes) {
    open("cx7", 2);
    enable_all(4);
    auto packed = [&](uint64_t used_gpa) {
        GuestConfig g = guest_in_ram(4);
        g.features |= vfeat::RING_PACKED;
        for (auto& v : g.vrings) {
            v.packed = true;
            v.last_avail_idx = v.last_used_idx = 0x8000;  // slot 0, wrap counters 1
        }
        g.vrings[2].used_gpa = used_gpa;
        return g;
    };
    // The last 4 bytes of guest memory hold the whole device area.
    ASSERT_TRUE(dev->configure(packed((1ull << 30) - 4)));
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Ready));
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    auto r = dev->configure(packed((1ull << 30) - 2));
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().what.find("vring 2 refused: device event suppression area"), std::string::npos)
        << r.error().what;
    ASSERT_TRUE(dev->close(out));
}

// After the frontend left, its rings and memory are gone: nothing resumes.
TEST_F(DeviceCore, ResumeWithoutAFrontendIsRefused) {
    open("cx7", 2);
    enable_all(4);
    ASSERT_TRUE(dev->configure(guest(4)));
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    dev->cleanup();
    auto r = dev->resume_all();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::State);
    EXPECT_NE(r.error().what.find("no frontend"), std::string::npos) << r.error().what;
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Suspended));
}

// vhost maps the log anew at each SET_LOG_BASE and unmaps the previous one:
// the device moves to the new log in one batch, the old registration goes,
// and nothing is sent while the log stays the same.
TEST_F(DeviceCore, DirtyLogFollowsEachNewLogAndDropsTheOld) {
    open("cx7", 2);
    enable_all(4);
    ASSERT_TRUE(dev->configure(guest(4)));
    auto objects_before = emu_dev().object_counts();
    SharedLog first(1 << 16), second(1 << 16);
    ASSERT_TRUE(dev->set_dirty_logging(true, first.log()));
    const uint32_t first_mkey = fw(0).attr.dirty_bitmap_mkey;
    uint64_t m0 = modifies(emu_dev());
    ASSERT_TRUE(dev->set_dirty_logging(true, first.log()));  // unchanged: nothing to do
    EXPECT_EQ(modifies(emu_dev()), m0);
    ASSERT_TRUE(dev->set_dirty_logging(true, second.log()));
    EXPECT_EQ(modifies(emu_dev()), m0 + 4);  // one MODIFY per virtq
    for (uint16_t i = 0; i < 4; i++) {
        EXPECT_EQ(fw(i).attr.dirty_bitmap_addr, second.log().host_addr) << i;
        EXPECT_NE(fw(i).attr.dirty_bitmap_mkey, first_mkey) << i;
        EXPECT_TRUE(fw(i).attr.dirty_bitmap_dump_enable) << i;
    }
    first.unmap();  // as vhost does after the switch
    auto objects = emu_dev().object_counts();
    EXPECT_EQ(objects.mkeys, objects_before.mkeys + 1);  // the second log's only
    EXPECT_EQ(objects.umems, objects_before.umems + 1);
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Ready));
}

// The log's CREATE_MKEY executes but is answered after its deadline: the
// mkey names the log's umem, so the umem goes only after the late answer
// (and the late mkey with it); the same log then turns on.
TEST_F(DeviceCore, ALogWhoseMkeyIsAnsweredLateGoesOnceAnswered) {
    timeout_ms = 100;
    open("cx7", 2);
    enable_all(4);
    ASSERT_TRUE(dev->configure(guest(4)));
    const auto before = emu_dev().object_counts();
    SharedLog log(1 << 16);
    ASSERT_TRUE(emu_fault("op=create_mkey answer_late_us=1000000"));  // 10x the deadline
    auto r = dev->set_dirty_logging(true, log.log());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::Timeout) << r.error().what;
    ASSERT_TRUE(emu_fault("clear"));
    ASSERT_TRUE(eventually([&] { return dev->command_health().unanswered == 0; }));
    EXPECT_TRUE(memory_objects_are(before.umems, before.mkeys));
    ASSERT_TRUE(dev->set_dirty_logging(true, log.log()));
    for (uint16_t i = 0; i < 4; i++) EXPECT_TRUE(fw(i).attr.dirty_bitmap_dump_enable) << i;
}

// The frontend that set the log left (dev_cleanup): the virtqs stop naming
// its log and the registration goes at once, not at the next frontend's
// start: it holds the frontend's file (the emulator keeps a mapping of it;
// a ConnectX pins its pages).
TEST_F(DeviceCore, CleanupEndsDirtyLoggingAndReleasesTheLog) {
    open("cx7", 2);
    enable_all(4);
    ASSERT_TRUE(dev->configure(guest(4)));
    {
        SharedLog shm(1 << 16);
        ASSERT_TRUE(dev->set_dirty_logging(true, shm.log()));
        std::vector<RingIndexes> out;
        ASSERT_TRUE(dev->close(out));
        dev->cleanup();
        EXPECT_FALSE(dev->dirty_logging());
        for (uint16_t i = 0; i < 4; i++) {
            EXPECT_FALSE(fw(i).attr.dirty_bitmap_dump_enable) << i;
            EXPECT_EQ(fw(i).attr.dirty_bitmap_mkey, 0u) << i;
            EXPECT_EQ(fw(i).attr.virtio_q_mkey, 0u) << i;
        }
        EXPECT_EQ(emu_dev().object_counts().mkeys, 0u);  // the memory's and the log's
    }  // vhost unmaps the log
    enable_all(4);
    ASSERT_TRUE(dev->configure(guest(4)));
    for (uint16_t i = 0; i < 4; i++) {
        EXPECT_FALSE(fw(i).attr.dirty_bitmap_dump_enable) << i;
        EXPECT_EQ(fw(i).attr.dirty_bitmap_mkey, 0u) << i;
    }
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Ready));
}

TEST_F(DeviceCore, FailingSuspendOfOneQueueKeepsOthersAndLastKnownGood) {
    open("cx7", 4);
    enable_all(8);
    ASSERT_TRUE(dev->configure(guest(8, 40)));
    ASSERT_TRUE(emu_fault("op=modify vq=3 status=0x9 syndrome=0x77"));
    std::vector<RingIndexes> out;
    auto r = dev->close(out);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().fw_status, 0x9);
    EXPECT_EQ(r.error().syndrome, 0x77u);
    EXPECT_EQ(r.error().queue, 3);
    ASSERT_EQ(out.size(), 8u);
    for (uint16_t i = 0; i < 8; i++) {
        EXPECT_EQ(out[i].last_avail_idx, 40 + i) << i;  // never garbage
        EXPECT_EQ(out[i].from_device, i != 3) << i;
    }
    auto p = phases(8);
    EXPECT_EQ(p[3], VqPhase::Ready);
    EXPECT_EQ(dev->vq_info()[3].errors, 2u);  // the fault persists: the stop's second round is refused too
    for (int i = 0; i < 8; i++) {
        if (i == 3) continue;
        EXPECT_EQ(p[i], VqPhase::Suspended) << i;
    }
}

TEST_F(DeviceCore, CyclesNeverExceedMaxInflightForEveryStrategy) {
    for (Strategy s : {Strategy::Async, Strategy::Sequential, Strategy::Threads}) {
        open("cx7", 8, 4, s);
        enable_all(16);
        ASSERT_TRUE(dev->configure(guest(16)));
        for (int c = 0; c < 3; c++) {
            ASSERT_TRUE(dev->suspend_all());
            EXPECT_LE(dev->last_timing(Op::Suspend).peak_inflight, 4u);
            EXPECT_EQ(phases(16), std::vector<VqPhase>(16, VqPhase::Suspended));
            ASSERT_TRUE(dev->resume_all());
            EXPECT_EQ(phases(16), std::vector<VqPhase>(16, VqPhase::Ready));
        }
        EXPECT_LE(emu_dev().counters().peak_inflight, 16u);
        dev.reset();
    }
}

TEST_F(DeviceCore, VirtqErrorIsRecoveredFromHardwareIndexes) {
    open("cx7", 2);
    enable_all(4);
    ASSERT_TRUE(dev->configure(guest(4)));
    uint32_t old_id = dev->vq_info()[2].obj_id;
    ASSERT_TRUE(emu_dev().advance_virtq(old_id, 11, 6));  // ring 2 starts at 2/2
    ASSERT_TRUE(emu_fault("vq=2 error_type=1"));
    ASSERT_TRUE(dev->wait_events_handled(1, std::chrono::seconds(20)));
    auto v = dev->vq_info()[2];
    EXPECT_EQ(v.phase, VqPhase::Ready);
    EXPECT_EQ(v.errors, 1u);
    EXPECT_EQ(v.error_type, 1);
    EXPECT_NE(v.obj_id, old_id);
    EXPECT_EQ(fw(2).state, prm::VirtqState::RDY);
    EXPECT_EQ(fw(2).hw_available_index, 13);
    EXPECT_EQ(fw(2).hw_used_index, 8);
    for (uint16_t i : {0, 1, 3}) EXPECT_EQ(dev->vq_info()[i].errors, 0u);
}

TEST_F(DeviceCore, RepeatedErrorsLeaveTheVirtqInErrorAfterTheLimit) {
    open("cx7", 1);
    enable_all(2);
    ASSERT_TRUE(dev->configure(guest(2)));
    for (int k = 1; k <= 4; k++) {
        ASSERT_TRUE(emu_fault("vq=1 error_type=2"));
        ASSERT_TRUE(dev->wait_events_handled(k, std::chrono::seconds(20)));
    }
    auto v = dev->vq_info()[1];
    EXPECT_EQ(v.errors, 4u);
    EXPECT_EQ(v.phase, VqPhase::Error);  // a 4th error within the window: given up
    EXPECT_EQ(fw(1).state, prm::VirtqState::ERR);
    EXPECT_EQ(dev->vq_info()[0].phase, VqPhase::Ready);
}

TEST_F(DeviceCore, NotifyAreaIsAMappableDoorbellPage) {
    open("cx7", 1);
    ASSERT_TRUE(dev->has_notify_area());
    auto a = dev->notify_area();
    ASSERT_TRUE(a);
    ASSERT_GE(a->fd, 0);
    ASSERT_GT(a->size, 0u);
    void* p = mmap(nullptr, a->size, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, off_t(a->offset));
    ASSERT_NE(p, MAP_FAILED) << "errno " << errno;
    static_cast<volatile uint16_t*>(p)[0] = 1;  // a frontend's doorbell write: virtq 1
    // The device saw it for virtq 1 (INIT: recorded until it starts), and
    // for no other.
    EXPECT_TRUE(eventually([&] { return fw(1).kicks.total == 1; }));
    EXPECT_EQ(fw(1).kicks.pending, 1u);
    EXPECT_EQ(fw(0).kicks.total, 0u);
    munmap(p, a->size);
}

// A SET_VRING_KICK on a running ring (vhost re-enables the ring and the
// glue hands the core the new fd): kicks on the new fd reach the virtq.
TEST_F(DeviceCore, AKickfdReplacedOnARunningRingIsFollowed) {
    open("cx7", 1);
    UniqueFd old_kick(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    UniqueFd new_kick(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    enable_all(2);
    GuestConfig g = guest(2);
    g.vrings[0].kickfd = old_kick.get();
    ASSERT_TRUE(dev->configure(g));
    ASSERT_EQ(fw(0).state, prm::VirtqState::RDY);
    const uint64_t before = fw(0).kicks.total;  // the driver's own kick of a started ring
    dev->set_kickfd(0, new_kick.get());
    ASSERT_EQ(eventfd_write(new_kick.get(), 1), 0);
    EXPECT_TRUE(eventually([&] { return fw(0).kicks.total == before + 1; }));
    uint64_t left = 0;
    EXPECT_EQ(eventfd_read(new_kick.get(), &left), -1) << "the new fd's kick was not taken";
}

TEST_F(DeviceCore, BadFaultRulesAreRejectedClearly) {
    open("cx7", 1);
    auto r = emu_fault("op=frob status=1");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().what.find("op=frob"), std::string::npos);
    EXPECT_FALSE(emu_fault("op=modify"));
    EXPECT_FALSE(emu_fault("vq=99 error_type=1"));
    EXPECT_TRUE(emu_fault("clear"));
}

TEST_F(DeviceCore, OffersTheCapsOffloadsAndProgramsTheNegotiatedOnes) {
    open("cx7", 1);
    uint64_t offloads =
        prm::virtio_net_features_of(emu_dev().profile().virtio.device_features_bits_mask);
    EXPECT_NE(offloads, 0u);
    EXPECT_EQ(dev->features() & offloads, offloads);
    // The guest takes one offload of those offered: the virtqs carry exactly it.
    uint64_t one = offloads & ~(offloads - 1);
    auto g = guest(2);
    g.features |= one;
    enable_all(2);
    ASSERT_TRUE(dev->configure(g));
    uint16_t m = prm::queue_feature_mask(one);
    for (uint16_t i = 0; i < 2; i++) {
        EXPECT_EQ(fw(i).attr.queue_feature_bit_mask_12_3, prm::queue_feature_mask_12_3(m)) << i;
        EXPECT_EQ(fw(i).attr.queue_feature_bit_mask_2_0, prm::queue_feature_mask_2_0(m)) << i;
    }
}

// doc/guides/mlx5async.md, "Virtio features": what the driver offers
// whatever the caps, what it takes from them, and what it never offers.
TEST_F(DeviceCore, OffersAnnounceLayoutOrderingAndThePortsMtu) {
    emu_extra = ",mtu=9000";
    open("cx7", 1);
    const uint64_t f = dev->features();
    for (uint64_t want : {vfeat::GUEST_ANNOUNCE, vfeat::ANY_LAYOUT, vfeat::ORDER_PLATFORM,
                          vfeat::MTU, vfeat::LOG_ALL, vfeat::VERSION_1, vfeat::MQ,
                          vfeat::PROTOCOL_FEATURES})
        EXPECT_TRUE(f & want) << std::hex << want;
    // No cap says the device honours these, or the emulator does not.
    for (uint64_t never : {vfeat::RING_EVENT_IDX, vfeat::RING_INDIRECT_DESC, vfeat::ACCESS_PLATFORM,
                           vfeat::CTRL_VQ})
        EXPECT_FALSE(f & never) << std::hex << never;
    EXPECT_EQ(dev->port_mtu(), 9000);
}

TEST_F(DeviceCore, PackedRingsAreOfferedOnlyWhenTheFirmwareListsThem) {
    emu_extra = ",packed=0";
    open("cx7", 1);
    EXPECT_FALSE(dev->features() & vfeat::RING_PACKED);
}

// A guest that negotiated RING_PACKED gets packed virtqs: the objects made
// at probe (split: no features yet) are switched in their MODIFY to RDY,
// and the positions (slot, wrap counter in bit 15) go through unchanged,
// from vhost to the device and from the suspended device back.
TEST_F(DeviceCore, PackedRingsRunPackedAndCarryTheirWrapCountersThrough) {
    open("cx7", 4);
    ASSERT_TRUE(dev->features() & vfeat::RING_PACKED);
    auto g = guest(8);
    g.features |= vfeat::RING_PACKED;
    for (auto& v : g.vrings) {
        v.packed = true;
        v.last_avail_idx = v.last_used_idx = uint16_t((v.index % 2 ? 0x8000 : 0) | (200 + v.index));
    }
    enable_all(8);
    ASSERT_TRUE(dev->configure(g));
    for (uint16_t i = 0; i < 8; i++) {
        auto f = fw(i);
        EXPECT_EQ(f.state, prm::VirtqState::RDY) << i;
        EXPECT_EQ(f.attr.virtio_q_type, prm::VirtqType::PACKED) << i;
        EXPECT_EQ(f.hw_available_index, g.vrings[i].last_avail_idx) << i;
    }
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    ASSERT_EQ(out.size(), 8u);
    for (uint16_t i = 0; i < 8; i++) {
        EXPECT_EQ(out[i].last_avail_idx, g.vrings[i].last_avail_idx) << i;
        EXPECT_EQ(out[i].last_used_idx, g.vrings[i].last_used_idx) << i;
        EXPECT_TRUE(out[i].from_device) << i;
    }
    // The next guest runs split again: the same objects switch back.
    auto split = guest(8);
    ASSERT_TRUE(dev->configure(split));
    for (uint16_t i = 0; i < 8; i++) EXPECT_EQ(fw(i).attr.virtio_q_type, prm::VirtqType::SPLIT) << i;
}

TEST(DeviceOpen, UnknownProfileAndHardwareWithoutDeviceFailClearly) {
    DeviceConfig c;
    c.emu_spec = "cx9";
    auto d = Device::open(c, "bad0");
    ASSERT_FALSE(d);
    DeviceConfig h;
    h.hw_device = "0000:99:00.7";
    auto e = Device::open(h, "bad1");
    ASSERT_FALSE(e);
    EXPECT_FALSE(to_string(e.error()).empty());
}

}  // namespace
}  // namespace mlx5async::core
