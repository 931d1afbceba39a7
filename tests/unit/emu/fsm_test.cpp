// The virtq state machine: all 16 (from, to) pairs x freeze_to_rdy cap, over
// the real MODIFY path, against the documented table (doc/emulator.md).
#include <tuple>

#include "emu/virtq_fsm.hpp"
#include "emu_fixture.hpp"

namespace mlx5async::emu::test {
namespace {

using prm::VirtqState;
namespace mb = prm::modify_bits;

constexpr VirtqState kStates[] = {VirtqState::INIT, VirtqState::RDY, VirtqState::SUSPEND,
                                  VirtqState::ERR};

// The documented result, written out independently of kVqEdges.
struct Expect {
    bool ok;
    uint32_t syndrome;
};
Expect documented(VirtqState from, VirtqState to, bool freeze) {
    if (from == VirtqState::ERR) return {false, syndrome::kStateIsErr};
    if (from == VirtqState::INIT && to == VirtqState::RDY) return {true, 0};
    if (from == VirtqState::RDY && to == VirtqState::SUSPEND) return {true, 0};
    if (from == VirtqState::SUSPEND && to == VirtqState::RDY)
        return freeze ? Expect{true, 0} : Expect{false, syndrome::kFreezeToRdyUnsupported};
    return {false, syndrome::kIllegalTransition};
}

using Param = std::tuple<VirtqState, VirtqState, bool>;

class VqFsm : public EmuTest, public ::testing::WithParamInterface<Param> {
protected:
    void SetUp() override {
        bool freeze = std::get<2>(GetParam());
        open_device(std::string("cx7,freeze_to_rdy=") + (freeze ? "1," : "0,") + kZeroLatency);
    }
};

TEST_P(VqFsm, ModifyGivesDocumentedResultAndRejectionChangesNothing) {
    auto [from, to, freeze] = GetParam();
    Vq vq = virtq_in_state(from);
    auto before = dev_->virtq_info(vq.id);
    ASSERT_TRUE(before);
    prm::VirtqAttr a;
    a.state = to;
    CmdRet r = modify_virtq(vq, a, mb::STATE);
    Expect e = documented(from, to, freeze);
    auto after = dev_->virtq_info(vq.id);
    ASSERT_TRUE(after);
    if (e.ok) {
        EXPECT_EQ(r.rc, 0);
        EXPECT_EQ(r.status, 0);
        EXPECT_EQ(after->state, to);
        return;
    }
    EXPECT_EQ(r.rc, EREMOTEIO);
    EXPECT_EQ(r.status, uint8_t(prm::Status::BAD_RES_STATE_ERR));
    EXPECT_EQ(r.syndrome, e.syndrome);
    EXPECT_EQ(after->state, from);
    EXPECT_EQ(after->attr, before->attr);
    EXPECT_EQ(after->error_type, before->error_type);
}

TEST_P(VqFsm, PureCheckMatchesDocumentedTable) {
    auto [from, to, freeze] = GetParam();
    auto r = check_transition(from, {to}, freeze);
    Expect e = documented(from, to, freeze);
    EXPECT_EQ(bool(r), e.ok);
    if (!r) {
        EXPECT_EQ(r.error().syndrome, e.syndrome);
    }
}

std::string param_name(const ::testing::TestParamInfo<Param>& i) {
    auto [from, to, freeze] = i.param;
    return std::string(prm::virtq_state_name(from)) + "To" + prm::virtq_state_name(to) +
           (freeze ? "FreezeCap" : "NoFreezeCap");
}

INSTANTIATE_TEST_SUITE_P(AllPairs, VqFsm,
                         ::testing::Combine(::testing::ValuesIn(kStates), ::testing::ValuesIn(kStates),
                                            ::testing::Bool()),
                         param_name);

using VqFsmFault = EmuTest;

TEST_F(VqFsmFault, DeviceErrorEntersErrFromEveryLiveState) {
    for (VirtqState s : {VirtqState::INIT, VirtqState::RDY, VirtqState::SUSPEND}) {
        Vq vq = virtq_in_state(s, uint16_t(s));
        ASSERT_TRUE(dev_->force_virtq_error(vq.id, 0x5));
        auto info = dev_->virtq_info(vq.id);
        EXPECT_EQ(info->state, VirtqState::ERR);
        EXPECT_EQ(info->error_type, 0x5);
    }
}

TEST_F(VqFsmFault, ErrIsTerminalButDestroyWorks) {
    Vq vq = virtq_in_state(VirtqState::ERR);
    EXPECT_FALSE(dev_->force_virtq_error(vq.id, 2));
    EXPECT_EQ(dev_->virtq_info(vq.id)->error_type, 1);  // unchanged
    prm::VirtqAttr q;
    ASSERT_EQ(query_virtq(vq, &q).rc, 0);
    EXPECT_EQ(q.state, VirtqState::ERR);
    EXPECT_EQ(q.error_type, 1);
    EXPECT_EQ(destroy_obj(vq.obj), 0);
}

TEST(VqFsmTable, ErrIsNeverATargetOfModify) {
    for (const VqEdge& e : kVqEdges) EXPECT_NE(e.to, VirtqState::ERR);
}

}  // namespace
}  // namespace mlx5async::emu::test
