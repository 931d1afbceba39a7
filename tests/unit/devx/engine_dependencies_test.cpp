// Entries that wait for other entries of their batch (Entry::after, ids_from
// naming an entry), in every strategy: the order, the ids they take, and
// what a failure, a bad dependency or a deadline does to those that wait.
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "common/base/log_sink.hpp"
#include "common/devx/engine.hpp"
#include "common/prm/opcodes.hpp"
#include "tests/unit/devx/fake_engine_names.hpp"

namespace mlx5async::devx {
namespace {

using namespace fake_engine;

constexpr prm::Field kWide{"test.id", 0x80, 32}, kLowByte{"test.id_7_0", 0xa0, 8};
constexpr prm::Field kTag{"test.tag", 0xc0, 32};  // which entry a CREATE is (the test's own)
constexpr Strategy kStrategies[] = {Strategy::Async, Strategy::Sequential, Strategy::Threads};

class EngineDependencies : public ::testing::Test {
protected:
    void TearDown() override {
        fake_.release_all();
        if (eng_) eng_->shutdown();
        set_log_sink(nullptr);
    }
    Engine& engine(Strategy s) {
        if (eng_) eng_->shutdown();
        auto e = Engine::create(FakeDevx::api(), fake_.ctx(), {.strategy = s});
        EXPECT_TRUE(e) << to_string(e.error());
        eng_ = std::move(*e);
        return *eng_;
    }
    // A counters CREATE tagged with its entry's number.
    Command create(uint32_t tag) {
        std::vector<std::byte> in(prm::kGeneralObjInHdrBytes + 16);
        prm::write_general_obj_in({.opcode = uint16_t(prm::Opcode::CREATE_GENERAL_OBJECT),
                                   .obj_type = uint16_t(prm::ObjType::VIRTIO_Q_COUNTERS)},
                                  in);
        prm::set_bits(in, kTag.bit_offset, kTag.bit_width, tag);
        return Command::create_obj(ctx_, std::move(in), prm::kGeneralObjOutHdrBytes, int(tag));
    }
    // Entries 0 and 1, and entry 2 whose CREATE takes both's ids.
    Batch two_and_one_naming_both() {
        Batch b;
        b.add(create(0));
        b.add(create(1));
        Entry e;
        e.queue = 2;
        e.steps.push_back(create(2));
        e.steps[0].ids_from = {{kWide, 0, 0}, {kLowByte, 0, 1}};
        b.add(std::move(e));
        return b;
    }
    static uint32_t tag_of(const FakeCall& c) {
        return c.op == FakeOp::Create ? prm::get_bits(c.in, kTag.bit_offset, kTag.bit_width) : ~0u;
    }
    // The CREATE inputs the fake saw, by tag; `hold`/`fail`: the tags it holds or refuses.
    void script(std::vector<uint32_t> hold, std::vector<uint32_t> fail) {
        fake_.set_script([this, hold, fail](const FakeCall& c) {
            FakeReply r;
            const uint32_t t = tag_of(c);
            if (t == ~0u) return r;
            std::lock_guard lk(mu_);
            seen_[t] = c.in;
            r.hold = std::find(hold.begin(), hold.end(), t) != hold.end();
            if (std::find(fail.begin(), fail.end(), t) != fail.end()) r.status = 0x3;
            return r;
        });
    }
    bool seen(uint32_t tag) {
        std::lock_guard lk(mu_);
        return seen_.count(tag) != 0;
    }
    std::vector<std::byte> input(uint32_t tag) {
        std::lock_guard lk(mu_);
        return seen_[tag];
    }

    FakeDevx fake_;  // first: outlives the objects and the engine
    Context ctx_{&FakeDevx::api(), fake_.ctx()};
    std::unique_ptr<Engine> eng_;
    std::mutex mu_;
    std::map<uint32_t, std::vector<std::byte>> seen_;  // guarded by mu_
};

// Entry 2 names what entries 0 and 1 made: it is issued only once both
// completed (entry 0 held meanwhile, entry 1 free to run beside it where
// the strategy runs entries side by side), and its input holds their ids.
TEST_F(EngineDependencies, AnEntryRunsAfterThoseItNamesAndTakesTheirIds) {
    for (Strategy s : kStrategies) {
        seen_.clear();
        script({0}, {});
        Batch b = two_and_one_naming_both();
        Engine& eng = engine(s);
        auto fut = std::async(std::launch::async, [&] { return eng.run(std::move(b), kGenerous); });
        ASSERT_TRUE(fake_.wait_held(1, kGenerous)) << strategy_name(s);
        if (s != Strategy::Sequential) {  // entry 1 runs while 0 is held, and ends
            const auto until = std::chrono::steady_clock::now() + kGenerous;
            while (!seen(1) && std::chrono::steady_clock::now() < until) std::this_thread::yield();
            ASSERT_TRUE(seen(1)) << strategy_name(s);
        }
        EXPECT_FALSE(seen(2)) << strategy_name(s) << ": issued before entry 0 completed";
        fake_.set_script(nullptr);
        script({}, {});
        fake_.release_all();
        BatchResult r = fut.get();
        ASSERT_TRUE(r.ok()) << strategy_name(s);
        const uint32_t a = r.entries[0].steps[0].made().id, c = r.entries[1].steps[0].made().id;
        ASSERT_NE(a, 0u);
        const auto in = input(2);
        EXPECT_EQ(prm::get_bits(in, kWide.bit_offset, 32), a) << strategy_name(s);
        EXPECT_EQ(prm::get_bits(in, kLowByte.bit_offset, 8), c & 0xff) << strategy_name(s);
    }
}

// A result nobody took its objects from releases them last entry first:
// entry 2's object names entry 0's and 1's, which the device keeps until it
// is gone.
TEST_F(EngineDependencies, AResultReleasesItsEntriesLastFirst) {
    Batch b = two_and_one_naming_both();
    std::vector<uint32_t> made;
    size_t before = 0;
    {
        BatchResult r = engine(Strategy::Async).run(std::move(b), kGenerous);
        ASSERT_TRUE(r.ok());
        for (const auto& entry : r.entries) made.push_back(entry.steps[0].made().id);
        before = fake_.trace().size();
    }
    std::vector<uint32_t> destroyed;
    const auto t = fake_.trace();
    for (size_t i = before; i < t.size(); ++i)
        if (t[i].kind == FakeEvent::Issue && t[i].op == FakeOp::Destroy) destroyed.push_back(t[i].obj_id);
    EXPECT_EQ(destroyed, std::vector<uint32_t>(made.rbegin(), made.rend()));
}

// Entry 0 fails: entry 2 (after 0) and entry 3 (after 2) are Cancelled,
// never issued; entry 1 and entry 4 (after 1) are not touched by it.
TEST_F(EngineDependencies, AFailureCancelsWhatWaitsForItAndNothingElse) {
    set_log_sink([](LogLevel, std::string_view) {});
    for (Strategy s : kStrategies) {
        seen_.clear();
        script({}, {0});
        Batch b;
        for (uint32_t t = 0; t < 5; ++t) {
            Entry e;
            e.queue = int(t);
            e.steps.push_back(create(t));
            if (t == 2) e.after = {0};
            if (t == 3) e.after = {2, 1};
            if (t == 4) e.after = {1};
            b.add(std::move(e));
        }
        BatchResult r = engine(s).run(std::move(b), kGenerous);
        EXPECT_EQ(r.entries[0].steps[0].state, StepState::Failed) << strategy_name(s);
        EXPECT_TRUE(r.entries[1].ok()) << strategy_name(s);
        EXPECT_TRUE(r.entries[4].ok()) << strategy_name(s);
        for (int e : {2, 3}) {
            EXPECT_EQ(r.entries[e].steps[0].state, StepState::Cancelled) << strategy_name(s) << " " << e;
            EXPECT_TRUE(r.entries[e].steps[0].never_issued) << strategy_name(s) << " " << e;
            EXPECT_FALSE(seen(uint32_t(e))) << strategy_name(s) << " " << e;
        }
        EXPECT_EQ(r.failed, 1u);
        EXPECT_EQ(r.cancelled, 2u);
        EXPECT_EQ(r.done, 2u);
    }
}

// An entry that waits for itself or a later entry would never run: it fails
// with EINVAL, unissued, named in the log; the others run.
TEST_F(EngineDependencies, ADependencyOnALaterEntryFailsUnissued) {
    std::vector<std::string> logs;
    std::mutex log_mu;
    set_log_sink([&](LogLevel, std::string_view m) {
        std::lock_guard lk(log_mu);
        logs.emplace_back(m);
    });
    for (Strategy s : kStrategies) {
        seen_.clear();
        script({}, {});
        Batch b;
        Entry e;
        e.steps.push_back(create(0));
        e.after = {1};
        b.add(std::move(e));
        b.add(create(1));
        BatchResult r = engine(s).run(std::move(b), kGenerous);
        EXPECT_EQ(r.entries[0].steps[0].state, StepState::Failed) << strategy_name(s);
        EXPECT_EQ(r.entries[0].steps[0].sys_errno, EINVAL) << strategy_name(s);
        EXPECT_TRUE(r.entries[0].steps[0].never_issued) << strategy_name(s);
        EXPECT_FALSE(seen(0)) << strategy_name(s);
        EXPECT_TRUE(r.entries[1].ok()) << strategy_name(s);
    }
    std::lock_guard lk(log_mu);
    EXPECT_TRUE(std::any_of(logs.begin(), logs.end(), [](const std::string& l) {
        return l.find("batch entry 0 waits for entry 1") != std::string::npos;
    }));
}

// The deadline passes while entry 0 is held: entry 1, which waits for it,
// ends TimedOut without being issued.
TEST_F(EngineDependencies, ADeadlineEndsTheWaitingEntriesUnissued) {
    set_log_sink([](LogLevel, std::string_view) {});
    for (Strategy s : {Strategy::Async, Strategy::Threads}) {
        seen_.clear();
        script({0}, {});
        Batch b;
        b.add(create(0));
        Entry e;
        e.steps.push_back(create(1));
        e.after = {0};
        b.add(std::move(e));
        BatchResult r = engine(s).run(std::move(b), 50ms);
        EXPECT_EQ(r.entries[0].steps[0].state, StepState::TimedOut) << strategy_name(s);
        EXPECT_EQ(r.entries[1].steps[0].state, StepState::TimedOut) << strategy_name(s);
        EXPECT_TRUE(r.entries[1].steps[0].never_issued) << strategy_name(s);
        fake_.set_script(nullptr);
        fake_.release_all();
        ASSERT_TRUE(fake_.wait_idle(kGenerous)) << strategy_name(s);
        EXPECT_FALSE(seen(1)) << strategy_name(s);
    }
}

}  // namespace
}  // namespace mlx5async::devx
