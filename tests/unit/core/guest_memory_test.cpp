// Guest-memory registration through the device core (guest_memory.hpp):
// what the virtqs translate through, chunks of at most 1 GiB, reuse keyed
// on the backing file, a failed chunk failing the whole table with nothing
// left behind, and guests far larger than this machine's memory (a sparse
// memfd is registered untouched).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <regex>
#include <string>

#include "common/base/log_sink.hpp"
#include "common/prm/opcodes.hpp"
#include "core_fixture.hpp"
#include "emu/emu.hpp"
#include "emu/faults.hpp"
#include "emu/guest_memory.hpp"
#include "vdpa/mlx5async/core/guest_memory.hpp"

namespace mlx5async::core {
namespace {

using testing_support::Fixture;
using testing_support::SparseGuest;
using testing_support::guest_ram;
constexpr uint64_t kGiB = 1ull << 30;
constexpr unsigned kRingUmems = 4;  // a ring's own: its virtq's three, its event QP's

struct GuestMemory : Fixture {
    // `rings` rings at the start of guest memory; regions as given.
    GuestConfig guest_with(uint32_t rings, std::vector<MemRegion> mem) {
        GuestConfig g = guest(rings);
        g.mem = std::move(mem);
        seed_rings(g);
        return g;
    }
    // The chunks a table of these region sizes is registered in.
    static uint64_t chunks(std::initializer_list<uint64_t> sizes) {
        uint64_t total = 0, n = 0;
        for (uint64_t s : sizes) total += s;
        const uint64_t c = mem_chunk_bytes(total);
        for (uint64_t s : sizes) n += (s + c - 1) / c;
        return n;
    }
    uint64_t umem_creates() {
        auto c = emu_dev().counters().by_opcode;
        auto it = c.find(uint16_t(prm::Opcode::CREATE_UMEM));
        return it == c.end() ? 0 : it->second;
    }
};

// A memory batch's deadline counts its commands in waves of `width`, a
// umem registration once per GiB it pins: one 512 GiB region registered
// whole (sequential) gets as many waves as 512 chunks of 1 GiB one at a time.
TEST(MemoryBatchDeadline, ARegistrationCountsOncePerGiBItPins) {
    devx::Context none;
    auto batch = [&](uint64_t umem_bytes, int chunks) {
        devx::Batch b;
        devx::Entry e;
        for (int i = 0; i < chunks; i++) {
            e.steps.push_back(devx::Command::reg_umem(none, nullptr, umem_bytes));
            e.steps.push_back(devx::Command::general(none, {}, 0));  // its direct mkey
        }
        b.add(std::move(e));
        return b;
    };
    EXPECT_EQ(Commands::memory_waves(batch(512ull << 30, 1), 1), 513u);
    EXPECT_EQ(Commands::memory_waves(batch(1ull << 30, 512), 1), 1024u);
    EXPECT_EQ(Commands::memory_waves(batch(1ull << 30, 512), 16), 64u);
    EXPECT_EQ(Commands::memory_waves(batch((1ull << 30) + 1, 1), 16), 1u);  // 2 + 1 commands
    EXPECT_EQ(Commands::memory_waves(batch(4096, 32), 16), 4u);
    EXPECT_EQ(Commands::memory_waves(devx::Batch{}, 0), 1u);
}

// Chunks: 1 GiB at most, and enough of them for a small table to register
// in parallel too.
TEST(GuestMemoryChunks, AtMostOneGiBAndAtLeastThirtyTwoDownToFourMiB) {
    EXPECT_EQ(mem_chunk_bytes(1024 * kGiB), kGiB);
    EXPECT_EQ(mem_chunk_bytes(32 * kGiB), kGiB);
    EXPECT_EQ(mem_chunk_bytes(4 * kGiB), kGiB / 8);  // 32 chunks of 128 MiB
    EXPECT_EQ(mem_chunk_bytes(256ull << 20), 8ull << 20);
    EXPECT_EQ(mem_chunk_bytes(16ull << 20), 4ull << 20);  // the floor: 4 chunks
    EXPECT_EQ(mem_chunk_bytes(0), 4ull << 20);
}

// 2.5 GiB below a hole and 1 GiB above it: chunks of 128 MiB (28 of them),
// each a umem and a direct mkey, and one indirect mkey over them all.
TEST_F(GuestMemory, RegionsAreRegisteredInChunks) {
    SparseGuest ram(4 * kGiB);
    open("cx7", 2);
    auto base = emu_dev().object_counts();
    enable_all(4);
    const uint64_t low = 5 * kGiB / 2;
    auto g = guest_with(4, {{0, low, ram.base}, {3 * kGiB, kGiB, ram.base + low}});
    ASSERT_TRUE(dev->configure(g));
    const uint64_t n = chunks({low, kGiB});
    EXPECT_EQ(n, 28u);
    auto c = emu_dev().object_counts();
    EXPECT_EQ(c.umems, base.umems + n);
    EXPECT_EQ(c.mkeys, base.mkeys + n + 1);
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Ready));
    // Every chunk reaches its own host pages through the indirect mkey.
    const uint32_t mkey = fw(0).attr.virtio_q_mkey;
    emu::DeviceState& st = emu_dev().state();
    std::lock_guard lk(st.mu);
    for (uint64_t gpa : {uint64_t(0), kGiB + 4096, 2 * kGiB + 8192, 3 * kGiB + 12288}) {
        auto s = emu::translate(st, mkey, gpa, 64);
        ASSERT_TRUE(s) << std::hex << gpa;
        ASSERT_EQ(s->size(), 1u);
    }
    EXPECT_FALSE(emu::translate(st, mkey, low + 4096, 64));  // the hole
}

// The sequential strategy registers as DPDK 22.11 does: a umem and a direct
// mkey per region, whole; the indirect mkey splits a region over 2 GiB
// into KLM entries of at most 2 GiB.
TEST_F(GuestMemory, SequentialRegistersWholeRegions) {
    SparseGuest ram(4 * kGiB);
    open("cx7", 2, 16, Strategy::Sequential);
    auto base = emu_dev().object_counts();
    enable_all(4);
    const uint64_t low = 5 * kGiB / 2;
    ASSERT_TRUE(dev->configure(guest_with(4, {{0, low, ram.base}, {3 * kGiB, kGiB, ram.base + low}})));
    auto c = emu_dev().object_counts();
    EXPECT_EQ(c.umems, base.umems + 2);
    EXPECT_EQ(c.mkeys, base.mkeys + 3);
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Ready));
    const uint32_t mkey = fw(0).attr.virtio_q_mkey;
    emu::DeviceState& st = emu_dev().state();
    std::lock_guard lk(st.mu);
    uint8_t mark = 1;
    for (uint64_t gpa : {uint64_t(0), 2 * kGiB - 32, 2 * kGiB + 8192, 3 * kGiB + 12288}) {
        auto sp = emu::translate(st, mkey, gpa, 64);
        ASSERT_TRUE(sp) << std::hex << gpa;
        // The device's view of the byte is the guest's byte at that address.
        auto* guest = reinterpret_cast<volatile uint8_t*>(ram.base + (gpa < low ? gpa : gpa - 3 * kGiB + low));
        *guest = ++mark;
        EXPECT_EQ(*reinterpret_cast<volatile uint8_t*>((*sp)[0].host), mark) << std::hex << gpa;
    }
}

// A 1 TiB guest on a machine with 24 GiB: the registration touches no page
// (the emulator's view of each chunk shares the memfd's pages) and leaves
// nothing behind after cleanup.
TEST_F(GuestMemory, TerabyteSparseGuestRegistersAndIsReleasedWhole) {
    SparseGuest ram(1024 * kGiB);
    open("cx7", 2);
    auto base = emu_dev().object_counts();
    enable_all(4);
    auto g = guest_with(4, {{0, 2 * kGiB, ram.base}, {4 * kGiB, 1022 * kGiB, ram.base + 2 * kGiB}});
    ASSERT_TRUE(dev->configure(g));
    EXPECT_EQ(emu_dev().object_counts().umems, base.umems + 1024);
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Ready));
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    dev->cleanup();
    auto c = emu_dev().object_counts();
    EXPECT_EQ(c.umems, base.umems);
    EXPECT_EQ(c.mkeys, 0u);
}

// The third chunk's umem registration fails: the table fails whole, naming
// the region and the chunk; the chunks registered are released, no mkey is
// left, and no ring starts.
TEST_F(GuestMemory, AFailedChunkFailsTheTableNamingItAndLeavesNothing) {
    SparseGuest ram(4 * kGiB);
    open("cx7", 2);
    auto base = emu_dev().object_counts();
    enable_all(4);
    emu::FaultRule r;
    r.match.opcode = uint16_t(prm::Opcode::CREATE_UMEM);
    r.match.nth = 3;
    r.status = uint8_t(prm::Status::BAD_RES_STATE_ERR);
    emu_dev().faults().add(r);
    auto g = guest_with(4, {{0, 4 * kGiB, ram.base}});
    auto res = dev->configure(g);
    ASSERT_FALSE(res);
    const std::string& what = res.error().what;
    EXPECT_NE(what.find("region 0 [gpa 0x0, +0x100000000)"), std::string::npos) << what;
    // Which chunk reaches the device third depends on the workers' order;
    // the kernel turns the status into an errno (cmd_status_to_err: EINVAL).
    const std::regex chunk(R"(chunk \[gpa 0x[0-9a-f]+, \+0x8000000\): umem registration: .*CREATE_UMEM: errno 22)");
    EXPECT_TRUE(std::regex_search(what, chunk)) << what;  // 4 GiB: chunks of 128 MiB
    auto c = emu_dev().object_counts();
    EXPECT_EQ(c.umems, base.umems);
    EXPECT_EQ(c.mkeys, base.mkeys);
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Init));
    emu_dev().faults().clear();
    ASSERT_TRUE(dev->configure(g));  // the same table, once the device answers
    EXPECT_EQ(emu_dev().object_counts().umems, base.umems + chunks({4 * kGiB}));
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Ready));
}

// A device without pre-created virtqs: its virtqs' objects go in the batch
// of the chunks' registrations. Each chunk's direct mkey follows its umem
// in its chain: the first is made while other chunks still register, not
// in a wave after them all.
TEST_F(GuestMemory, VirtqsAreCreatedInTheMemorysBatches) {
    SparseGuest ram(4 * kGiB);
    open("cx7", 0);
    enable_all(8);
    emu_dev().clear_trace();
    ASSERT_TRUE(dev->configure(guest_with(8, {{0, 4 * kGiB, ram.base}})));
    EXPECT_EQ(phases(8), std::vector<VqPhase>(8, VqPhase::Ready));
    int64_t first_chunk_mkey = INT64_MAX, last_umem = 0;
    unsigned creates = 0, mkeys = 0, umems = 0;
    for (const auto& t : emu_dev().trace()) {
        switch (prm::Opcode(t.opcode)) {
        case prm::Opcode::CREATE_GENERAL_OBJECT:  // virtqs and their counters
            creates++;
            break;
        case prm::Opcode::CREATE_MKEY:
            first_chunk_mkey = std::min(first_chunk_mkey, t.submit_ns);
            mkeys++;
            break;
        case prm::Opcode::CREATE_UMEM:
            last_umem = std::max(last_umem, t.submit_ns);
            umems++;
            break;
        default: break;
        }
    }
    const uint64_t n = chunks({4 * kGiB});
    EXPECT_EQ(umems, n + 8 * kRingUmems);
    EXPECT_EQ(mkeys, n + 1);
    EXPECT_EQ(creates, 16u);  // 8 counters, 8 virtqs
    EXPECT_LT(first_chunk_mkey, last_umem);  // 32 chunks on 16 chains: a chain's second umem follows its first mkey
}

// A chunk's direct mkey fails while the virtqs are made in the same
// batches: the table fails whole and leaves no mkey and no chunk umem; the
// virtqs made stay (INIT) for the next start, which registers the table.
TEST_F(GuestMemory, AFailedChunkInSharedBatchesKeepsTheVirtqsMade) {
    SparseGuest ram(4 * kGiB);
    start_attempts = 1;  // what one failed attempt leaves
    open("cx7", 0);
    auto base = emu_dev().object_counts();
    enable_all(4);
    emu::FaultRule r;
    r.match.opcode = uint16_t(prm::Opcode::CREATE_MKEY);
    r.match.nth = 3;
    r.status = uint8_t(prm::Status::BAD_PARAM_ERR);
    emu_dev().faults().add(r);
    auto g = guest_with(4, {{0, 4 * kGiB, ram.base}});
    auto res = dev->configure(g);
    ASSERT_FALSE(res);
    EXPECT_NE(res.error().what.find("direct mkey"), std::string::npos) << res.error().what;
    auto c = emu_dev().object_counts();
    EXPECT_EQ(c.mkeys, base.mkeys);
    EXPECT_EQ(c.umems, base.umems + 4 * kRingUmems);  // the rings' own
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Init));
    emu_dev().faults().clear();
    ASSERT_TRUE(dev->configure(g));
    EXPECT_EQ(emu_dev().object_counts().umems, base.umems + 4 * kRingUmems + chunks({4 * kGiB}));
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Ready));
}

// A new table's start returns while the old registration's destroys are
// still in the device: they run after it, off the downtime, and all of it
// goes once they are answered.
TEST_F(GuestMemory, AReplacedTableIsDestroyedAfterTheStartReturns) {
    SparseGuest ram(2 * kGiB);
    open("cx7", 2);
    auto base = emu_dev().object_counts();
    enable_all(4);
    ASSERT_TRUE(dev->configure(guest_with(4, {{0, kGiB, ram.base}})));
    const uint32_t old_mkey = fw(0).attr.virtio_q_mkey;
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    emu::FaultRule slow;  // an hour: answered only when the test forces it
    slow.match.opcode = uint16_t(prm::Opcode::DESTROY_MKEY);
    slow.action = emu::FaultAction::Delay;
    slow.extra_ns = 3600ll * 1'000'000'000;
    emu_dev().faults().add(slow);
    ASSERT_TRUE(dev->configure(guest_with(4, {{0, kGiB, ram.base + kGiB}})));
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Ready));
    for (uint16_t i = 0; i < 4; i++) EXPECT_NE(fw(i).attr.virtio_q_mkey, old_mkey) << i;
    // The start returned with the old indirect mkey's destroy in the device.
    ASSERT_TRUE(emu_dev().wait_running(1, std::chrono::seconds(20)));
    emu_dev().faults().clear();
    EXPECT_EQ(emu_dev().complete_next(1), 1u);
    const uint64_t n = chunks({kGiB});
    EXPECT_TRUE(memory_objects_are(base.umems + n, base.mkeys + n + 1));
}

// The same GPA, size and host address over another file (a frontend that
// reconnected with new memory mapped where the old was) is registered
// again; the same file and offset is reused.
TEST_F(GuestMemory, ReuseNeedsTheSameBackingFileAndOffset) {
    SparseGuest ram(kGiB);
    open("cx7", 2);
    enable_all(4);
    auto g = guest_with(4, {{0, kGiB, ram.base, 7, 100, 0}});
    ASSERT_TRUE(dev->configure(g));
    const uint64_t first = umem_creates();
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    ASSERT_TRUE(dev->configure(g));
    EXPECT_EQ(umem_creates(), first);  // identical table: kept
    const uint64_t n = chunks({kGiB});
    ASSERT_TRUE(dev->close(out));
    g.mem[0].file_ino = 101;
    ASSERT_TRUE(dev->configure(g));
    EXPECT_EQ(umem_creates(), first + n);
    ASSERT_TRUE(dev->close(out));
    g.mem[0].file_offset = 1ull << 21;
    ASSERT_TRUE(dev->configure(g));
    EXPECT_EQ(umem_creates(), first + 2 * n);
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Ready));
}

// One rule for a ring the device cannot use: ring 1 runs past its region
// into a hole, ring 2 came from vhost unusable (it could not map it, so it
// never enabled it): each is refused by name, and the others start.
TEST_F(GuestMemory, ARingTheDeviceCannotUseIsRefusedByNameAndTheOthersStart) {
    SparseGuest ram(64ull << 20);
    open("cx7", 2);
    auto g = guest_with(4, {{0, 32ull << 20, ram.base}, {64ull << 20, 32ull << 20, ram.base + (32ull << 20)}});
    g.vrings[1].desc_gpa = (32ull << 20) - 0x800;  // 4 KiB of descriptors, half past the end
    g.vrings[2].unusable = "vhost could not map its addresses into guest memory";
    for (uint16_t r : {0, 1, 3}) dev->set_vring_state(r, true);
    std::vector<std::string> lines;
    std::mutex mu;
    set_log_sink([&](LogLevel, std::string_view l) {
        std::lock_guard lk(mu);
        lines.emplace_back(l);
    });
    auto r = dev->configure(g);
    set_log_sink(nullptr);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().what.find("vring 1 refused: descriptor table"), std::string::npos) << r.error().what;
    auto said = [&](const std::string& what) {
        return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(what) != std::string::npos; });
    };
    EXPECT_TRUE(said("vring 1 refused: descriptor table"));
    EXPECT_TRUE(said("vring 2 refused: vhost could not map"));
    EXPECT_EQ(phases(4), (std::vector<VqPhase>{VqPhase::Ready, VqPhase::Init, VqPhase::Init, VqPhase::Ready}));
}

// --- Through the device: the ring addresses a virtq translates, a table kept
// across close and conf, a changed one, the null mkey, cleanup.

using DeviceCore = Fixture;

uint64_t mkey_creates(emu::Device& e) {
    auto c = e.counters().by_opcode;
    auto it = c.find(uint16_t(prm::Opcode::CREATE_MKEY));
    return it == c.end() ? 0 : it->second;
}

// The host address `gpa` maps to through `mkey` in the emulator, or 0.
uint64_t host_of(emu::Device& e, uint32_t mkey, uint64_t gpa, size_t len) {
    emu::DeviceState& st = e.state();
    std::lock_guard lk(st.mu);
    auto s = emu::translate(st, mkey, gpa, len);
    if (!s || s->size() != 1) return 0;
    return uint64_t(uintptr_t((*s)[0].host));
}

TEST_F(DeviceCore, VirtqMkeyTranslatesTheRingAddresses) {
    open("cx7", 2);
    auto base = emu_dev().object_counts();
    enable_all(4);
    auto g = guest_in_ram(4);
    ASSERT_TRUE(dev->configure(g));
    uint32_t mkey = fw(0).attr.virtio_q_mkey;
    ASSERT_NE(mkey, 0u);
    for (uint16_t i = 0; i < 4; i++) {
        auto f = fw(i);
        EXPECT_EQ(f.state, prm::VirtqState::RDY);
        EXPECT_EQ(f.attr.virtio_q_mkey, mkey) << i;
        const auto& v = g.vrings[i];
        EXPECT_EQ(host_of(emu_dev(), mkey, v.desc_gpa, 16 * 256), guest_ram() + v.desc_gpa);
        EXPECT_EQ(host_of(emu_dev(), mkey, v.avail_gpa, 6 + 2 * 256), guest_ram() + v.avail_gpa);
        EXPECT_EQ(host_of(emu_dev(), mkey, v.used_gpa, 6 + 8 * 256), guest_ram() + v.used_gpa);
    }
    auto c = emu_dev().object_counts();
    const uint64_t chunks = (1ull << 30) / mem_chunk_bytes(1ull << 30);
    EXPECT_EQ(c.mkeys, chunks + 1);  // a direct one per chunk + the indirect one
    EXPECT_EQ(c.umems, base.umems + chunks);
    EXPECT_EQ(dev->last_timing(Op::Resume).commands, 4u);  // mkey inside the one MODIFY
}

TEST_F(DeviceCore, UnchangedMemoryTableKeepsItsRegistrationAcrossCloseAndConf) {
    open("cx7", 2);
    enable_all(4);
    ASSERT_TRUE(dev->configure(guest_in_ram(4)));
    uint32_t mkey = fw(0).attr.virtio_q_mkey;
    uint64_t creates = mkey_creates(emu_dev());
    const uint64_t mkeys = (1ull << 30) / mem_chunk_bytes(1ull << 30) + 1;  // direct per chunk + indirect
    EXPECT_EQ(creates, mkeys);
    for (int cycle = 0; cycle < 3; cycle++) {
        std::vector<RingIndexes> out;
        ASSERT_TRUE(dev->close(out));
        ASSERT_TRUE(dev->configure(guest_in_ram(4)));  // migration resume: same table
    }
    EXPECT_EQ(mkey_creates(emu_dev()), creates);
    EXPECT_EQ(emu_dev().object_counts().mkeys, mkeys);
    for (uint16_t i = 0; i < 4; i++) {
        EXPECT_EQ(fw(i).attr.virtio_q_mkey, mkey);
        EXPECT_EQ(fw(i).state, prm::VirtqState::RDY);
    }
}

TEST_F(DeviceCore, ChangedMemoryTableMovesEveryVirtqToTheNewMkeyAndFreesTheOld) {
    open("cx7", 2);
    auto base = emu_dev().object_counts();
    enable_all(4);
    ASSERT_TRUE(dev->configure(guest_in_ram(4)));
    uint32_t old_mkey = fw(0).attr.virtio_q_mkey;
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    dev->set_vring_state(3, false);  // stays SUSPENDed: re-pointed, not started
    // Two regions with a hole between them; ring 2 lives in the second one.
    auto g = guest_in_ram(4);
    g.mem = {{0, 512ull << 20, guest_ram()}, {768ull << 20, 256ull << 20, guest_ram() + (512ull << 20)}};
    g.vrings[2].desc_gpa = (768ull << 20) + 0x10000;
    g.vrings[2].avail_gpa = g.vrings[2].desc_gpa + 0x1000;
    g.vrings[2].used_gpa = g.vrings[2].desc_gpa + 0x2000;
    seed_rings(g);
    ASSERT_TRUE(dev->configure(g));
    uint32_t mkey = fw(0).attr.virtio_q_mkey;
    EXPECT_NE(mkey, old_mkey);
    for (uint16_t i = 0; i < 4; i++) EXPECT_EQ(fw(i).attr.virtio_q_mkey, mkey) << i;
    EXPECT_EQ(fw(3).state, prm::VirtqState::SUSPEND);
    EXPECT_EQ(dev->last_timing(Op::Resume).commands, 4u);  // 3 starts + 1 re-point, one batch
    EXPECT_EQ(host_of(emu_dev(), mkey, g.vrings[2].desc_gpa, 16),
              guest_ram() + (512ull << 20) + 0x10000);
    EXPECT_EQ(host_of(emu_dev(), mkey, 600ull << 20, 16), 0u);  // the hole
    // The old direct + indirect go after the start returned (DeferredRelease).
    const uint64_t chunk = mem_chunk_bytes(768ull << 20);
    const uint64_t chunks = (512ull << 20) / chunk + (256ull << 20) / chunk;
    EXPECT_TRUE(memory_objects_are(base.umems + chunks, chunks + 1));
}

// The null mkey, a device constant the holes of a table need, is asked for
// when the device opens: a destination's start, inside the migration's
// downtime, does not wait for it.
TEST_F(DeviceCore, TheNullMkeyIsAskedForAtOpenNotByTheStart) {
    open("cx7", 2);
    auto special_queries = [&] {
        auto c = emu_dev().counters().by_opcode;
        auto it = c.find(uint16_t(prm::Opcode::QUERY_SPECIAL_CONTEXTS));
        return it == c.end() ? 0 : it->second;
    };
    EXPECT_EQ(special_queries(), 1u);
    enable_all(4);
    auto g = guest_in_ram(4);
    g.mem = {{0, 512ull << 20, guest_ram()}, {768ull << 20, 256ull << 20, guest_ram() + (512ull << 20)}};
    ASSERT_TRUE(dev->configure(g));
    EXPECT_EQ(special_queries(), 1u);
    EXPECT_EQ(host_of(emu_dev(), fw(0).attr.virtio_q_mkey, 600ull << 20, 16), 0u);  // the hole
}

TEST_F(DeviceCore, CleanupUnregistersGuestMemoryAndConfRegistersAgain) {
    open("cx7", 2);
    auto base = emu_dev().object_counts();
    enable_all(4);
    ASSERT_TRUE(dev->configure(guest_in_ram(4)));
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    dev->cleanup();
    auto c = emu_dev().object_counts();
    EXPECT_EQ(c.mkeys, 0u);
    EXPECT_EQ(c.umems, base.umems);
    EXPECT_EQ(c.virtqs, base.virtqs);  // objects stay, SUSPENDed, naming no mkey
    for (uint16_t i = 0; i < 4; i++) {
        EXPECT_EQ(fw(i).state, prm::VirtqState::SUSPEND);
        EXPECT_EQ(fw(i).attr.virtio_q_mkey, 0u);
    }
    enable_all(4);
    ASSERT_TRUE(dev->configure(guest_in_ram(4)));
    EXPECT_EQ(emu_dev().object_counts().mkeys, (1ull << 30) / mem_chunk_bytes(1ull << 30) + 1);
    EXPECT_NE(fw(0).attr.virtio_q_mkey, 0u);
    EXPECT_EQ(fw(0).state, prm::VirtqState::RDY);
}

// The guest memory's commands are in the device's command statistics: the
// registration's creates from its batches, and the destroys its owner runs
// outside any batch once no virtq names the memory.
TEST_F(DeviceCore, GuestMemoryCreatesAndDestroysAreCounted) {
    using devx::CmdObject, devx::CmdVerb;
    open("cx7", 2);
    enable_all(4);
    ASSERT_TRUE(dev->configure(guest_in_ram(4)));
    auto count = [&](CmdVerb v, CmdObject o) {
        return dev->command_stats().latency[devx::CmdType{v, o}.index()].count;
    };
    const uint64_t mkeys = count(CmdVerb::Create, CmdObject::Mkey);
    const uint64_t umems = count(CmdVerb::Create, CmdObject::Umem);
    EXPECT_EQ(mkeys, emu_dev().object_counts().mkeys);
    EXPECT_GE(umems, (1ull << 30) / mem_chunk_bytes(1ull << 30));
    EXPECT_EQ(count(CmdVerb::Destroy, CmdObject::Mkey), 0u);
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    dev->cleanup();
    EXPECT_EQ(emu_dev().object_counts().mkeys, 0u);
    EXPECT_EQ(count(CmdVerb::Destroy, CmdObject::Mkey), mkeys);
    // The virtqs' own umems stay with their objects: the memory's went.
    EXPECT_EQ(count(CmdVerb::Destroy, CmdObject::Umem), (1ull << 30) / mem_chunk_bytes(1ull << 30));
    EXPECT_TRUE(dev->command_stats().fw_errors.empty());
}

}  // namespace
}  // namespace mlx5async::core
