// Fault injection: each kind of rule, and forcing a virtq into ERR.
#include <fcntl.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "testkit/eventually.hpp"
#include "emu_fixture.hpp"

namespace mlx5async::emu::test {
namespace {

using namespace std::chrono_literals;
using prm::Status;
using prm::VirtqState;
namespace mb = prm::modify_bits;

constexpr auto kDeadline = 10s;
constexpr uint16_t kModify = uint16_t(prm::Opcode::MODIFY_GENERAL_OBJECT);
constexpr uint16_t kQuery = uint16_t(prm::Opcode::QUERY_GENERAL_OBJECT);
constexpr uint16_t kVirtq = uint16_t(prm::ObjType::VIRTIO_NET_Q);

using Faults = EmuTest;

// Every command on `obj` (nth 0) or only its nth one never answered.
FaultRule hang_rule(uint32_t obj, uint32_t nth = 0) {
    FaultRule r;
    r.match.obj_id = obj;
    r.match.nth = nth;
    r.action = FaultAction::Hang;
    return r;
}

FaultRule fail_rule(uint8_t status, uint32_t syn) {
    FaultRule r;
    r.action = FaultAction::Fail;
    r.status = status;
    r.syndrome = syn;
    return r;
}


TEST_F(Faults, FailNthCommandOnly) {
    Vq a = virtq_in_state(VirtqState::INIT, 0);
    Vq b = virtq_in_state(VirtqState::INIT, 1);
    FaultRule r = fail_rule(uint8_t(Status::INT_ERR), 0xdead);
    r.match.nth = 2;  // the 2nd command from now, whatever it is
    dev_->faults().add(r);
    prm::VirtqAttr s;
    s.state = VirtqState::RDY;
    EXPECT_EQ(modify_virtq(a, s, mb::STATE).rc, 0);
    CmdRet second = modify_virtq(b, s, mb::STATE);
    EXPECT_EQ(second.rc, EREMOTEIO);
    EXPECT_EQ(second.status, uint8_t(Status::INT_ERR));
    EXPECT_EQ(second.syndrome, 0xdeadu);
    EXPECT_EQ(state_of(b), VirtqState::INIT);  // not executed
    EXPECT_EQ(modify_virtq(b, s, mb::STATE).rc, 0);
}

TEST_F(Faults, FailEveryCommandOfOpcodeAndType) {
    Vq vq = virtq_in_state(VirtqState::RDY);
    FaultRule r = fail_rule(uint8_t(Status::BAD_SYS_STATE_ERR), 0x42);
    r.match.opcode = kModify;
    r.match.obj_type = kVirtq;
    uint32_t id = dev_->faults().add(r);
    prm::VirtqAttr s;
    s.state = VirtqState::SUSPEND;
    for (int i = 0; i < 3; ++i) EXPECT_EQ(modify_virtq(vq, s, mb::STATE).status, 0x4);
    EXPECT_EQ(query_virtq(vq, nullptr).rc, 0);  // other opcodes unaffected
    EXPECT_EQ(state_of(vq), VirtqState::RDY);
    dev_->faults().remove(id);
    EXPECT_EQ(modify_virtq(vq, s, mb::STATE).rc, 0);
}

TEST_F(Faults, FailCommandsOnOneObject) {
    Vq a = virtq_in_state(VirtqState::INIT, 0);
    Vq b = virtq_in_state(VirtqState::INIT, 1);
    FaultRule r = fail_rule(uint8_t(Status::BAD_RES_STATE_ERR), 0x77);
    r.match.obj_id = b.id;
    dev_->faults().add(r);
    prm::VirtqAttr s;
    s.state = VirtqState::RDY;
    EXPECT_EQ(modify_virtq(a, s, mb::STATE).rc, 0);
    EXPECT_EQ(modify_virtq(b, s, mb::STATE).syndrome, 0x77u);
    EXPECT_EQ(query_virtq(b, nullptr).syndrome, 0x77u);
}

TEST_F(Faults, BusyReturnsEbusyWithoutExecuting) {
    Vq vq = virtq_in_state(VirtqState::INIT);
    FaultRule r;
    r.match.opcode = kModify;
    r.action = FaultAction::Busy;
    dev_->faults().add(r);
    prm::VirtqAttr s;
    s.state = VirtqState::RDY;
    EXPECT_EQ(modify_virtq(vq, s, mb::STATE).rc, EBUSY);
    EXPECT_EQ(state_of(vq), VirtqState::INIT);
    auto* cc = A.create_cmd_comp(ctx_);
    std::vector<std::byte> in(16);
    prm::encode_query_virtq(vq.id, in);
    r.match.opcode = kQuery;
    dev_->faults().add(r);
    EXPECT_EQ(A.obj_query_async(vq.obj, in.data(), in.size(), prm::kVirtqQueryOutBytes, 1, cc), EBUSY);
    A.destroy_cmd_comp(cc);
}

TEST_F(Faults, DelayHoldsCommandForExtraTime) {
    close_all();
    open_device(std::string("cx7,clock=manual,") + kZeroLatency);
    Vq vq = virtq_in_state(VirtqState::INIT);
    FaultRule r;
    r.match.opcode = kModify;
    r.action = FaultAction::Delay;
    r.extra_ns = 5'000'000;
    dev_->faults().add(r);
    uint64_t base = dev_->counters().completed;
    std::jthread t([&] {
        prm::VirtqAttr s;
        s.state = VirtqState::RDY;
        EXPECT_EQ(modify_virtq(vq, s, mb::STATE).rc, 0);
    });
    ASSERT_TRUE(dev_->wait_running(1, kDeadline));
    dev_->advance_clock(4ms);
    EXPECT_FALSE(dev_->wait_completed(base + 1, 20ms));
    dev_->advance_clock(1ms);
    EXPECT_TRUE(dev_->wait_completed(base + 1, kDeadline));
    t.join();
    EXPECT_EQ(state_of(vq), VirtqState::RDY);
}

TEST_F(Faults, HangEndsAtDeviceCloseBlockingWithEnxioAsyncFlushed) {
    Vq vq = virtq_in_state(VirtqState::RDY);
    dev_->faults().add(hang_rule(vq.id));
    auto* cc = A.create_cmd_comp(ctx_);
    ASSERT_NE(cc, nullptr);
    std::vector<std::byte> in(16);
    prm::encode_query_virtq(vq.id, in);
    ASSERT_EQ(A.obj_query_async(vq.obj, in.data(), in.size(), prm::kVirtqQueryOutBytes, 7, cc), 0);
    std::atomic<int> rc{-1};
    std::jthread t([&] {
        prm::VirtqAttr s;
        s.state = VirtqState::SUSPEND;
        rc = modify_virtq(vq, s, mb::STATE).rc;
    });
    ASSERT_TRUE(dev_->wait_running(2, kDeadline));
    pollfd p{cc->fd, POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 20), 0);  // hung: nothing completes
    dev_->close();
    t.join();
    EXPECT_EQ(rc.load(), ENXIO);
    EXPECT_EQ(state_of(vq), VirtqState::RDY);
    alignas(8) std::byte buf[8 + prm::kVirtqQueryOutBytes];
    auto* hdr = reinterpret_cast<mlx5dv_devx_async_cmd_hdr*>(buf);
    ASSERT_EQ(A.get_async_cmd_comp(cc, hdr, sizeof buf), 0);  // flushed, not lost
    EXPECT_EQ(hdr->wr_id, 7u);
    auto out = std::span<const std::byte>(buf + 8, 16);
    EXPECT_EQ(prm::get_bits(out, 0, 8), uint8_t(Status::INT_ERR));
    EXPECT_EQ(prm::get_bits(out, 32, 32), syndrome::kFlushed);
    // Later commands fail at once.
    prm::VirtqAttr s;
    s.state = VirtqState::SUSPEND;
    EXPECT_EQ(modify_virtq(vq, s, mb::STATE).rc, ENXIO);
    A.destroy_cmd_comp(cc);
}

// A command the firmware never answers fails after the kernel's command
// timeout (mlx5_core: 60 s), blocking with ETIMEDOUT, async with a failed
// completion; its slot comes back, the object is unchanged, and the next
// command runs.
TEST_F(Faults, HangEndsAtTheKernelsCommandTimeout) {
    close_all();
    open_device(std::string("cx7,") + kZeroLatency + ",cmd_timeout_ms=50");
    Vq vq = virtq_in_state(VirtqState::RDY);
    const FaultRule r = hang_rule(vq.id, 1);
    dev_->faults().add(r);
    prm::VirtqAttr s;
    s.state = VirtqState::SUSPEND;
    EXPECT_EQ(modify_virtq(vq, s, mb::STATE).rc, ETIMEDOUT);
    EXPECT_EQ(state_of(vq), VirtqState::RDY);
    EXPECT_EQ(dev_->inflight(), 0u);
    dev_->faults().add(r);  // nth=1 again: the next command hangs
    auto* cc = A.create_cmd_comp(ctx_);
    ASSERT_NE(cc, nullptr);
    std::vector<std::byte> in(16);
    prm::encode_query_virtq(vq.id, in);
    ASSERT_EQ(A.obj_query_async(vq.obj, in.data(), in.size(), prm::kVirtqQueryOutBytes, 9, cc), 0);
    pollfd p{cc->fd, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 10000), 1);
    alignas(8) std::byte buf[8 + prm::kVirtqQueryOutBytes];
    auto* hdr = reinterpret_cast<mlx5dv_devx_async_cmd_hdr*>(buf);
    ASSERT_EQ(A.get_async_cmd_comp(cc, hdr, sizeof buf), 0);
    EXPECT_EQ(hdr->wr_id, 9u);
    EXPECT_NE(prm::get_bits(std::span<const std::byte>(buf + 8, 16), 0, 8), 0u);  // failed
    EXPECT_EQ(modify_virtq(vq, s, mb::STATE).rc, 0);  // the device goes on
    EXPECT_EQ(state_of(vq), VirtqState::SUSPEND);
    A.destroy_cmd_comp(cc);
}

// As uverbs' uobject lock: the handle of an object with a command in the
// kernel cannot be destroyed (EBUSY, the handle stays valid) until the
// command returned.
TEST_F(Faults, DestroyWhileACommandIsInTheKernelIsBusy) {
    close_all();
    open_device(std::string("cx7,") + kZeroLatency + ",cmd_timeout_ms=300");
    Vq vq = virtq_in_state(VirtqState::RDY);
    const FaultRule r = hang_rule(vq.id, 1);
    dev_->faults().add(r);
    prm::VirtqAttr s;
    s.state = VirtqState::SUSPEND;
    auto hung = std::async(std::launch::async, [&] { return modify_virtq(vq, s, mb::STATE).rc; });
    ASSERT_TRUE(mlx5async::testing::eventually([&] { return dev_->inflight() == 1; }));  // the MODIFY is in the kernel
    EXPECT_EQ(destroy_obj(vq.obj), EBUSY);
    EXPECT_EQ(hung.get(), ETIMEDOUT);
    EXPECT_EQ(state_of(vq), VirtqState::RDY);  // the handle still works
    EXPECT_EQ(destroy_obj(vq.obj), 0);
}

TEST_F(Faults, ForcedErrorVisibleInQuery) {
    Vq vq = virtq_in_state(VirtqState::RDY);
    ASSERT_TRUE(dev_->force_virtq_error(vq.id, 0x3));
    prm::VirtqAttr q;
    ASSERT_EQ(query_virtq(vq, &q).rc, 0);
    EXPECT_EQ(q.state, VirtqState::ERR);
    EXPECT_EQ(q.error_type, 0x3);
    EXPECT_FALSE(dev_->force_virtq_error(0x600123, 1));  // unknown id
}

}  // namespace
}  // namespace mlx5async::emu::test
