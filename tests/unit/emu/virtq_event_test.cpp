// A virtq's event mode (QP: event_qpn_or_msix names a firmware QP, pinned
// while named) and its dirty bitmap mkey: each rule answers a PRM status and
// its syndrome, and a rejected command changes nothing.
#include <gtest/gtest.h>

#include "common/prm/mkey.hpp"
#include "event_qp_fixture.hpp"

namespace mlx5async::emu::test {
namespace {

using prm::EventMode;
using prm::Status;
using prm::VirtqState;
namespace mb = prm::modify_bits;
namespace syn = syndrome;

class VirtqEvent : public EventQpTest {
protected:
    void SetUp() override {
        EventQpTest::SetUp();
        cq_ = create_cq(cq_attr());
        fw_ = create_qp(fw_qp_attr());
        drv_ = create_qp(drv_qp_attr(cq_.id));
        ASSERT_TRUE(cq_.obj && fw_.obj && drv_.obj);
        connect(fw_, drv_);
    }
    prm::VirtqAttr qp_mode(uint16_t q, uint32_t qpn) {
        prm::VirtqAttr a = valid_attr(q);
        a.event_mode = EventMode::QP;
        a.event_qpn_or_msix = qpn;
        return a;
    }
    uint32_t refs(const Made& qp) { return dev_->qp_info(qp.id)->refs; }
    // A direct mkey over a fresh umem of `bytes`, addressed from `start`.
    uint32_t mkey(uint64_t start, size_t bytes) {
        HostBuf b = buffer(bytes);
        prm::MkeyAttr m = prm::direct_mkey_attr(b.umem, 0, start, b.size, pdn_);
        auto in = prm::encode_create_mkey(m);
        EXPECT_TRUE(in);
        std::vector<std::byte> out(prm::kCreateMkeyOutBytes);
        auto* o = A.obj_create(ctx_, in->data(), in->size(), out.data(), out.size());
        EXPECT_NE(o, nullptr);
        if (!o) return 0;
        objs_.push_back(o);
        return prm::mkey_value(*prm::decode_create_mkey_out(out), m.mkey_7_0);
    }
    Made cq_, fw_, drv_;
};

TEST_F(VirtqEvent, CreateInQpModeNamesAFirmwareQpOfTheContextAndPd) {
    expect_rule(create_virtq(qp_mode(0, fw_.id ^ 0x1000)).ret, Status::BAD_PARAM_ERR, syn::kVirtqEventQpUnknown);
    expect_rule(create_virtq(qp_mode(0, 0)).ret, Status::BAD_PARAM_ERR, syn::kVirtqEventQpUnknown);
    expect_rule(create_virtq(qp_mode(0, drv_.id)).ret, Status::BAD_PARAM_ERR, syn::kVirtqEventQpNotFirmware);
    ibv_pd* pd2 = A.alloc_pd(ctx_);
    Made fw2 = create_qp(fw_qp_attr(pd2->handle));
    ASSERT_TRUE(fw2.obj);
    expect_rule(create_virtq(qp_mode(0, fw2.id)).ret, Status::BAD_PARAM_ERR, syn::kVirtqEventQpOtherPd);
    EXPECT_EQ(dev_->virtq_count(), 0u);
    EXPECT_EQ(refs(fw_) + refs(drv_) + refs(fw2), 0u);
    Vq vq = create_virtq(qp_mode(0, fw_.id));
    ASSERT_TRUE(vq.obj);
    EXPECT_EQ(refs(fw_), 1u);
    prm::VirtqAttr q;
    ASSERT_EQ(query_virtq(vq, &q).rc, 0);
    EXPECT_EQ(q.event_mode, EventMode::QP);
    EXPECT_EQ(q.event_qpn_or_msix, fw_.id);
    EXPECT_EQ(destroy_obj(vq.obj), 0);
    EXPECT_EQ(refs(fw_), 0u);
    EXPECT_EQ(destroy_obj(fw2.obj), 0);
    A.dealloc_pd(pd2);
}

TEST_F(VirtqEvent, ModifyEventModeMovesThePinAndRejectionsChangeNothing) {
    Vq vq = create_virtq(valid_attr(0));  // NO_MSIX
    ASSERT_TRUE(vq.obj);
    prm::VirtqAttr a;
    a.event_mode = EventMode::QP;
    a.event_qpn_or_msix = drv_.id;
    auto before = *dev_->virtq_info(vq.id);
    expect_rule(modify_virtq(vq, a, mb::EVENT_MODE), Status::BAD_PARAM_ERR, syn::kVirtqEventQpNotFirmware);
    EXPECT_EQ(dev_->virtq_info(vq.id)->attr, before.attr);
    a.event_qpn_or_msix = fw_.id;
    ASSERT_EQ(modify_virtq(vq, a, mb::EVENT_MODE).rc, 0);
    EXPECT_EQ(refs(fw_), 1u);
    // RDY: the event mode is a non-state field (INIT/SUSPEND only).
    prm::VirtqAttr s;
    s.state = VirtqState::RDY;
    ASSERT_EQ(modify_virtq(vq, s, mb::STATE).rc, 0);
    prm::VirtqAttr back;
    back.event_mode = EventMode::NO_MSIX;
    expect_rule(modify_virtq(vq, back, mb::EVENT_MODE), Status::BAD_RES_STATE_ERR,
                syn::kFieldsOutsideInitSuspend);
    EXPECT_EQ(refs(fw_), 1u);
    s.state = VirtqState::SUSPEND;
    ASSERT_EQ(modify_virtq(vq, s, mb::STATE).rc, 0);
    ASSERT_EQ(modify_virtq(vq, back, mb::EVENT_MODE).rc, 0);
    EXPECT_EQ(refs(fw_), 0u);
    EXPECT_EQ(dev_->virtq_info(vq.id)->attr.event_mode, EventMode::NO_MSIX);
}

TEST_F(VirtqEvent, MsixAcceptedWhereTheCapsOfferIt) {
    ASSERT_TRUE(dev_->profile().virtio.event_mode & (1u << uint8_t(EventMode::MSIX)));  // cx7
    prm::VirtqAttr a = valid_attr(0);
    a.event_mode = EventMode::MSIX;
    a.event_qpn_or_msix = 3;
    Vq vq = create_virtq(a);
    EXPECT_TRUE(vq.obj) << std::hex << vq.ret.syndrome;
}

TEST_F(VirtqEvent, DirtyBitmapMkeyMustCoverTheBitmap) {
    Vq vq = create_virtq(valid_attr(0));
    ASSERT_TRUE(vq.obj);
    constexpr uint64_t kLog = 0x7f0000000000;
    uint32_t log_mkey = mkey(kLog, 8192);
    auto before = *dev_->virtq_info(vq.id);
    prm::VirtqAttr a;
    a.dirty_bitmap_mkey = log_mkey + 0x100;  // another index: no such mkey
    a.dirty_bitmap_addr = kLog;
    a.dirty_bitmap_size = 4096;
    a.vhost_log_page = 12;
    expect_rule(modify_virtq(vq, a, mb::DIRTY_BITMAP_PARAMS), Status::BAD_PARAM_ERR,
                syn::kVirtqDirtyMkeyUnknown);
    a.dirty_bitmap_mkey = 0;
    expect_rule(modify_virtq(vq, a, mb::DIRTY_BITMAP_PARAMS), Status::BAD_PARAM_ERR,
                syn::kVirtqDirtyMkeyUnknown);
    a.dirty_bitmap_mkey = log_mkey;
    a.dirty_bitmap_addr = kLog + 4097;  // [addr, addr + 4096) ends past the mkey
    expect_rule(modify_virtq(vq, a, mb::DIRTY_BITMAP_PARAMS), Status::BAD_PARAM_ERR,
                syn::kVirtqDirtyBitmapRange);
    EXPECT_EQ(dev_->virtq_info(vq.id)->attr, before.attr);
    a.dirty_bitmap_addr = kLog + 4096;
    EXPECT_EQ(modify_virtq(vq, a, mb::DIRTY_BITMAP_PARAMS).rc, 0);
    EXPECT_EQ(dev_->virtq_info(vq.id)->attr.dirty_bitmap_mkey, log_mkey);
    prm::VirtqAttr none;  // mkey 0, size 0: no bitmap
    EXPECT_EQ(modify_virtq(vq, none, mb::DIRTY_BITMAP_PARAMS).rc, 0);
    // Not checked without the bit.
    a.dirty_bitmap_mkey = 0x12345;
    EXPECT_EQ(modify_virtq(vq, a, mb::DIRTY_BITMAP_DUMP_ENABLE).rc, 0);
}

}  // namespace
}  // namespace mlx5async::emu::test
