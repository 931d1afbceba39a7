// Command latency histograms and firmware error counts: the buckets and
// quantiles, the capped error keys, the classification of the commands the
// driver builds, and what the engine records of a batch (over FakeDevx).
#include "common/devx/command_stats.hpp"

#include <gtest/gtest.h>

#include <future>
#include <numeric>

#include "common/devx/engine.hpp"
#include "common/prm/opcodes.hpp"
#include "testkit/fake_devx_api.hpp"
#include "tests/unit/devx/fake_engine_names.hpp"

namespace mlx5async::devx {
namespace {

using namespace fake_engine;

constexpr CmdType kModifyVirtq{CmdVerb::Modify, CmdObject::Virtq};
constexpr CmdType kQueryVirtq{CmdVerb::Query, CmdObject::Virtq};

TEST(LatencyHistogram, BucketsArePowersOfTwoOfNanoseconds) {
    EXPECT_EQ(LatencyHistogram::bucket_of(0), 0u);
    EXPECT_EQ(LatencyHistogram::bucket_of(1), 0u);
    EXPECT_EQ(LatencyHistogram::bucket_of(2), 1u);
    EXPECT_EQ(LatencyHistogram::bucket_of(3), 1u);
    EXPECT_EQ(LatencyHistogram::bucket_of(1023), 9u);
    EXPECT_EQ(LatencyHistogram::bucket_of(1024), 10u);
    EXPECT_EQ(LatencyHistogram::bucket_of(~uint64_t(0)), LatencyHistogram::kBuckets - 1);
}

TEST(LatencyHistogram, QuantilesAreBucketBoundsCappedAtTheMax) {
    LatencyHistogram h;
    EXPECT_EQ(h.quantile_ns(0.5), 0u);  // empty
    for (int i = 0; i < 98; ++i) h.record(1000);  // bucket 9: [512, 1024)
    h.record(300'000);                            // bucket 18: [262144, 524288)
    h.record(700'000);                            // bucket 19
    EXPECT_EQ(h.count, 100u);
    EXPECT_EQ(h.sum_ns, 98u * 1000 + 300'000 + 700'000);
    EXPECT_EQ(h.max_ns, 700'000u);
    EXPECT_EQ(h.quantile_ns(0.5), 1023u);
    EXPECT_EQ(h.quantile_ns(0.98), 1023u);
    EXPECT_EQ(h.quantile_ns(0.99), 524'287u);
    EXPECT_EQ(h.quantile_ns(1.0), 700'000u);  // its bucket reaches past the max
    EXPECT_EQ(std::accumulate(h.buckets.begin(), h.buckets.end(), uint64_t(0)), h.count);
    LatencyHistogram g;
    g.record(5);
    g.timed_out = 2;
    h.merge(g);
    EXPECT_EQ(h.count, 101u);
    EXPECT_EQ(h.buckets[2], 1u);
    EXPECT_EQ(h.timed_out, 2u);
    EXPECT_EQ(h.max_ns, 700'000u);
}

TEST(CommandStats, ErrorKeysAreCappedAndTheRestCounted) {
    CommandStats s;
    for (uint32_t syn = 0; syn < CommandStats::kMaxErrorKeys + 10; ++syn)
        s.count_error(kModifyVirtq, 0x9, syn, 1);
    s.count_error(kModifyVirtq, 0x9, 3, 4);  // a kept key counts on
    EXPECT_EQ(s.fw_errors.size(), CommandStats::kMaxErrorKeys);
    EXPECT_EQ(s.fw_errors_unkeyed, 10u);
    EXPECT_EQ(s.fw_errors[3].count, 5u);
    CommandStats t;
    t.count_error(kQueryVirtq, 0x3, 7, 2);
    t.merge(s);
    EXPECT_EQ(t.fw_errors.front().type, kQueryVirtq);
    EXPECT_EQ(t.fw_errors.size(), CommandStats::kMaxErrorKeys);  // still capped
    EXPECT_EQ(t.fw_errors_unkeyed, 11u);
}

TEST(CallStats, TimedCallsAreRecordedWithTheirErrno) {
    CallStats calls;
    constexpr CmdType kDestroyMkey{CmdVerb::Destroy, CmdObject::Mkey};
    EXPECT_EQ(timed_call(&calls, kDestroyMkey, [] { return 0; }), 0);
    EXPECT_EQ(timed_call(&calls, kDestroyMkey, [] { return EBUSY; }), EBUSY);
    EXPECT_EQ(timed_call(nullptr, kDestroyMkey, [] { return EIO; }), EIO);  // not recorded
    const CommandStats s = calls.snapshot();
    EXPECT_EQ(s.latency[kDestroyMkey.index()].count, 2u);
    ASSERT_EQ(s.fw_errors.size(), 1u);
    EXPECT_EQ(s.fw_errors[0].status, 0u);
    EXPECT_EQ(s.fw_errors[0].syndrome, uint32_t(EBUSY));
}

TEST(CommandStats, TypesAreNamedAndRoundTrip) {
    for (size_t i = 0; i < kCmdTypes; ++i) EXPECT_EQ(CmdType::at(i).index(), i);
    EXPECT_EQ(cmd_type_name(kModifyVirtq), "modify_virtq");
    EXPECT_EQ(cmd_type_name({CmdVerb::Create, CmdObject::Umem}), "create_umem");
    const auto op = [](prm::Opcode o) { return uint16_t(o); };
    EXPECT_EQ(classify_command(CmdVerb::Create, op(prm::Opcode::CREATE_MKEY), 0),
              (CmdType{CmdVerb::Create, CmdObject::Mkey}));
    EXPECT_EQ(classify_command(CmdVerb::Modify, op(prm::Opcode::RST2INIT_QP), 0),
              (CmdType{CmdVerb::Modify, CmdObject::Qp}));
    EXPECT_EQ(classify_command(CmdVerb::Create, op(prm::Opcode::CREATE_GENERAL_OBJECT),
                               uint16_t(prm::ObjType::VIRTIO_Q_COUNTERS)),
              (CmdType{CmdVerb::Create, CmdObject::Counters}));
    EXPECT_EQ(classify_command(CmdVerb::General, op(prm::Opcode::QUERY_SPECIAL_CONTEXTS), 0),
              (CmdType{CmdVerb::General, CmdObject::Other}));
}

TEST(CommandStats, TheDriversCommandsCarryTheirType) {
    FakeDevx fake;
    DevxObj vq = fake.make_obj();
    EXPECT_EQ(Command::query_virtq(vq, 0).type, kQueryVirtq);
    EXPECT_EQ(Command::modify_virtq_state(vq, prm::VirtqState::SUSPEND, 0).type, kModifyVirtq);
    auto ctx = Context::open(FakeDevx::api(), "fake0");
    ASSERT_TRUE(ctx);
    int dummy = 0;
    EXPECT_EQ(Command::reg_umem(*ctx, &dummy, sizeof dummy).type,
              (CmdType{CmdVerb::Create, CmdObject::Umem}));
}

class EngineCommandStats : public ::testing::Test {
protected:
    void SetUp() override {
        for (int i = 0; i < 4; ++i) vqs_.push_back(fake_.make_obj(VirtqState::RDY));
    }
    void TearDown() override {
        fake_.release_all();
        if (eng_) eng_->shutdown();
    }
    Engine& engine(EngineOptions opt = {}) {
        auto e = Engine::create(FakeDevx::api(), fake_.ctx(), std::move(opt));
        EXPECT_TRUE(e) << to_string(e.error());
        eng_ = std::move(*e);
        return *eng_;
    }
    Batch suspend_all() {
        Batch b;
        for (size_t q = 0; q < vqs_.size(); ++q) b.add_suspend(vqs_[q], int(q));
        return b;
    }
    FakeDevx fake_;
    std::vector<DevxObj> vqs_;
    std::unique_ptr<Engine> eng_;
};

TEST_F(EngineCommandStats, EveryCompletedStepIsInItsTypesHistogram) {
    for (Strategy s : {Strategy::Async, Strategy::Sequential, Strategy::Threads}) {
        Engine& eng = engine({.strategy = s});
        ASSERT_TRUE(eng.run(suspend_all(), kGenerous).ok());
        const CommandStats st = eng.command_stats();
        EXPECT_EQ(st.latency[kModifyVirtq.index()].count, 4u) << strategy_name(s);
        EXPECT_EQ(st.latency[kQueryVirtq.index()].count, 4u) << strategy_name(s);
        uint64_t all = 0;
        for (const LatencyHistogram& h : st.latency) all += h.count;
        EXPECT_EQ(all, 8u);
        EXPECT_TRUE(st.fw_errors.empty());
        eng_->shutdown();
    }
}

TEST_F(EngineCommandStats, RefusalsAreCountedByStatusAndSyndromeAndCallErrno) {
    const uint32_t bad = vqs_[1].obj_id(), dead = vqs_[2].obj_id();
    fake_.set_script([bad, dead](const FakeCall& c) {
        FakeReply r;
        if (c.op == FakeOp::Modify && c.obj_id == bad) {
            r.status = 0x9;
            r.syndrome = 0x1234;
        }
        if (c.op == FakeOp::Modify && c.obj_id == dead) r.call_errno = EIO;
        return r;
    });
    Engine& eng = engine();
    BatchResult r = eng.run(suspend_all(), kGenerous);
    EXPECT_EQ(r.failed, 2u);
    const CommandStats st = eng.command_stats();
    ASSERT_EQ(st.fw_errors.size(), 2u);
    bool fw = false, sys = false;
    for (const FwErrorCount& e : st.fw_errors) {
        EXPECT_EQ(e.type, kModifyVirtq);
        EXPECT_EQ(e.count, 1u);
        fw |= e.status == 0x9 && e.syndrome == 0x1234;
        sys |= e.status == 0 && e.syndrome == uint32_t(EIO);
    }
    EXPECT_TRUE(fw && sys);
    // The failed MODIFYs completed (they have a latency); their QUERYs never ran.
    EXPECT_EQ(st.latency[kModifyVirtq.index()].count, 4u);
    EXPECT_EQ(st.latency[kQueryVirtq.index()].count, 2u);
}

TEST_F(EngineCommandStats, ATimedOutCommandIsCountedWithoutALatency) {
    const uint32_t slow = vqs_[0].obj_id();
    fake_.set_script([slow](const FakeCall& c) {
        FakeReply r;
        r.hold = c.op == FakeOp::Modify && c.obj_id == slow;
        return r;
    });
    Engine& eng = engine();
    BatchResult r = eng.run(suspend_all(), 2s);  // the others answer at once
    EXPECT_EQ(r.timed_out, 1u);
    fake_.release_all();
    ASSERT_TRUE(eng.drain(std::chrono::steady_clock::now() + kGenerous));
    const CommandStats st = eng.command_stats();
    const LatencyHistogram& m = st.latency[kModifyVirtq.index()];
    EXPECT_EQ(m.timed_out, 1u);
    EXPECT_EQ(m.count, 3u);  // the late answer is not in it
}

TEST_F(EngineCommandStats, OffRecordsNothing) {
    Engine& eng = engine({.command_stats = false});
    ASSERT_TRUE(eng.run(suspend_all(), kGenerous).ok());
    const CommandStats st = eng.command_stats();
    for (const LatencyHistogram& h : st.latency) EXPECT_EQ(h.count, 0u);
}

}  // namespace
}  // namespace mlx5async::devx
