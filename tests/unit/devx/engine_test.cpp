// Engine over the scripted FakeDevx: result routing, chains, failures, EBUSY,
// timeouts and late completions. Properties only; deadlines are generous
// except where a timeout is the point (then nothing else depends on time).
#include "common/devx/engine.hpp"

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "common/base/log_sink.hpp"
#include "common/prm/opcodes.hpp"
#include "testkit/fake_devx_api.hpp"
#include "tests/unit/devx/fake_engine_names.hpp"

namespace mlx5async::devx {
namespace {

using namespace fake_engine;

class EngineBatch : public ::testing::Test {
protected:
    void SetUp() override { make_objs(8); }
    void TearDown() override {
        fake_.release_all();  // nothing stays blocked in a worker
        if (eng_) eng_->shutdown();
        set_log_sink(nullptr);
    }
    void make_objs(int n) {
        for (int i = 0; i < n; ++i) vqs_.push_back(fake_.make_obj(VirtqState::RDY));
    }
    Engine& engine(EngineOptions opt = {}) {
        auto e = Engine::create(FakeDevx::api(), fake_.ctx(), std::move(opt));
        EXPECT_TRUE(e) << to_string(e.error());
        eng_ = std::move(*e);
        return *eng_;
    }
    Batch suspend_all() {
        Batch b;
        for (size_t q = 0; q < vqs_.size(); ++q) b.add_suspend(vqs_[q], static_cast<int>(q));
        return b;
    }
    uint32_t id(size_t q) const { return vqs_[q].obj_id(); }
    // A suspend batch whose MODIFYs all block until `limit` are outstanding
    // at once (checked), then are released together.
    BatchResult run_holding_modifies(Engine& eng, unsigned limit) {
        fake_.set_script([](const FakeCall& c) {
            FakeReply r;
            r.hold = c.op == FakeOp::Modify;
            return r;
        });
        auto fut = std::async(std::launch::async, [&] { return eng.run(suspend_all(), kGenerous); });
        EXPECT_TRUE(fake_.wait_held(limit, kGenerous));
        EXPECT_EQ(fake_.in_flight(), limit);
        fake_.set_script(nullptr);
        fake_.release_all();
        return fut.get();
    }

    FakeDevx fake_;  // first: outlives the objects and the engine
    std::vector<DevxObj> vqs_;
    std::unique_ptr<Engine> eng_;
};

TEST_F(EngineBatch, ResultsGoToTheRightCommand) {
    BatchResult r = engine().run(suspend_all(), kGenerous);
    ASSERT_EQ(r.entries.size(), vqs_.size());
    EXPECT_TRUE(r.ok());
    for (size_t q = 0; q < vqs_.size(); ++q) {
        const auto& e = r.entries[q];
        ASSERT_EQ(e.steps.size(), 2u);
        EXPECT_EQ(e.queue, int(q));
        EXPECT_EQ(e.steps[0].opcode, uint16_t(prm::Opcode::MODIFY_GENERAL_OBJECT));
        EXPECT_EQ(e.steps[1].opcode, uint16_t(prm::Opcode::QUERY_GENERAL_OBJECT));
        EXPECT_EQ(e.steps[1].obj_id, id(q));
        ASSERT_TRUE(e.steps[1].virtq);
        EXPECT_EQ(e.steps[1].virtq->state, VirtqState::SUSPEND);
        EXPECT_EQ(e.steps[1].virtq->hw_available_index, uint16_t(1000 + id(q)));
        EXPECT_EQ(e.steps[1].virtq->hw_used_index, uint16_t(2000 + id(q)));
        EXPECT_EQ(fake_.state_of(id(q)), VirtqState::SUSPEND);
    }
    EXPECT_EQ(r.done, 2 * vqs_.size());
    EXPECT_EQ(fake_.async_issued(), vqs_.size());  // queries went the async way
}

TEST_F(EngineBatch, ChainQueryNeverIssuedBeforeItsModifyCompleted) {
    engine().run(suspend_all(), kGenerous);
    auto tr = fake_.trace();
    for (size_t q = 0; q < vqs_.size(); ++q) {
        long modify_done = -1, query_issue = -1;
        for (size_t i = 0; i < tr.size(); ++i) {
            if (tr[i].obj_id != id(q)) continue;
            if (tr[i].kind == FakeEvent::Complete && tr[i].op == FakeOp::Modify) modify_done = long(i);
            if (tr[i].kind == FakeEvent::Issue && tr[i].op == FakeOp::QueryAsync) query_issue = long(i);
        }
        ASSERT_GE(modify_done, 0) << "queue " << q;
        EXPECT_GT(query_issue, modify_done) << "queue " << q;
    }
}

TEST_F(EngineBatch, OneFailingStepLeavesOthersIntact) {
    const uint32_t bad = id(3);
    fake_.set_script([bad](const FakeCall& c) {
        FakeReply r;
        if (c.op == FakeOp::Modify && c.obj_id == bad) {
            r.status = 0x9;  // BAD_RES_STATE_ERR
            r.syndrome = 0x1234;
        }
        return r;
    });
    std::vector<std::string> lines;
    set_log_sink([&](LogLevel, std::string_view l) { lines.emplace_back(l); });
    BatchResult r = engine().run(suspend_all(), kGenerous);
    for (size_t q = 0; q < vqs_.size(); ++q) {
        if (q == 3) continue;
        EXPECT_TRUE(r.entries[q].ok()) << "queue " << q;
        EXPECT_EQ(r.entries[q].steps[1].virtq->state, VirtqState::SUSPEND);
    }
    const auto& f = r.entries[3].steps;
    EXPECT_EQ(f[0].state, StepState::Failed);
    EXPECT_EQ(f[0].status, 0x9);
    EXPECT_STREQ(f[0].status_name, "BAD_RES_STATE_ERR");
    EXPECT_EQ(f[0].syndrome, 0x1234u);
    EXPECT_EQ(f[0].queue, 3);
    EXPECT_EQ(f[1].state, StepState::Cancelled);
    EXPECT_EQ(r.failed, 1u);
    EXPECT_EQ(r.cancelled, 1u);
    // Logged once, with the queue and the status name.
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("BAD_RES_STATE_ERR"), std::string::npos) << lines[0];
    EXPECT_NE(lines[0].find("queue 3"), std::string::npos) << lines[0];
}

TEST_F(EngineBatch, SystemErrorIsReportedWithItsErrno) {
    const uint32_t bad = id(5);
    fake_.set_script([bad](const FakeCall& c) {
        FakeReply r;
        if (c.op == FakeOp::QueryAsync && c.obj_id == bad) r.call_errno = EINVAL;
        return r;
    });
    set_log_sink([](LogLevel, std::string_view) {});
    BatchResult r = engine().run(suspend_all(), kGenerous);
    EXPECT_EQ(r.entries[5].steps[0].state, StepState::Done);
    EXPECT_EQ(r.entries[5].steps[1].state, StepState::Failed);
    EXPECT_EQ(r.entries[5].steps[1].sys_errno, EINVAL);
    EXPECT_EQ(r.failed, 1u);
    EXPECT_EQ(r.done, 2 * vqs_.size() - 1);
}

TEST_F(EngineBatch, EbusyStormIsSurvived) {
    make_objs(24);  // 32 queues
    fake_.busy_next_async(200);
    BatchResult r = engine().run(suspend_all(), kGenerous);
    EXPECT_TRUE(r.ok());
    unsigned retries = 0;
    for (size_t q = 0; q < vqs_.size(); ++q) {
        retries += r.entries[q].steps[1].busy_retries;
        EXPECT_EQ(r.entries[q].steps[1].virtq->hw_used_index, uint16_t(2000 + id(q)));
    }
    EXPECT_GT(retries, 0u);
    EXPECT_EQ(eng_->stats().busy_retries, retries);
    EXPECT_LE(r.peak_inflight, 16u);
}

TEST_F(EngineBatch, EbusyWithNothingInFlightRunsBlocking) {
    vqs_.resize(1);
    fake_.busy_next_async(1);
    BatchResult r = engine().run(suspend_all(), kGenerous);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(eng_->stats().blocking_fallbacks, 1u);
    EXPECT_EQ(r.entries[0].steps[1].virtq->state, VirtqState::SUSPEND);
}

TEST_F(EngineBatch, PeakInFlightReachesButNeverExceedsLimit) {
    make_objs(24);
    const unsigned kLimit = 4;
    Engine& eng = engine({.max_inflight = kLimit});
    BatchResult r = run_holding_modifies(eng, kLimit);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.peak_inflight, kLimit);
    EXPECT_EQ(fake_.peak_in_flight(), kLimit);
    EXPECT_EQ(eng.throttle().in_flight(), 0u);
}

TEST_F(EngineBatch, PeakReachesLimitAfterFastBatchesToo) {
    make_objs(24);
    const unsigned kLimit = 4;
    Engine& eng = engine({.max_inflight = kLimit, .fast_command_ns = kFakeAnswersFast});
    // Instant commands: the engine learns they are fast and wakes few workers.
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(eng.run(suspend_all(), kGenerous).ok());
    for (auto& v : vqs_) v = fake_.make_obj(VirtqState::RDY);
    // Now every modify blocks: the pool must still grow to kLimit commands.
    BatchResult r = run_holding_modifies(eng, kLimit);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.peak_inflight, kLimit);
    EXPECT_EQ(eng.throttle().in_flight(), 0u);
}

TEST_F(EngineBatch, EveryStrategyGivesTheSameResults) {
    for (Strategy s : {Strategy::Async, Strategy::Sequential, Strategy::Threads}) {
        for (auto& v : vqs_) v = fake_.make_obj(VirtqState::RDY);
        BatchResult r = engine({.strategy = s, .max_inflight = 4}).run(suspend_all(), kGenerous);
        EXPECT_TRUE(r.ok()) << strategy_name(s);
        for (size_t q = 0; q < vqs_.size(); ++q) {
            ASSERT_TRUE(r.entries[q].steps[1].virtq) << strategy_name(s);
            EXPECT_EQ(r.entries[q].steps[1].virtq->state, VirtqState::SUSPEND);
            EXPECT_EQ(r.entries[q].steps[1].virtq->hw_available_index, uint16_t(1000 + id(q)));
        }
        if (s == Strategy::Sequential) {
            EXPECT_EQ(r.peak_inflight, 1u);
        }
        EXPECT_LE(r.peak_inflight, 4u);
        eng_->shutdown();
    }
}

TEST_F(EngineBatch, CreateReturnsTheObjectAndDestroyTakesIt) {
    Engine& eng = engine();
    std::vector<std::byte> in(prm::kGeneralObjInHdrBytes);
    prm::write_general_obj_in({.opcode = uint16_t(prm::Opcode::CREATE_GENERAL_OBJECT),
                               .obj_type = uint16_t(prm::ObjType::VIRTIO_Q_COUNTERS)},
                              in);
    Batch b;
    Context ctx(&FakeDevx::api(), fake_.ctx());  // closed (no-op) at scope end
    b.add(Command::create_obj(ctx, in, prm::kGeneralObjOutHdrBytes, 7));
    unsigned before = fake_.live_objects();
    BatchResult r = eng.run(std::move(b), kGenerous);
    ASSERT_TRUE(r.ok());
    DevxObj created = std::move(r.entries[0].steps[0].obj);
    ASSERT_TRUE(created);
    EXPECT_NE(created.obj_id(), 0u);
    EXPECT_EQ(created.obj_type(), uint16_t(prm::ObjType::VIRTIO_Q_COUNTERS));
    EXPECT_EQ(fake_.live_objects(), before + 1);

    Batch d;
    d.add(Command::destroy(std::move(created), 7));
    r = eng.run(std::move(d), kGenerous);
    EXPECT_TRUE(r.ok());
    EXPECT_FALSE(r.entries[0].steps[0].obj);
    EXPECT_EQ(fake_.live_objects(), before);
}

// A chain umem -> CREATE -> CREATE -> MODIFY whose steps name what earlier
// steps made, in every strategy: the umem's id (the fake's 0x77) and the
// first CREATE's object id reach the inputs, masked to their fields, and
// the MODIFY addresses the second CREATE's object.
TEST_F(EngineBatch, StepsTakeWhatEarlierStepsOfTheirChainMade) {
    constexpr prm::Field kWide{"test.id", 0x80, 32}, kLowByte{"test.id_7_0", 0xa0, 8};
    std::mutex mu;
    std::vector<std::vector<std::byte>> creates;  // inputs, in issue order
    std::vector<uint32_t> modified;               // objects
    fake_.set_script([&](const FakeCall& c) {
        std::lock_guard lk(mu);
        if (c.op == FakeOp::Create) creates.push_back(c.in);
        if (c.op == FakeOp::Modify) modified.push_back(c.obj_id);
        return FakeReply{};
    });
    auto counters_in = [] {
        std::vector<std::byte> in(prm::kGeneralObjInHdrBytes + 8);
        prm::write_general_obj_in({.opcode = uint16_t(prm::Opcode::CREATE_GENERAL_OBJECT),
                                   .obj_type = uint16_t(prm::ObjType::VIRTIO_Q_COUNTERS)},
                                  in);
        return in;
    };
    Context ctx(&FakeDevx::api(), fake_.ctx());  // closed (no-op) at scope end
    std::vector<std::byte> host(4096);
    for (Strategy s : {Strategy::Async, Strategy::Sequential, Strategy::Threads}) {
        creates.clear();
        modified.clear();
        Entry e;
        e.steps.push_back(Command::reg_umem(ctx, host.data(), host.size()));
        e.steps.push_back(Command::create_obj(ctx, counters_in(), prm::kGeneralObjOutHdrBytes));
        e.steps.back().ids_from = {{kWide, 0}, {kLowByte, 0}};
        e.steps.push_back(Command::create_obj(ctx, counters_in(), prm::kGeneralObjOutHdrBytes));
        e.steps.back().ids_from = {{kWide, 1}, {kLowByte, 0}};
        std::vector<std::byte> mod(prm::kGeneralObjInHdrBytes);
        prm::write_general_obj_in({.opcode = uint16_t(prm::Opcode::MODIFY_GENERAL_OBJECT),
                                   .obj_type = uint16_t(prm::ObjType::VIRTIO_Q_COUNTERS)},
                                  mod);
        e.steps.push_back(Command::modify_made(ctx, 2, std::move(mod), prm::kGeneralObjOutHdrBytes));
        Batch b;
        b.add(std::move(e));
        BatchResult r = engine({.strategy = s}).run(std::move(b), kGenerous);
        ASSERT_TRUE(r.ok()) << strategy_name(s);
        const auto& st = r.entries[0].steps;
        EXPECT_EQ(st[0].made().id, 0x77u);
        ASSERT_EQ(creates.size(), 2u) << strategy_name(s);
        EXPECT_EQ(prm::get_bits(creates[0], kWide.bit_offset, 32), 0x77u) << strategy_name(s);
        EXPECT_EQ(prm::get_bits(creates[0], kLowByte.bit_offset, 8), 0x77u) << strategy_name(s);
        EXPECT_NE(st[1].made().id, 0u);
        EXPECT_EQ(prm::get_bits(creates[1], kWide.bit_offset, 32), st[1].made().id) << strategy_name(s);
        EXPECT_EQ(prm::get_bits(creates[1], kLowByte.bit_offset, 8), 0x77u) << strategy_name(s);
        ASSERT_EQ(modified.size(), 1u) << strategy_name(s);
        EXPECT_EQ(modified[0], st[2].made().id) << strategy_name(s);
        EXPECT_EQ(st[3].obj_id, st[2].made().id) << strategy_name(s);
        eng_->shutdown();
    }
    fake_.set_script(nullptr);
}

TEST_F(EngineBatch, FailedDestroyGivesTheObjectBack) {
    fake_.set_script([](const FakeCall& c) {
        FakeReply r;
        if (c.op == FakeOp::Destroy) r.call_errno = EBUSY;
        return r;
    });
    set_log_sink([](LogLevel, std::string_view) {});
    uint32_t oid = id(0);
    Batch b;
    b.add(Command::destroy(std::move(vqs_[0]), 0));
    BatchResult r = engine().run(std::move(b), kGenerous);
    EXPECT_EQ(r.entries[0].steps[0].state, StepState::Failed);
    EXPECT_EQ(r.entries[0].steps[0].sys_errno, EBUSY);
    ASSERT_TRUE(r.entries[0].steps[0].obj);
    EXPECT_EQ(r.entries[0].steps[0].obj.obj_id(), oid);
    fake_.set_script(nullptr);
}

}  // namespace
}  // namespace mlx5async::devx
