// The fault matrix of a migration destination's start: its memory table is
// registered (a umem and a direct mkey per chunk, one indirect mkey) while
// its pre-created virtqs wait, and one registration command meets a
// firmware status, a late completion (executed late, or executed in time
// and answered late), a hang or EBUSY. Asserted: the start
// fails naming the step, no ring runs without its memory, nothing the
// failed table made is left on the device once every command is answered,
// and the same table then starts every ring. The old table's DESTROY_MKEY
// failing at a table replacement leaves the new table running and the
// device's objects accounted for.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "common/prm/status.hpp"
#include "core_fixture.hpp"
#include "vdpa/mlx5async/core/guest_memory.hpp"

namespace mlx5async::core {
namespace {

using testing_support::Fixture;
using testing_support::SparseGuest;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kTable = 64 * kMiB;  // 16 chunks of 4 MiB
constexpr uint16_t kRings = 4;

enum class Target { ChunkUmem, DirectMkey, IndirectMkey };
struct Fault {
    std::string rule;
    enum Kind { Status, Late, AnsweredLate, Hang, Busy } kind;
};

const char* target_name(Target t) {
    switch (t) {
    case Target::ChunkUmem: return "chunk_umem";
    case Target::DirectMkey: return "direct_mkey";
    case Target::IndirectMkey: return "indirect_mkey";
    }
    return "?";
}

std::vector<Fault> faults() {
    return {{"status=0x3 syndrome=0x5a5a", Fault::Status},
            {"status=0x10 syndrome=0x5a5a", Fault::Status},
            // 3x the batch's deadline: timeout_ms per wave of 16 commands
            // (Commands::memory_waves), 3 waves for 16 chunks' 33.
            {"delay_us=900000", Fault::Late},
            // Executed in time, answered after the deadline: what it made
            // names the table's objects while their destroy is due.
            {"answer_late_us=900000", Fault::AnsweredLate},
            {"hang", Fault::Hang},
            {"busy", Fault::Busy}};
}

using Param = std::tuple<Target, Fault>;

// A destination whose 64 MiB table waits to start its pre-created virtqs.
struct TableFixture : Fixture {
    SparseGuest ram{kTable};
    GuestConfig g;
    emu::ObjectCounts base;

    void SetUp() override {
        timeout_ms = 100;
        emu_extra = ",cmd_timeout_ms=500";
        start_attempts = 1;  // what one failed attempt leaves (fault_matrix_test: the retry)
        open("cx7", 2);  // the destination's virtqs exist before its start
        base = emu_dev().object_counts();
        g = guest(kRings, 20);
        g.mem = {{0, kTable, ram.base}};
        seed_rings(g);
        enable_all(kRings);
    }
    uint64_t chunks() const { return chunks_of(g.mem, false).size(); }
};

struct MemoryFaultMatrix : TableFixture, ::testing::WithParamInterface<Param> {
    std::string rule() const {
        const auto& [t, f] = GetParam();
        switch (t) {
        case Target::ChunkUmem: return "op=create_umem nth=3 " + f.rule;
        case Target::DirectMkey: return "op=create_mkey nth=3 " + f.rule;
        case Target::IndirectMkey: return "op=create_mkey nth=" + std::to_string(chunks() + 1) + " " + f.rule;
        }
        return {};
    }
};

TEST_P(MemoryFaultMatrix, TheStartFailsWholeLeavesNothingAndTheSameTableStartsAfter) {
    const auto& [target, fault] = GetParam();
    ASSERT_EQ(chunks(), 16u);
    ASSERT_TRUE(emu_fault(rule())) << rule();
    auto r = dev->configure(g);
    // A late command is one the start stopped waiting for (its deadline).
    ASSERT_FALSE(r) << rule();
    const std::string& what = r.error().what;
    const char* step = target == Target::ChunkUmem ? "umem registration"
                       : target == Target::DirectMkey ? "direct mkey" : "indirect mkey";
    EXPECT_NE(what.find(step), std::string::npos) << what;
    // No ring runs on a table the device does not hold whole.
    EXPECT_EQ(phases(kRings), std::vector<VqPhase>(kRings, VqPhase::Init));
    ASSERT_TRUE(emu_fault("clear"));
    ASSERT_TRUE(eventually([&] { return dev->command_health().unanswered == 0; }));
    // What the failed table made is gone, a late create included.
    EXPECT_TRUE(memory_objects_are(base.umems, base.mkeys));
    ASSERT_TRUE(dev->configure(g));
    EXPECT_EQ(phases(kRings), std::vector<VqPhase>(kRings, VqPhase::Ready));
    auto c = emu_dev().object_counts();
    EXPECT_EQ(c.umems, base.umems + chunks());
    EXPECT_EQ(c.mkeys, base.mkeys + chunks() + 1);
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    for (const auto& ri : out) {
        EXPECT_TRUE(ri.from_device) << "ring " << ri.ring;
        EXPECT_EQ(ri.last_avail_idx, 20 + ri.ring) << "ring " << ri.ring;
    }
    EXPECT_EQ(dev->command_health().unsure_virtqs, 0u);
}

std::vector<Param> params() {
    std::vector<Param> v;
    for (Target t : {Target::ChunkUmem, Target::DirectMkey, Target::IndirectMkey})
        for (const Fault& f : faults()) v.emplace_back(t, f);
    return v;
}

std::string param_name(const ::testing::TestParamInfo<Param>& i) {
    const auto& [t, f] = i.param;
    std::string n = std::string(target_name(t)) + "_";
    switch (f.kind) {
    case Fault::Status: n += "status" + f.rule.substr(9, f.rule.find(' ') - 9); break;
    case Fault::Late: n += "late"; break;
    case Fault::AnsweredLate: n += "answered_late"; break;
    case Fault::Hang: n += "hang"; break;
    case Fault::Busy: n += "busy"; break;
    }
    return n;
}

INSTANTIATE_TEST_SUITE_P(Matrix, MemoryFaultMatrix, ::testing::ValuesIn(params()), param_name);

// The indirect mkey fails and the device refuses one of the failed
// table's destroys: that direct mkey (and its umem) keeps its handle, and
// the next start's release destroys it.
using FailedTable = TableFixture;

TEST_F(FailedTable, ARefusedDestroyIsTriedAgainAtTheNextStart) {
    ASSERT_TRUE(emu_fault("op=create_mkey nth=" + std::to_string(chunks() + 1) + " status=0x3"));
    ASSERT_TRUE(emu_fault("op=destroy_mkey nth=1 status=0x3"));
    auto r = dev->configure(g);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().what.find("indirect mkey"), std::string::npos) << r.error().what;
    auto c = emu_dev().object_counts();
    EXPECT_EQ(c.mkeys, base.mkeys + 1);  // the direct mkey refused, its umem with it
    EXPECT_EQ(c.umems, base.umems + 1);
    ASSERT_TRUE(emu_fault("clear"));
    ASSERT_TRUE(dev->configure(g));
    EXPECT_EQ(phases(kRings), std::vector<VqPhase>(kRings, VqPhase::Ready));
    EXPECT_TRUE(memory_objects_are(base.umems + chunks(), base.mkeys + chunks() + 1));
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
}

// The old table's mkeys are destroyed after a new table's start returned;
// one DESTROY_MKEY fails (or hangs): the new table runs, the failure is
// the release's, and the cleanup after still releases every object.
struct ReleaseFault : Fixture, ::testing::WithParamInterface<std::string> {};

TEST_P(ReleaseFault, AFailedDestroyOfTheOldTableLeavesTheNewOneRunning) {
    timeout_ms = 100;
    emu_extra = ",cmd_timeout_ms=500";
    open("cx7", 2);
    const auto base = emu_dev().object_counts();
    SparseGuest a(kTable), b(kTable);
    GuestConfig g = guest(kRings, 20);
    g.mem = {{0, kTable, a.base}};
    seed_rings(g);
    enable_all(kRings);
    ASSERT_TRUE(dev->configure(g));
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    ASSERT_TRUE(emu_fault("op=destroy_mkey nth=1 " + GetParam()));
    g.mem = {{0, kTable, b.base}};  // the guest's memory moved: a new table
    seed_rings(g);
    ASSERT_TRUE(dev->configure(g));
    EXPECT_EQ(phases(kRings), std::vector<VqPhase>(kRings, VqPhase::Ready));
    ASSERT_TRUE(emu_fault("clear"));
    ASSERT_TRUE(eventually([&] { return dev->command_health().unanswered == 0; }));
    ASSERT_TRUE(dev->close(out));
    dev->cleanup();
    EXPECT_TRUE(memory_objects_are(base.umems, base.mkeys));
}

INSTANTIATE_TEST_SUITE_P(Matrix, ReleaseFault, ::testing::Values("status=0x3", "hang", "busy"),
                         [](const auto& i) { return i.param == "status=0x3" ? std::string("status") : i.param; });

}  // namespace
}  // namespace mlx5async::core
