// Each EngineOptions switch of a heuristic (doc/engine.md, "Heuristics")
// turns it off: properties seen without timing (the order of issue, the
// commands a device holds at once, the workers' condition variables).
// workers_follow_caller: engine_affinity_test.cpp.
#include <sched.h>

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "testkit/eventually.hpp"
#include "common/devx/engine.hpp"
#include "common/prm/general_obj.hpp"
#include "common/prm/opcodes.hpp"
#include "testkit/fake_devx_api.hpp"
#include "tests/unit/devx/fake_engine_names.hpp"

namespace mlx5async::devx {
namespace {

using namespace fake_engine;

class EngineSwitches : public ::testing::Test {
protected:
    void SetUp() override {
        for (int i = 0; i < 8; ++i) vqs_.push_back(fake_.make_obj(VirtqState::RDY));
    }
    void TearDown() override {
        fake_.set_script(nullptr);
        fake_.release_all();
        if (eng_) eng_->shutdown();
    }
    Engine& engine(EngineOptions o) {
        if (eng_) eng_->shutdown();
        auto e = Engine::create(FakeDevx::api(), fake_.ctx(), std::move(o));
        EXPECT_TRUE(e);
        eng_ = std::move(*e);
        return *eng_;
    }
    Batch all(bool suspend) const {
        Batch b;
        for (size_t q = 0; q < vqs_.size(); ++q) {
            if (suspend)
                b.add_suspend(vqs_[q], int(q));
            else
                b.add_resume(vqs_[q], int(q));
        }
        return b;
    }
    void token_waits_give_way(bool chains);
    void hold_modifies() {
        fake_.set_script([](const FakeCall& c) {
            FakeReply r;
            r.hold = c.op == FakeOp::Modify;
            return r;
        });
    }

    FakeDevx fake_;
    std::vector<DevxObj> vqs_;
    std::unique_ptr<Engine> eng_;
};

// Runs fn on a thread allowed on one CPU: the workers follow it there, so a
// batch of fast commands keeps one worker awake.
template <typename F>
void on_one_cpu(F fn) {
    std::thread([&] {
        cpu_set_t all, one;
        ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
        CPU_ZERO(&one);
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &all)) {
                CPU_SET(c, &one);
                break;
            }
        ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
        fn();
    }).join();
}

EngineOptions four_in_flight() {
    EngineOptions o;
    o.max_inflight = 4;
    o.fast_command_ns = kFakeAnswersFast;
    return o;
}

// After batches of fast commands, a batch whose MODIFYs block: the commands
// the device holds once the batch has given up.
TEST_F(EngineSwitches, FastCommandsWakeOneWorkerPerPostUnlessSensingIsOff) {
    for (bool on : {true, false}) {
        EngineOptions o = four_in_flight();
        o.sense_fast_commands = on;
        // Every answer counts as fast, however long a loaded machine kept
        // the fake's thread from running: what is fast is not under test.
        o.fast_command_ns = std::chrono::seconds(10);
        o.stall_check = false;  // nothing else grows the pool
        Engine& eng = engine(o);
        fake_.set_script(nullptr);
        unsigned held = 0;
        on_one_cpu([&] {
            for (int i = 0; i < 8; ++i) ASSERT_TRUE(eng.run(all(i % 2 == 0), kGenerous).ok());
            // A worker of the last batch not yet back asleep would take
            // queued jobs of the next whatever the engine woke.
            ASSERT_TRUE(mlx5async::testing::eventually([&] { return eng.workers_asleep() == eng.worker_count(); }));
            hold_modifies();
            BatchResult r = eng.run(all(true), 200ms);
            EXPECT_GT(r.timed_out, 0u);
            held = fake_.in_flight();
        });
        // Sensing off: every batch is slow, a throttle's worth wakes. Fast:
        // one worker for the post, and the pool grows only up to the
        // caller's one CPU, so fewer than a throttle's worth are held.
        if (on)
            EXPECT_LT(held, 4u) << "sense_fast_commands on";
        else
            EXPECT_EQ(held, 4u) << "sense_fast_commands off";
        fake_.set_script(nullptr);
        fake_.release_all();
        EXPECT_TRUE(eng.drain(Engine::Clock::now() + kGenerous));
        vqs_.clear();  // the held batch left them half suspended
        for (int i = 0; i < 8; ++i) vqs_.push_back(fake_.make_obj(VirtqState::RDY));
    }
}

TEST_F(EngineSwitches, StallCheckWakesAnotherWorkerWhenTheAwakeOnesHang) {
    Engine& eng = engine(four_in_flight());  // stall_check on (default)
    on_one_cpu([&] {
        for (int i = 0; i < 8; ++i) ASSERT_TRUE(eng.run(all(i % 2 == 0), kGenerous).ok());
        hold_modifies();
        auto fut = std::async(std::launch::async, [&] { return eng.run(all(true), kGenerous); });
        EXPECT_TRUE(fake_.wait_held(3, kGenerous));  // off: two held (the test above)
        fake_.set_script(nullptr);
        fake_.release_all();
        EXPECT_TRUE(fut.get().ok());
    });
}

// Eight entries that need a throttle token, the MODIFYs the device holds
// (alone, or each after a command outside the throttle), and one more entry
// outside the throttle, queued behind them, on as many workers as slots:
// four MODIFYs take the four tokens. With hand_back_token_waits the four
// left without a token give their workers back, and the last entry is
// issued while the MODIFYs are held; without it they wait on their
// workers, which are all taken, and it is issued only once the MODIFYs
// were let go.
void EngineSwitches::token_waits_give_way(bool chains) {
    Context ctx(&FakeDevx::api(), fake_.ctx());
    constexpr uint16_t kLast = uint16_t(prm::Opcode::ALLOC_PD);
    for (bool on : {true, false}) {
        EngineOptions o = four_in_flight();
        o.sense_fast_commands = false;  // every worker awake: the order is the queue's
        o.hand_back_token_waits = on;
        Engine& eng = engine(o);
        std::atomic<bool> let_go{false}, last_after_let_go{false};
        fake_.set_script([&, on](const FakeCall& c) {
            FakeReply r;
            if (c.opcode == kLast) last_after_let_go = let_go.load();
            r.hold = !let_go && (c.op == FakeOp::Modify || (on && c.opcode == kLast));
            return r;
        });
        auto general = [&](uint16_t opcode, int q) {
            std::vector<std::byte> in(prm::kGeneralObjInHdrBytes);
            prm::write_general_obj_in({.opcode = opcode}, in);
            return Command::general(ctx, std::move(in), 16, q);
        };
        Batch b;
        for (int q = 0; q < 8; ++q) {
            Entry e;
            e.queue = q;
            if (chains) e.steps.push_back(general(uint16_t(prm::Opcode::QUERY_HCA_CAP), q));
            e.steps.push_back(Command::modify_virtq_state(vqs_[size_t(q)], prm::VirtqState::RDY, q));
            b.add(std::move(e));
        }
        b.add(general(kLast, 8));
        auto fut = std::async(std::launch::async, [&] { return eng.run(std::move(b), kGenerous); });
        // The four MODIFYs with a token and (switch on) the last entry, held together.
        ASSERT_TRUE(fake_.wait_held(on ? 5 : 4, kGenerous)) << "hand_back_token_waits " << on;
        let_go = true;
        fake_.release_all();
        ASSERT_TRUE(fut.get().ok()) << "hand_back_token_waits " << on;
        fake_.set_script(nullptr);
        EXPECT_EQ(last_after_let_go.load(), !on) << "hand_back_token_waits " << on;
    }
}

TEST_F(EngineSwitches, HandBackTokenWaitsFreesTheWorkersOfChainsWithoutAToken) {
    token_waits_give_way(true);
}

TEST_F(EngineSwitches, HandBackTokenWaitsFreesTheWorkersOfFirstStepsWithoutAToken) {
    token_waits_give_way(false);
}

}  // namespace
}  // namespace mlx5async::devx
