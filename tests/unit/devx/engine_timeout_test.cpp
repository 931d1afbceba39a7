// Deadlines, late completions and shutdown, over the scripted FakeDevx.
// A hanging command is a held one; the tests release it before teardown so
// the worker that runs it can be joined.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "common/base/log_sink.hpp"
#include "common/devx/engine.hpp"
#include "common/prm/general_obj.hpp"
#include "common/prm/status.hpp"
#include "testkit/fake_devx_api.hpp"
#include "tests/unit/devx/fake_engine_names.hpp"
#include "testkit/proc_counts.hpp"

namespace mlx5async::devx {
namespace {

using namespace fake_engine;
constexpr auto kShort = 500ms;  // only where timing out is the point: everything else
                                // finishes long before (microseconds on the fake)

class EngineTimeout : public ::testing::Test {
protected:
    void SetUp() override {
        set_log_sink([this](LogLevel, std::string_view l) { lines_.emplace_back(l); });
        for (int i = 0; i < 6; ++i) vqs_.push_back(fake_.make_obj(VirtqState::RDY));
        auto e = Engine::create(FakeDevx::api(), fake_.ctx(), {});
        ASSERT_TRUE(e);
        eng_ = std::move(*e);
    }
    void TearDown() override {
        fake_.set_script(nullptr);
        fake_.release_all();
        eng_->shutdown();
        set_log_sink(nullptr);
    }
    Batch suspend_all() {
        Batch b;
        for (size_t q = 0; q < vqs_.size(); ++q) b.add_suspend(vqs_[q], int(q));
        return b;
    }
    void hold_every(FakeOp op) {
        fake_.set_script([op](const FakeCall& c) {
            FakeReply r;
            r.hold = c.op == op;
            return r;
        });
    }
    void hold(FakeOp op, uint32_t obj) {
        fake_.set_script([op, obj](const FakeCall& c) {
            FakeReply r;
            r.hold = c.op == op && c.obj_id == obj;
            return r;
        });
    }

    FakeDevx fake_;
    std::vector<DevxObj> vqs_;
    std::unique_ptr<Engine> eng_;
    std::vector<std::string> lines_;
};

TEST_F(EngineTimeout, HangingModifyTimesOutAlone) {
    hold(FakeOp::Modify, vqs_[2].obj_id());
    BatchResult r = eng_->run(suspend_all(), kShort);
    for (size_t q = 0; q < vqs_.size(); ++q) {
        if (q == 2) continue;
        EXPECT_TRUE(r.entries[q].ok()) << "queue " << q;
    }
    EXPECT_EQ(r.entries[2].steps[0].state, StepState::TimedOut);
    EXPECT_EQ(r.entries[2].steps[1].state, StepState::Cancelled);
    EXPECT_EQ(r.timed_out, 1u);
    EXPECT_EQ(r.cancelled, 1u);
    ASSERT_EQ(lines_.size(), 1u);  // the timeout, logged once with its queue
    EXPECT_NE(lines_[0].find("queue 2"), std::string::npos) << lines_[0];
}

// Blocking commands only (a resume): the others' jobs come back quietly
// while one hangs, and the deadline finds them done, not timed out.
TEST_F(EngineTimeout, HangingModifyOfAResumeTimesOutAlone) {
    const uint32_t hung = vqs_[2].obj_id();
    fake_.set_script([hung](const FakeCall& c) {
        FakeReply r;
        r.hold = c.op == FakeOp::Modify && c.obj_id == hung;
        // The others take a firmware's time: they end while the loop sleeps.
        if (c.op == FakeOp::Modify && !r.hold) std::this_thread::sleep_for(20ms);
        return r;
    });
    Batch b;
    for (size_t q = 0; q < vqs_.size(); ++q) b.add_resume(vqs_[q], int(q));
    BatchResult r = eng_->run(std::move(b), kShort);
    for (size_t q = 0; q < vqs_.size(); ++q) {
        if (q == 2) continue;
        EXPECT_TRUE(r.entries[q].ok()) << "queue " << q << ": " << int(r.entries[q].steps[0].state);
    }
    EXPECT_EQ(r.entries[2].steps[0].state, StepState::TimedOut);
    EXPECT_EQ(r.timed_out, 1u);
}

TEST_F(EngineTimeout, HangingAsyncQueryTimesOutAlone) {
    hold(FakeOp::QueryAsync, vqs_[4].obj_id());
    BatchResult r = eng_->run(suspend_all(), kShort);
    EXPECT_EQ(r.entries[4].steps[0].state, StepState::Done);
    EXPECT_EQ(r.entries[4].steps[1].state, StepState::TimedOut);
    EXPECT_EQ(r.done, 2 * vqs_.size() - 1);
    EXPECT_EQ(r.timed_out, 1u);
}

TEST_F(EngineTimeout, LateQueryCompletionGoesNowhere) {
    hold(FakeOp::QueryAsync, vqs_[1].obj_id());
    BatchResult r1 = eng_->run(suspend_all(), kShort);
    ASSERT_EQ(r1.entries[1].steps[1].state, StepState::TimedOut);
    EXPECT_EQ(eng_->throttle().in_flight(), 1u);  // still outstanding in the device
    fake_.set_script(nullptr);
    fake_.release_all();  // the late completion is now readable on the cmd_comp fd
    // Next batch: resume everything; its results must be its own.
    Batch b;
    for (size_t q = 0; q < vqs_.size(); ++q) b.add_resume(vqs_[q], int(q));
    Entry check{1, {}};  // resume then query the queue whose query was late
    check.steps.push_back(Command::modify_virtq_state(vqs_[1], VirtqState::RDY, 1));
    check.steps.push_back(Command::query_virtq(vqs_[1], 1));
    b.add(std::move(check));
    BatchResult r2 = eng_->run(std::move(b), kGenerous);
    EXPECT_TRUE(r2.ok());
    ASSERT_EQ(r2.entries.size(), vqs_.size() + 1);
    EXPECT_EQ(r2.entries.back().steps[1].virtq->state, VirtqState::RDY);  // not the stale SUSPEND
    EXPECT_EQ(eng_->stats().stale_completions, 1u);
    EXPECT_EQ(eng_->throttle().in_flight(), 0u);
}

TEST_F(EngineTimeout, LateBlockingCompletionGoesNowhere) {
    hold(FakeOp::Modify, vqs_[0].obj_id());
    BatchResult r1 = eng_->run(suspend_all(), kShort);
    ASSERT_EQ(r1.entries[0].steps[0].state, StepState::TimedOut);
    fake_.set_script(nullptr);
    fake_.release_all();
    ASSERT_TRUE(eng_->drain(Engine::Clock::now() + kGenerous));
    EXPECT_EQ(eng_->stats().stale_completions, 1u);
    EXPECT_EQ(eng_->throttle().in_flight(), 0u);
    EXPECT_EQ(fake_.state_of(vqs_[0].obj_id()), VirtqState::SUSPEND);  // it did run, late
    Batch b;
    b.add(Command::query_virtq(vqs_[3], 3));
    BatchResult r = eng_->run(std::move(b), kGenerous);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.entries[0].steps[0].obj_id, vqs_[3].obj_id());
    EXPECT_EQ(r.entries[0].steps[0].virtq->hw_used_index, uint16_t(2000 + vqs_[3].obj_id()));
    EXPECT_EQ(eng_->stats().stale_completions, 1u);
}

// The caller learns of a late answer from the worker that has it, once
// per late job, and never of a command answered within its batch.
TEST_F(EngineTimeout, ALateAnswerIsToldToTheCallerOnce) {
    std::atomic<int> told{0};
    std::promise<void> first;
    EngineOptions o;
    o.on_late_answer = [&] {
        if (told.fetch_add(1) == 0) first.set_value();
    };
    auto e = Engine::create(FakeDevx::api(), fake_.ctx(), o);
    ASSERT_TRUE(e);
    Batch b;
    for (size_t q = 0; q < vqs_.size(); ++q) b.add_resume(vqs_[q], int(q));
    ASSERT_TRUE((*e)->run(std::move(b), kGenerous).ok());
    EXPECT_EQ(told.load(), 0);
    hold(FakeOp::Modify, vqs_[0].obj_id());
    BatchResult r = (*e)->run(suspend_all(), kShort);
    ASSERT_EQ(r.entries[0].steps[0].state, StepState::TimedOut);
    EXPECT_EQ(told.load(), 0);  // still the device's
    fake_.set_script(nullptr);
    fake_.release_all();
    ASSERT_EQ(first.get_future().wait_for(kGenerous), std::future_status::ready);
    ASSERT_TRUE((*e)->drain(Engine::Clock::now() + kGenerous));
    EXPECT_EQ((*e)->late_commands(), 0u);
    (*e)->shutdown();
    EXPECT_EQ(told.load(), 1);
}

// A chain umem -> CREATE run by one worker whose CREATE hangs past the
// deadline: both steps time out (the umem's result is still the worker's),
// none is reported cancelled, and when the CREATE is answered late the job
// comes back stale and releases the object and then the umem.
TEST_F(EngineTimeout, AHangInALaterStepOfAWorkersChainTimesItOut) {
    hold_every(FakeOp::Create);
    Context ctx(&FakeDevx::api(), fake_.ctx());  // closed (no-op) at scope end
    std::vector<std::byte> host(4096);
    const int resources = fake_.live_resources();
    const unsigned objects = fake_.live_objects();
    std::vector<std::byte> in(prm::kGeneralObjInHdrBytes);
    prm::write_general_obj_in({.opcode = uint16_t(prm::Opcode::CREATE_GENERAL_OBJECT),
                               .obj_type = uint16_t(prm::ObjType::VIRTIO_Q_COUNTERS)},
                              in);
    Entry e;
    e.steps.push_back(Command::reg_umem(ctx, host.data(), host.size()));
    e.steps.push_back(Command::create_obj(ctx, std::move(in), prm::kGeneralObjOutHdrBytes));
    Batch b;
    b.add(std::move(e));
    BatchResult r = eng_->run(std::move(b), kShort);
    EXPECT_EQ(r.entries[0].steps[0].state, StepState::TimedOut);
    EXPECT_EQ(r.entries[0].steps[1].state, StepState::TimedOut);
    fake_.set_script(nullptr);
    fake_.release_all();
    ASSERT_TRUE(eng_->drain(Engine::Clock::now() + kGenerous));
    EXPECT_EQ(fake_.live_objects(), objects);
    EXPECT_EQ(fake_.live_resources(), resources);
}

// Commands that still wait for a command slot when the deadline passes are
// never issued, later either: the device is known not to have seen them.
TEST_F(EngineTimeout, StepsWaitingForASlotAtTheDeadlineAreNeverIssued) {
    EngineOptions o;
    o.max_inflight = 2;
    o.workers = 6;  // more workers than slots: four wait in the throttle
    auto e = Engine::create(FakeDevx::api(), fake_.ctx(), o);
    ASSERT_TRUE(e);
    Engine& eng = **e;
    hold_every(FakeOp::Modify);
    BatchResult r = eng.run(suspend_all(), kShort);
    EXPECT_EQ(r.timed_out, vqs_.size());
    unsigned never = 0;
    for (const auto& en : r.entries) {
        EXPECT_EQ(en.steps[0].state, StepState::TimedOut);
        never += en.steps[0].never_issued;
        if (en.steps[0].never_issued) {
            EXPECT_NE(prm::describe(en.steps[0].error()).find("not issued"), std::string::npos);
        }
    }
    EXPECT_EQ(never, vqs_.size() - 2);
    EXPECT_EQ(eng.late_commands(), 2u);
    fake_.set_script(nullptr);
    fake_.release_all();
    ASSERT_TRUE(eng.drain(Engine::Clock::now() + kGenerous));
    EXPECT_EQ(eng.late_commands(), 0u);
    for (size_t q = 0; q < vqs_.size(); ++q)
        EXPECT_EQ(fake_.state_of(vqs_[q].obj_id()),
                  r.entries[q].steps[0].never_issued ? VirtqState::RDY : VirtqState::SUSPEND)
            << "queue " << q;
    eng.shutdown();
}

// cut_short while MODIFYs hang in every slot: the steps waiting for a
// slot are never issued (Cancelled), the ones in flight complete when the
// device answers, and the batch returns then; while it is on, a new batch
// issues nothing. Each strategy.
class EngineCut : public EngineTimeout, public ::testing::WithParamInterface<Strategy> {};

TEST_P(EngineCut, IssuesNothingMoreAndWaitsOnlyForWhatIsInFlight) {
    EngineOptions o;
    o.strategy = GetParam();
    o.max_inflight = 2;
    o.workers = GetParam() == Strategy::Threads ? 2 : 0;
    auto e = Engine::create(FakeDevx::api(), fake_.ctx(), o);
    ASSERT_TRUE(e);
    Engine& eng = **e;
    hold_every(FakeOp::Modify);
    Batch b;
    for (size_t q = 0; q < vqs_.size(); ++q) b.add(Command::modify_virtq_state(vqs_[q], VirtqState::SUSPEND, int(q)));
    auto fut = std::async(std::launch::async, [&] { return eng.run(std::move(b), kGenerous); });
    const size_t in_flight = GetParam() == Strategy::Sequential ? 1 : 2;
    ASSERT_TRUE(fake_.wait_held(in_flight, kGenerous));
    eng.cut_short(true);
    fake_.set_script(nullptr);
    fake_.release_all();
    BatchResult r = fut.get();
    size_t issued = 0;
    for (size_t q = 0; q < vqs_.size(); ++q) {
        const StepResult& st = r.entries[q].steps[0];
        if (st.state == StepState::Done) {
            ++issued;
            EXPECT_EQ(fake_.state_of(vqs_[q].obj_id()), VirtqState::SUSPEND) << q;
            continue;
        }
        EXPECT_EQ(st.state, StepState::Cancelled) << q;
        EXPECT_TRUE(st.never_issued) << q;
        EXPECT_EQ(fake_.state_of(vqs_[q].obj_id()), VirtqState::RDY) << q;
    }
    EXPECT_EQ(issued, in_flight);
    EXPECT_EQ(eng.late_commands(), 0u);
    BatchResult after = eng.run(suspend_all(), kGenerous);
    EXPECT_EQ(after.cancelled, 2 * vqs_.size());
    eng.cut_short(false);
    EXPECT_TRUE(eng.run(suspend_all(), kGenerous).ok());
    eng.shutdown();
}

INSTANTIATE_TEST_SUITE_P(Strategies, EngineCut,
                         ::testing::Values(Strategy::Async, Strategy::Sequential, Strategy::Threads),
                         [](const auto& i) { return std::string(strategy_name(i.param)); });

TEST_F(EngineTimeout, PastDeadlineTimesOutEverythingUnissued) {
    BatchResult r = eng_->run(suspend_all(), Engine::Clock::now() - 1s);
    // Whatever was issued before the timer fired may complete; nothing is lost.
    EXPECT_EQ(r.done + r.timed_out + r.cancelled, 2 * vqs_.size());
    EXPECT_EQ(r.failed, 0u);
}

TEST_F(EngineTimeout, ShutdownCancelsRunningBatchAndJoins) {
    hold(FakeOp::Modify, vqs_[0].obj_id());
    auto fut = std::async(std::launch::async, [&] { return eng_->run(suspend_all(), kGenerous); });
    ASSERT_TRUE(fake_.wait_held(1, kGenerous));
    auto down = std::async(std::launch::async, [&] { eng_->shutdown(); });
    BatchResult r = fut.get();  // returns before the held modify completes
    EXPECT_EQ(r.entries[0].steps[0].state, StepState::Cancelled);
    fake_.release_all();  // lets the worker finish so shutdown can join it
    down.get();
    EXPECT_EQ(eng_->worker_count(), 0u);
    BatchResult after = eng_->run(suspend_all(), kGenerous);
    EXPECT_EQ(after.cancelled, 2 * vqs_.size());
}

TEST_F(EngineTimeout, ReuseDoesNotLeakFdsOrThreads) {
    eng_->run(suspend_all(), kGenerous);  // warm-up: lazily created resources
    size_t fds = testing::open_fd_count(), threads = testing::thread_count();
    for (int i = 0; i < 2000; ++i) {
        BatchResult r = eng_->run(suspend_all(), kGenerous);
        ASSERT_TRUE(r.ok()) << "batch " << i;
    }
    EXPECT_EQ(testing::open_fd_count(), fds);
    EXPECT_EQ(testing::thread_count(), threads);
}

}  // namespace
}  // namespace mlx5async::devx
