// The fault matrix: for each multi-queue operation (suspend, resume,
// dev_conf, dev_close), one command of its batch (virtq 2's MODIFY, or its
// QUERY for the suspends) meets each firmware status, a late completion, a
// hang or EBUSY, once. Asserted: the operation's result (dev_close and
// dev_conf recover: a second round, another attempt), that every other
// virtq's driver view equals the device (state and indexes), that virtq 2
// is either known exactly or reported unsure (never wrong), that no ring's
// indexes are lost, and that a clean dev_close / dev_conf / dev_close cycle
// afterwards brings every virtq back with its indexes.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "common/prm/status.hpp"
#include "core_fixture.hpp"

namespace mlx5async::core {
namespace {

using testing_support::Fixture;
using prm::VirtqState;

enum class Op { Suspend, Resume, Conf, Close };
enum class Step { Modify, Query };
struct Fault {
    std::string rule;  // the fault rule's action words
    enum Kind { Status, Late, Hang, Busy } kind;
};

constexpr uint16_t kRings = 4, kHit = 2, kBase = 20;  // ring r starts at indexes kBase + r

const char* op_name(Op o) {
    switch (o) {
    case Op::Suspend: return "suspend";
    case Op::Resume: return "resume";
    case Op::Conf: return "conf";
    case Op::Close: return "close";
    }
    return "?";
}

std::vector<Fault> faults() {
    std::vector<Fault> v;
    for (uint8_t s : {0x1, 0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0x8, 0x9, 0xa, 0xf, 0x10, 0x30, 0x40, 0x50, 0x51})
        v.push_back({"status=" + std::to_string(s) + " syndrome=0x5a5a", Fault::Status});
    v.push_back({"delay_us=300000", Fault::Late});  // 3x timeout_ms
    v.push_back({"hang", Fault::Hang});
    v.push_back({"busy", Fault::Busy});
    return v;
}

using Param = std::tuple<Op, Step, Fault>;

struct FaultMatrix : Fixture, ::testing::WithParamInterface<Param> {
    GuestConfig g;

    void SetUp() override {
        timeout_ms = 100;
        emu_extra = ",cmd_timeout_ms=500";
        open("cx7", 2);
        g = guest(kRings, kBase);
        enable_all(kRings);
        ASSERT_TRUE(dev->configure(g));  // every virtq RDY at kBase + r
        if (op() == Op::Resume || op() == Op::Conf) {
            std::vector<RingIndexes> out;
            ASSERT_TRUE(dev->close(out));  // every virtq SUSPEND
        }
    }
    Op op() const { return std::get<0>(GetParam()); }
    Step step() const { return std::get<1>(GetParam()); }
    const Fault& fault() const { return std::get<2>(GetParam()); }

    Result<void> run(std::vector<RingIndexes>& out) {
        switch (op()) {
        case Op::Suspend: return dev->suspend_all();
        case Op::Resume: return dev->resume_all();
        case Op::Conf: return dev->configure(g);
        case Op::Close: return dev->close(out);
        }
        return {};
    }
    static VqPhase phase_of(VirtqState s) {
        switch (s) {
        case VirtqState::INIT: return VqPhase::Init;
        case VirtqState::RDY: return VqPhase::Ready;
        case VirtqState::SUSPEND: return VqPhase::Suspended;
        case VirtqState::ERR: return VqPhase::Error;
        }
        return VqPhase::Absent;
    }
    // The driver's view of ring r agrees with the device: phase and, for a
    // stopped virtq, the indexes it reports.
    void expect_agrees(uint16_t r) {
        auto v = dev->vq_info()[r];
        auto f = fw(r);
        EXPECT_FALSE(v.unsure) << "ring " << r;
        EXPECT_EQ(v.phase, phase_of(f.state)) << "ring " << r;
        EXPECT_EQ(v.hw_available_index, f.attr.hw_available_index) << "ring " << r;
        EXPECT_EQ(v.hw_used_index, f.attr.hw_used_index) << "ring " << r;
    }
};

TEST_P(FaultMatrix, ResultStatesIndexesAndACleanCycle) {
    const VirtqState before = fw(kHit).state;
    const VirtqState target = op() == Op::Suspend || op() == Op::Close ? VirtqState::SUSPEND
                                                                       : VirtqState::RDY;
    const char* opword = step() == Step::Modify ? "modify" : "query";
    ASSERT_TRUE(emu_fault(std::string("op=") + opword + " vq=" + std::to_string(kHit) +
                               " nth=1 " + fault().rule));
    std::vector<RingIndexes> out;
    auto r = run(out);

    // The operation's result. EBUSY is requeued; a stop gives the rings the
    // first suspend did not stop for certain a second round, and a start
    // tries again: both recover from a fault the firmware does not repeat.
    const bool retried = (fault().kind == Fault::Busy && step() == Step::Query) ||
                         op() == Op::Close || op() == Op::Conf;
    if (retried) {
        ASSERT_TRUE(r) << to_string(r.error());
    } else {
        ASSERT_FALSE(r);
        const std::string what = prm::describe(r.error());
        EXPECT_NE(what.find("queue 2"), std::string::npos) << what;
        if (fault().kind == Fault::Status) {
            EXPECT_EQ(r.error().code, Errc::Firmware) << what;
        }
        if (fault().kind == Fault::Late || fault().kind == Fault::Hang) {
            EXPECT_EQ(r.error().code, Errc::Timeout) << what;
        }
    }
    // Every other virtq: done, and the driver agrees with the device.
    for (uint16_t i = 0; i < kRings; i++) {
        if (i == kHit) continue;
        EXPECT_EQ(fw(i).state, target) << "ring " << i;
        expect_agrees(i);
    }
    // Virtq 2: a refused MODIFY changed nothing (unless retried); otherwise
    // the driver either knows its state or says it does not. Retried, it is
    // where the operation takes every virtq, and known.
    auto v = dev->vq_info()[kHit];
    if (retried) {
        EXPECT_EQ(fw(kHit).state, target);
        expect_agrees(kHit);
    } else if (step() == Step::Modify && (fault().kind == Fault::Status || fault().kind == Fault::Busy)) {
        EXPECT_EQ(fw(kHit).state, before);
    }
    if (!v.unsure) expect_agrees(kHit);
    if (op() == Op::Close) {
        ASSERT_EQ(out.size(), size_t(kRings));
        for (const auto& ri : out) {  // every ring's indexes, none lost
            EXPECT_EQ(ri.last_avail_idx, kBase + ri.ring) << "ring " << ri.ring;
            EXPECT_EQ(ri.last_used_idx, kBase + ri.ring) << "ring " << ri.ring;
            EXPECT_TRUE(ri.from_device) << "ring " << ri.ring;
        }
    }

    // A clean cycle once the device answered everything (a hung command at
    // the kernel's command timeout; a late one lands).
    ASSERT_TRUE(emu_fault("clear"));
    ASSERT_TRUE(eventually([&] { return dev->command_health().unanswered == 0; }));
    if (fault().kind == Fault::Late && step() == Step::Modify) {
        EXPECT_EQ(fw(kHit).state, target);
    }
    ASSERT_TRUE(dev->close(out)) << op_name(op());
    for (const auto& ri : out) {
        EXPECT_TRUE(ri.from_device) << "ring " << ri.ring;
        EXPECT_EQ(ri.last_avail_idx, kBase + ri.ring) << "ring " << ri.ring;
        EXPECT_EQ(ri.last_used_idx, kBase + ri.ring) << "ring " << ri.ring;
    }
    ASSERT_TRUE(dev->configure(g));
    for (uint16_t i = 0; i < kRings; i++) {
        EXPECT_EQ(fw(i).state, VirtqState::RDY) << "ring " << i;
        expect_agrees(i);
    }
    ASSERT_TRUE(dev->close(out));
    for (uint16_t i = 0; i < kRings; i++) expect_agrees(i);
    EXPECT_EQ(dev->command_health().unsure_virtqs, 0u);
}

std::vector<Param> params() {
    std::vector<Param> v;
    for (Op o : {Op::Suspend, Op::Resume, Op::Conf, Op::Close})
        for (Step s : {Step::Modify, Step::Query}) {
            if (s == Step::Query && (o == Op::Resume || o == Op::Conf)) continue;  // MODIFY only
            for (const Fault& f : faults()) v.emplace_back(o, s, f);
        }
    return v;
}

std::string param_name(const ::testing::TestParamInfo<Param>& i) {
    const auto& [o, s, f] = i.param;
    std::string n = std::string(op_name(o)) + (s == Step::Modify ? "_modify_" : "_query_");
    switch (f.kind) {
    case Fault::Status: n += "status" + f.rule.substr(7, f.rule.find(' ') - 7); break;
    case Fault::Late: n += "late"; break;
    case Fault::Hang: n += "hang"; break;
    case Fault::Busy: n += "busy"; break;
    }
    return n;
}

INSTANTIATE_TEST_SUITE_P(Matrix, FaultMatrix, ::testing::ValuesIn(params()), param_name);

}  // namespace
}  // namespace mlx5async::core
