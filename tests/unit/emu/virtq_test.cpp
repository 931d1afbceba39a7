// VIRTIO_NET_Q CREATE / MODIFY / QUERY / DESTROY through emu::api().
#include "emu_fixture.hpp"

#include <cerrno>

#include "mlx5emu.h"

namespace mlx5async::emu::test {
namespace {

using prm::VirtqState;
namespace mb = prm::modify_bits;

using Virtq = EmuTest;

TEST_F(Virtq, CreateStartsInInitAndQueryReturnsStoredContext) {
    auto a = valid_attr(3);
    a.desc_addr = 0x1000;
    a.used_addr = 0x2000;
    a.available_addr = 0x3000;
    a.hw_available_index = 7;
    a.hw_used_index = 5;
    Vq vq = create_virtq(a);
    ASSERT_EQ(vq.ret.rc, 0);
    ASSERT_NE(vq.id, 0u);
    prm::VirtqAttr q;
    ASSERT_EQ(query_virtq(vq, &q).rc, 0);
    EXPECT_EQ(q.state, VirtqState::INIT);
    EXPECT_EQ(q.queue_index, 3);
    EXPECT_EQ(q.desc_addr, 0x1000u);
    EXPECT_EQ(q.used_addr, 0x2000u);
    EXPECT_EQ(q.available_addr, 0x3000u);
    EXPECT_EQ(q.hw_available_index, 7);
    EXPECT_EQ(q.hw_used_index, 5);
    EXPECT_EQ(q.umem[0].id, a.umem[0].id);
    EXPECT_EQ(q.pd, pdn_);
}

TEST_F(Virtq, SuspendThenQueryHandsBackAdvancedIndexes) {
    Vq vq = virtq_in_state(VirtqState::RDY);
    ASSERT_TRUE(dev_->advance_virtq(vq.id, 10, 8));
    prm::VirtqAttr a;
    a.state = VirtqState::SUSPEND;
    ASSERT_EQ(modify_virtq(vq, a, mb::STATE).rc, 0);
    prm::VirtqAttr q;
    ASSERT_EQ(query_virtq(vq, &q).rc, 0);
    EXPECT_EQ(q.state, VirtqState::SUSPEND);
    EXPECT_EQ(q.hw_available_index, 10);
    EXPECT_EQ(q.hw_used_index, 8);
}

TEST_F(Virtq, IndexesSettableInSuspendViaModifyBits7And8) {
    Vq vq = virtq_in_state(VirtqState::SUSPEND);
    prm::VirtqAttr a;
    a.hw_available_index = 300;
    a.hw_used_index = 299;
    ASSERT_EQ(modify_virtq(vq, a, mb::VIRTIO_Q_AVAIL_IDX | mb::VIRTIO_Q_USED_IDX).rc, 0);
    auto info = dev_->virtq_info(vq.id);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->hw_available_index, 300);
    EXPECT_EQ(info->hw_used_index, 299);
}

TEST_F(Virtq, ModifyAppliesOnlySelectedFields) {
    Vq vq = virtq_in_state(VirtqState::INIT);
    prm::VirtqAttr a;
    a.desc_addr = 0xd000;
    a.used_addr = 0xe000;
    a.available_addr = 0xf000;
    a.hw_available_index = 55;  // not selected: ignored
    ASSERT_EQ(modify_virtq(vq, a, mb::VIRTIO_Q_ADDRS).rc, 0);
    auto info = dev_->virtq_info(vq.id);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->attr.desc_addr, 0xd000u);
    EXPECT_EQ(info->attr.available_addr, 0xf000u);
    EXPECT_EQ(info->hw_available_index, 0);
}

TEST_F(Virtq, DestroyReleasesAndStaleIdFails) {
    Vq vq = virtq_in_state(VirtqState::RDY);
    uint32_t id = vq.id;
    ASSERT_EQ(destroy_obj(vq.obj), 0);
    auto info = dev_->virtq_info(id);
    ASSERT_FALSE(info);
    EXPECT_EQ(info.error().fw_status, uint8_t(prm::Status::BAD_RES_ERR));
    // A new virtq reuses storage but not the id.
    Vq other = create_virtq(valid_attr(0));
    ASSERT_EQ(other.ret.rc, 0);
    EXPECT_NE(other.id, id);
    EXPECT_FALSE(dev_->virtq_info(id));
}

TEST_F(Virtq, EmulatorApiCountsTheObjectsTheDeviceHolds) {
    mlx5emu_objects before{};
    ASSERT_EQ(mlx5emu_get_objects(name_.c_str(), &before), 0);
    EXPECT_EQ(before.pds, 1u);  // the fixture's
    EXPECT_EQ(before.virtqs, 0u);
    Vq vq = create_virtq(valid_attr(0));
    ASSERT_EQ(vq.ret.rc, 0);
    mlx5emu_objects with{};
    ASSERT_EQ(mlx5emu_get_objects(name_.c_str(), &with), 0);
    EXPECT_EQ(with.virtqs, 1u);
    EXPECT_EQ(with.umems, before.umems + 3) << "a virtq's three umems";
    ASSERT_EQ(destroy_obj(vq.obj), 0);
    mlx5emu_objects after{};
    ASSERT_EQ(mlx5emu_get_objects(name_.c_str(), &after), 0);
    EXPECT_EQ(after.virtqs, 0u);
    EXPECT_EQ(mlx5emu_get_objects("no-such-device", &after), -ENOENT);
    EXPECT_EQ(mlx5emu_get_objects(name_.c_str(), nullptr), -ENOENT);
}

TEST_F(Virtq, KicksWhileSuspendedAreReplayedOnResume) {
    Vq vq = virtq_in_state(VirtqState::SUSPEND);
    ASSERT_TRUE(dev_->kick(vq.id));
    ASSERT_TRUE(dev_->kick(vq.id));
    auto before = dev_->virtq_info(vq.id);
    EXPECT_EQ(before->kicks.pending, 2u);
    EXPECT_EQ(before->kicks.delivered, 0u);
    prm::VirtqAttr a;
    a.state = VirtqState::RDY;
    ASSERT_EQ(modify_virtq(vq, a, mb::STATE).rc, 0);  // cx7: freeze_to_rdy
    auto after = dev_->virtq_info(vq.id);
    EXPECT_EQ(after->kicks.pending, 0u);
    EXPECT_EQ(after->kicks.replayed, 2u);
    EXPECT_EQ(after->kicks.delivered, 2u);
    ASSERT_TRUE(dev_->kick(vq.id));
    EXPECT_EQ(dev_->virtq_info(vq.id)->kicks.delivered, 3u);
}

TEST_F(Virtq, AdvanceOnlyInRdy) {
    Vq vq = virtq_in_state(VirtqState::SUSPEND);
    EXPECT_FALSE(dev_->advance_virtq(vq.id, 1, 1));
}

TEST_F(Virtq, CountersPinnedByVirtqCannotBeDestroyed) {
    std::vector<std::byte> in(prm::kCountersCreateInBytes), out(prm::kGeneralObjOutHdrBytes);
    prm::encode_create_counters(in);
    auto* c = A.obj_create(ctx_, in.data(), in.size(), out.data(), out.size());
    ASSERT_NE(c, nullptr);
    auto a = valid_attr(0);
    a.counter_set_id = uint32_t(prm::get_bits(out, 64, 32));
    Vq vq = create_virtq(a);
    ASSERT_EQ(vq.ret.rc, 0);
    EXPECT_EQ(A.obj_destroy(c), EBUSY);  // RES_BUSY -> EBUSY as mlx5_cmd_exec
    ASSERT_EQ(destroy_obj(vq.obj), 0);
    EXPECT_EQ(A.obj_destroy(c), 0);
}

TEST_F(Virtq, QueryCountersReturnsStoredValues) {
    std::vector<std::byte> in(prm::kCountersCreateInBytes), out(prm::kGeneralObjOutHdrBytes);
    prm::encode_create_counters(in);
    auto* c = A.obj_create(ctx_, in.data(), in.size(), out.data(), out.size());
    ASSERT_NE(c, nullptr);
    uint32_t id = uint32_t(prm::get_bits(out, 64, 32));
    std::vector<std::byte> qin(prm::kGeneralObjInHdrBytes), qout(prm::kCountersQueryOutBytes);
    prm::encode_query_counters(id, qin);
    ASSERT_EQ(A.obj_query(c, qin.data(), qin.size(), qout.data(), qout.size()), 0);
    auto v = prm::decode_query_counters_out(qout, id);
    ASSERT_TRUE(v);
    EXPECT_EQ(*v, prm::VirtqCounters{});
    prm::VirtqCounters set{10, 9, 1, 2, 3, 4};
    ASSERT_TRUE(dev_->set_virtq_counters(id, set));
    ASSERT_EQ(A.obj_query(c, qin.data(), qin.size(), qout.data(), qout.size()), 0);
    EXPECT_EQ(*prm::decode_query_counters_out(qout, id), set);
    EXPECT_EQ(A.obj_destroy(c), 0);
}

}  // namespace
}  // namespace mlx5async::emu::test

namespace mlx5async::emu::test {
namespace {

TEST_F(Virtq, FoundByQueueIndex) {
    Vq a = virtq_in_state(prm::VirtqState::INIT, 4);
    Vq b = virtq_in_state(prm::VirtqState::INIT, 5);
    EXPECT_EQ(dev_->virtqs_of_queue(4), std::vector<uint32_t>{a.id});
    EXPECT_EQ(dev_->virtqs_of_queue(5), std::vector<uint32_t>{b.id});
    EXPECT_TRUE(dev_->virtqs_of_queue(6).empty());
}

}  // namespace
}  // namespace mlx5async::emu::test
