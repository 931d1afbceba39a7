// A command that fails, times out or hangs leaves the device's state
// unknown: the driver learns it (QUERY, once every late command was
// answered) before it uses the virtq again, and never reports a suspend as
// done while a virtq it covers may still run.
#include <gtest/gtest.h>

#include "core_fixture.hpp"

namespace mlx5async::core {
namespace {

using testing_support::Fixture;
using prm::VirtqState;

struct Reconcile : Fixture {
    void start(uint32_t rings) {
        enable_all(rings);
        ASSERT_TRUE(dev->configure(guest(rings, 20)));
        std::vector<RingIndexes> out;
        ASSERT_TRUE(dev->close(out));  // every virtq SUSPEND
    }
    std::vector<VirtqState> fw_states(uint32_t rings) {
        std::vector<VirtqState> v;
        for (uint16_t i = 0; i < rings; i++) v.push_back(fw(i).state);
        return v;
    }
};

// The MODIFY(RDY) of virtq 1 outlives the batch's deadline and lands
// later: the device runs virtq 1 while the driver last saw it SUSPEND. The
// next suspend must cover it, and the next resume must not trip over it.
TEST_F(Reconcile, ALateModifyIsLearnedBeforeTheVirtqIsUsedAgain) {
    timeout_ms = 100;
    open("cx7", 2);
    start(4);
    ASSERT_TRUE(emu_fault("op=modify vq=1 nth=1 delay_us=400000"));
    auto r = dev->resume_all();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::Timeout);
    ASSERT_TRUE(eventually([&] { return fw(1).state == VirtqState::RDY; }));
    ASSERT_TRUE(dev->suspend_all());
    EXPECT_EQ(fw_states(4), std::vector<VirtqState>(4, VirtqState::SUSPEND));
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Suspended));
    ASSERT_TRUE(dev->resume_all());
    EXPECT_EQ(fw_states(4), std::vector<VirtqState>(4, VirtqState::RDY));
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Ready));
}

// A late MODIFY(SUSPEND): the driver's dev_close hands back the indexes the
// device really stopped at, and the next start finds it SUSPEND.
TEST_F(Reconcile, ALateSuspendIsLearnedAtTheNextStart) {
    timeout_ms = 100;
    open("cx7", 2);
    start(4);
    ASSERT_TRUE(dev->resume_all());
    ASSERT_TRUE(emu_fault("op=modify vq=2 nth=1 delay_us=400000"));
    EXPECT_FALSE(dev->suspend_all());
    ASSERT_TRUE(eventually([&] { return fw(2).state == VirtqState::SUSPEND; }));
    ASSERT_TRUE(dev->resume_all());
    EXPECT_EQ(fw_states(4), std::vector<VirtqState>(4, VirtqState::RDY));
}

// A MODIFY that hangs: until the kernel's command timeout fails it, the
// virtq's state cannot be known, so a suspend says it may still run; once
// it failed (state unchanged), everything works again.
TEST_F(Reconcile, AHungModifyMakesSuspendFailUntilItIsAnswered) {
    timeout_ms = 100;
    emu_extra = ",cmd_timeout_ms=600";
    open("cx7", 2);
    start(4);
    ASSERT_TRUE(dev->resume_all());
    ASSERT_TRUE(emu_fault("op=modify vq=3 nth=1 hang"));
    auto r = dev->suspend_all();
    ASSERT_FALSE(r);
    r = dev->suspend_all();  // virtq 3's command is still unanswered
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().what.find("virtq 3:"), std::string::npos) << r.error().what;
    EXPECT_NE(r.error().what.find("may still run"), std::string::npos) << r.error().what;
    // The kernel fails it (ETIMEDOUT): the device never applied it.
    ASSERT_TRUE(eventually([&] { return dev->suspend_all() || fw(3).state == VirtqState::SUSPEND; }));
    EXPECT_EQ(fw_states(4), std::vector<VirtqState>(4, VirtqState::SUSPEND));
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Suspended));
    ASSERT_TRUE(dev->resume_all());
    EXPECT_EQ(fw_states(4), std::vector<VirtqState>(4, VirtqState::RDY));
}

// dev_close while a suspend is late: the stop's second round learns the
// ring still RDY and suspends it again, so the close hands back where the
// device stopped; the late SUSPEND lands on a suspended ring and moves
// nothing, and the next dev_close hands back the same.
TEST_F(Reconcile, CloseHandsBackTheIndexesALateSuspendStoppedAt) {
    timeout_ms = 100;
    open("cx7", 2);
    start(4);
    ASSERT_TRUE(dev->resume_all());
    ASSERT_TRUE(emu_fault("op=modify vq=2 nth=1 delay_us=400000"));
    std::vector<RingIndexes> out;
    ASSERT_TRUE(dev->close(out));
    ASSERT_EQ(out.size(), 4u);
    for (const auto& ri : out) EXPECT_TRUE(ri.from_device) << "ring " << ri.ring;
    EXPECT_EQ(fw(2).state, VirtqState::SUSPEND);
    ASSERT_TRUE(eventually([&] { return dev->command_health().unanswered == 0; }));
    EXPECT_EQ(fw(2).state, VirtqState::SUSPEND);
    ASSERT_TRUE(dev->close(out));
    ASSERT_EQ(out.size(), 4u);
    EXPECT_TRUE(out[2].from_device);
    EXPECT_EQ(out[2].last_avail_idx, fw(2).hw_available_index);
    EXPECT_EQ(out[2].last_used_idx, fw(2).hw_used_index);
    EXPECT_EQ(phases(4), std::vector<VqPhase>(4, VqPhase::Suspended));
}

// Hung commands hold their command slots: the device says how many, the
// commands that find no slot fail as such, the engine cannot be swapped
// under them, and once the kernel failed them the device works again.
TEST_F(Reconcile, HungCommandsHoldTheirSlotsUntilTheKernelFailsThem) {
    timeout_ms = 100;
    emu_extra = ",cmd_timeout_ms=1500";
    open("cx7", 8, /*max_inflight=*/8);
    start(16);
    ASSERT_TRUE(dev->resume_all());
    ASSERT_TRUE(emu_fault("op=modify hang"));
    auto r = dev->suspend_all();
    ASSERT_FALSE(r);
    auto h = dev->command_health();
    EXPECT_EQ(h.unanswered, 8u);
    EXPECT_EQ(h.slots, 8u);
    EXPECT_EQ(h.unsure_virtqs, 8u);  // the 8 never issued changed nothing
    ASSERT_TRUE(emu_fault("clear"));  // the hung commands stay hung
    EXPECT_FALSE(dev->set_max_inflight(16));
    r = dev->suspend_all();  // the others find no slot
    ASSERT_FALSE(r);
    EXPECT_EQ(fw_states(16), std::vector<VirtqState>(16, VirtqState::RDY));
    auto info = dev->vq_info();
    size_t unsure = 0;
    for (const auto& v : info) unsure += v.unsure;
    EXPECT_EQ(unsure, 8u);
    ASSERT_TRUE(eventually([&] { return bool(dev->suspend_all()); }));
    h = dev->command_health();
    EXPECT_EQ(h.unanswered, 0u);
    EXPECT_EQ(h.unsure_virtqs, 0u);
    EXPECT_EQ(fw_states(16), std::vector<VirtqState>(16, VirtqState::SUSPEND));
    ASSERT_TRUE(dev->resume_all());
    EXPECT_EQ(fw_states(16), std::vector<VirtqState>(16, VirtqState::RDY));
    EXPECT_TRUE(dev->set_max_inflight(16));
}

}  // namespace
}  // namespace mlx5async::core
