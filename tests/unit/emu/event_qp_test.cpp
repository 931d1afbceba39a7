// CREATE/DESTROY_CQ, CREATE/DESTROY_QP and the RC transitions: each rule
// answers a PRM status and its syndrome with nothing changed; pins keep the
// interrupt path of a virtq alive; context close removes everything.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "emu/dispatch.hpp"
#include "event_qp_fixture.hpp"

namespace mlx5async::emu::test {
namespace {

using prm::QpTransition;
using prm::Status;
namespace syn = syndrome;

class EventQp : public EventQpTest {
protected:
    // A second context of the same device (foreign objects).
    ibv_context* other_ctx() {
        mlx5dv_context_attr attr{};
        attr.flags = MLX5DV_CONTEXT_FLAGS_DEVX;
        other_ = A.open_device(dev_->ibv(), &attr);
        EXPECT_NE(other_, nullptr);
        return other_;
    }
    void TearDown() override {
        if (other_) A.close_device(other_);
        EventQpTest::TearDown();
    }
    ObjectCounts counts() { return dev_->object_counts(); }
    ibv_context* other_ = nullptr;
};

TEST_F(EventQp, QueryEqnGivesCompletionEqsAndRejectsOthers) {
    std::set<uint32_t> eqns;
    for (uint32_t v = 0; v < kCompVectors; ++v) {
        uint32_t eqn = 0;
        ASSERT_EQ(A.query_eqn(ctx_, v, &eqn), 0);
        eqns.insert(eqn);
    }
    EXPECT_EQ(eqns.size(), size_t(kCompVectors));
    uint32_t eqn = 0;
    EXPECT_EQ(A.query_eqn(ctx_, kCompVectors, &eqn), EINVAL);
    EXPECT_EQ(A.query_eqn(nullptr, 0, &eqn), EINVAL);
    EXPECT_EQ(A.query_eqn(ctx_, 0, nullptr), EINVAL);
}

TEST_F(EventQp, CqPinsItsUmemAndUar) {
    prm::CqAttr a = cq_attr();
    Made cq = create_cq(a);
    ASSERT_TRUE(cq.obj) << std::hex << cq.ret.syndrome;
    EXPECT_EQ(A.umem_dereg(umems_.back()), EBUSY);
    EXPECT_EQ(destroy_obj(cq.obj), 0);
    EXPECT_EQ(A.umem_dereg(umems_.back()), 0);
    umems_.pop_back();
}

struct Rule {
    const char* name;
    Status status;
    uint32_t syndrome;
};

TEST_F(EventQp, CqRulesAnswerStatusAndSyndromeAndChangeNothing) {
    HostBuf foreign = buffer(4096, other_ctx());
    mlx5dv_devx_uar* foreign_uar = A.alloc_uar(other_, MLX5DV_UAR_ALLOC_TYPE_NC);
    ASSERT_NE(foreign_uar, nullptr);
    struct Case {
        Rule r;
        std::function<void(prm::CqAttr&)> bad;
    };
    const Case cases[] = {
        {{"cqe_sz", Status::BAD_PARAM_ERR, syn::kCqCqeSize}, [](auto& a) { a.cqe_sz = 1; }},
        {{"log_cq_size", Status::BAD_PARAM_ERR, syn::kCqLogSize}, [](auto& a) { a.log_cq_size = 23; }},
        {{"no umem", Status::BAD_PARAM_ERR, syn::kCqNoUmem}, [](auto& a) { a.cq_umem_valid = false; }},
        {{"uar", Status::BAD_PARAM_ERR, syn::kCqBadUar}, [](auto& a) { a.uar_page ^= 0x1000; }},
        {{"foreign uar", Status::BAD_PARAM_ERR, syn::kCqBadUar},
         [&](auto& a) { a.uar_page = foreign_uar->page_id; }},
        {{"umem unknown", Status::BAD_RES_ERR, syn::kCqUmemUnknown}, [](auto& a) { a.cq_umem_id ^= 0x1000; }},
        {{"umem foreign", Status::BAD_RES_ERR, syn::kCqUmemUnknown},
         [&](auto& a) { a.cq_umem_id = foreign.umem; }},
        {{"umem small", Status::BAD_PARAM_ERR, syn::kCqUmemRange}, [](auto& a) { a.log_cq_size = 7; }},
        {{"buffer align", Status::BAD_PARAM_ERR, syn::kCqBufAlign}, [](auto& a) { a.cq_umem_offset = 32; }},
        {{"dbr unknown", Status::BAD_RES_ERR, syn::kCqDbrUmemUnknown}, [](auto& a) { a.dbr_umem_id ^= 0x1000; }},
        {{"dbr range", Status::BAD_PARAM_ERR, syn::kCqDbrRange}, [](auto& a) { a.dbr_addr = 4092; }},
        {{"dbr align", Status::BAD_PARAM_ERR, syn::kCqDbrAlign}, [](auto& a) { a.dbr_addr += 4; }},
    };
    auto before = counts();
    for (const Case& c : cases) {
        prm::CqAttr a = cq_attr();
        c.bad(a);
        Made cq = create_cq(a);
        EXPECT_FALSE(cq.obj) << c.r.name;
        expect_rule(cq.ret, c.r.status, c.r.syndrome);
    }
    std::vector<std::byte> in(prm::kCreateCqInBytes);
    ASSERT_TRUE(prm::encode_create_cq(cq_attr(), in));
    in[8] = std::byte{1};  // reserved_at_40
    expect_rule(create(in).ret, Status::BAD_PARAM_ERR, syn::kReservedNonZero);
    // An EQ that is no completion EQ: the kernel's lookup (mlx5_eqn2comp_eq)
    // fails first with ENOENT; the firmware's own rule is kCqBadEqn.
    for (uint32_t eqn : {kFirstCompEqn - 1, kFirstCompEqn + kCompVectors}) {
        prm::CqAttr a = cq_attr();
        a.c_eqn = eqn;
        Made cq = create_cq(a);
        EXPECT_FALSE(cq.obj);
        EXPECT_EQ(cq.ret.rc, ENOENT);
        ASSERT_TRUE(prm::encode_create_cq(a, in));
        std::vector<std::byte> out(prm::kEventQpCmdBytes);
        Mailbox m{in, out, 1, 0};
        DispatchResult r = dispatch(dev_->state(), m);
        EXPECT_EQ(r.status, uint8_t(Status::BAD_PARAM_ERR));
        EXPECT_EQ(r.syndrome, syn::kCqBadEqn);
    }
    auto after = counts();
    EXPECT_EQ(after.cqs, before.cqs);
    for (mlx5dv_devx_umem* u : umems_) EXPECT_EQ(dev_->umem_info(u->umem_id)->refs, 0u);
    A.free_uar(foreign_uar);
}

TEST_F(EventQp, QpRulesAnswerStatusAndSyndromeAndChangeNothing) {
    Made cq = create_cq(cq_attr());
    ASSERT_TRUE(cq.obj);
    ibv_pd* other_pd = A.alloc_pd(other_ctx());
    ASSERT_NE(other_pd, nullptr);
    struct Case {
        Rule r;
        bool firmware;
        std::function<void(prm::QpAttr&)> bad;
    };
    const Case cases[] = {
        {{"st", Status::BAD_PARAM_ERR, syn::kQpServiceType}, true, [](auto& a) { a.st = 1; }},
        {{"pd", Status::BAD_RES_ERR, syn::kQpBadPd}, true, [](auto& a) { a.pd ^= 0x1000; }},
        {{"foreign pd", Status::BAD_RES_ERR, syn::kQpBadPd}, true,
         [&](auto& a) { a.pd = other_pd->handle; }},
        {{"rq_type", Status::BAD_PARAM_ERR, syn::kQpRqType}, true, [](auto& a) { a.rq_type = 1; }},
        {{"fw with cq", Status::BAD_PARAM_ERR, syn::kQpFirmwareShape}, true,
         [&](auto& a) { a.cqn_rcv = cq.id; }},
        {{"fw with sq", Status::BAD_PARAM_ERR, syn::kQpFirmwareShape}, true, [](auto& a) { a.no_sq = false; }},
        {{"sq", Status::BAD_PARAM_ERR, syn::kQpSqUnsupported}, false, [](auto& a) { a.no_sq = false; }},
        {{"uar", Status::BAD_PARAM_ERR, syn::kQpBadUar}, false, [](auto& a) { a.uar_page ^= 0x1000; }},
        {{"cq", Status::BAD_PARAM_ERR, syn::kQpBadCq}, false, [](auto& a) { a.cqn_rcv ^= 0x1000; }},
        {{"snd cq", Status::BAD_PARAM_ERR, syn::kQpBadCq}, false, [](auto& a) { a.cqn_snd = 5; }},
        {{"no umem", Status::BAD_PARAM_ERR, syn::kQpNoUmem}, false, [](auto& a) { a.wq_umem_valid = false; }},
        {{"umem unknown", Status::BAD_RES_ERR, syn::kQpUmemUnknown}, false, [](auto& a) { a.wq_umem_id ^= 0x1000; }},
        {{"umem small", Status::BAD_PARAM_ERR, syn::kQpUmemRange}, false, [](auto& a) { a.log_rq_size = 9; }},
        {{"dbr unknown", Status::BAD_RES_ERR, syn::kQpDbrUmemUnknown}, false, [](auto& a) { a.dbr_umem_id ^= 0x1000; }},
        {{"dbr range", Status::BAD_PARAM_ERR, syn::kQpDbrRange}, false, [](auto& a) { a.dbr_addr = 4092; }},
        {{"dbr align", Status::BAD_PARAM_ERR, syn::kQpDbrAlign}, false, [](auto& a) { a.dbr_addr += 2; }},
    };
    auto before = counts();
    for (const Case& c : cases) {
        prm::QpAttr a = c.firmware ? fw_qp_attr() : drv_qp_attr(cq.id);
        c.bad(a);
        Made qp = create_qp(a);
        EXPECT_FALSE(qp.obj) << c.r.name;
        expect_rule(qp.ret, c.r.status, c.r.syndrome);
    }
    std::vector<std::byte> in(prm::kCreateQpInBytes);
    ASSERT_TRUE(prm::encode_create_qp(fw_qp_attr(), in));
    in[8] = std::byte{1};  // reserved_at_40
    expect_rule(create(in).ret, Status::BAD_PARAM_ERR, syn::kReservedNonZero);
    EXPECT_EQ(counts().qps, before.qps);
    EXPECT_EQ(dev_->cq_info(cq.id)->refs, 0u);
    A.dealloc_pd(other_pd);
}

TEST_F(EventQp, TransitionsFollowTheRcOrderAndNameAPeer) {
    Made cq = create_cq(cq_attr());
    Made fw = create_qp(fw_qp_attr());
    Made drv = create_qp(drv_qp_attr(cq.id));
    ASSERT_TRUE(fw.obj && drv.obj);
    EXPECT_TRUE(dev_->qp_info(fw.id)->firmware);
    EXPECT_FALSE(dev_->qp_info(drv.id)->firmware);
    expect_rule(modify_qp(fw, QpTransition::RTR2RTS), Status::BAD_RES_STATE_ERR, syn::kQpBadState);
    expect_rule(modify_qp(fw, QpTransition::INIT2RTR, drv.id), Status::BAD_RES_STATE_ERR, syn::kQpBadState);
    ASSERT_EQ(modify_qp(fw, QpTransition::RST2INIT).rc, 0);
    expect_rule(modify_qp(fw, QpTransition::RST2INIT), Status::BAD_RES_STATE_ERR, syn::kQpBadState);
    expect_rule(modify_qp(fw, QpTransition::INIT2RTR, fw.id), Status::BAD_PARAM_ERR, syn::kQpRemoteSelf);
    expect_rule(modify_qp(fw, QpTransition::INIT2RTR, drv.id ^ 0x1000), Status::BAD_PARAM_ERR,
                syn::kQpRemoteUnknown);
    // A QP of another PD, and one of another context.
    ibv_pd* pd2 = A.alloc_pd(ctx_);
    Made fw2 = create_qp(fw_qp_attr(pd2->handle));
    ASSERT_TRUE(fw2.obj);
    expect_rule(modify_qp(fw, QpTransition::INIT2RTR, fw2.id), Status::BAD_PARAM_ERR, syn::kQpRemoteOtherPd);
    ibv_context* c2 = other_ctx();
    ibv_pd* opd = A.alloc_pd(c2);
    mlx5dv_obj o{};
    mlx5dv_pd dvpd{};
    o.pd.in = opd;
    o.pd.out = &dvpd;
    ASSERT_EQ(A.init_obj(&o, MLX5DV_OBJ_PD), 0);
    Made foreign = create_qp(fw_qp_attr(dvpd.pdn), c2);
    ASSERT_TRUE(foreign.obj);
    expect_rule(modify_qp(fw, QpTransition::INIT2RTR, foreign.id), Status::BAD_PARAM_ERR,
                syn::kQpRemoteOtherContext);
    auto info = dev_->qp_info(fw.id);
    EXPECT_EQ(info->state, prm::QpState::INIT);  // every rejection left it as it was
    EXPECT_EQ(info->remote_qpn, 0u);
    ASSERT_EQ(modify_qp(drv, QpTransition::RST2INIT).rc, 0);
    for (QpTransition t : {QpTransition::INIT2RTR, QpTransition::RTR2RTS}) {
        ASSERT_EQ(modify_qp(fw, t, drv.id).rc, 0);
        ASSERT_EQ(modify_qp(drv, t, fw.id).rc, 0);
    }
    EXPECT_EQ(dev_->qp_info(fw.id)->state, prm::QpState::RTS);
    EXPECT_EQ(dev_->qp_info(fw.id)->remote_qpn, drv.id);
    EXPECT_EQ(dev_->qp_info(drv.id)->remote_qpn, fw.id);
    EXPECT_EQ(destroy_obj(fw2.obj), 0);
    A.dealloc_pd(pd2);
    A.obj_destroy(foreign.obj);
    A.dealloc_pd(opd);
}

TEST_F(EventQp, KernelChecksOfQpCommands) {
    Made a = create_qp(fw_qp_attr());
    Made b = create_qp(fw_qp_attr());
    ASSERT_TRUE(a.obj && b.obj);
    // The qpn in the command must be the handle's own (devx_is_valid_obj_id).
    prm::QpModify m;
    m.qpn = b.id;
    std::vector<std::byte> in(prm::kQpModifyInBytes), out(prm::kEventQpCmdBytes);
    ASSERT_TRUE(prm::encode_qp_modify(m, in));
    EXPECT_EQ(A.obj_modify(a.obj, in.data(), in.size(), out.data(), out.size()), EINVAL);
    EXPECT_EQ(dev_->qp_info(b.id)->state, prm::QpState::RST);
    // No general-object command on a QP; no QP command through general_cmd.
    std::vector<std::byte> q(prm::kGeneralObjInHdrBytes);
    prm::set_bits(q, 0, 16, uint16_t(prm::Opcode::QUERY_GENERAL_OBJECT));
    prm::set_bits(q, 64, 32, a.id);
    EXPECT_EQ(A.obj_query(a.obj, q.data(), q.size(), out.data(), out.size()), EINVAL);
    std::vector<std::byte> c(prm::kCreateQpInBytes);
    ASSERT_TRUE(prm::encode_create_qp(fw_qp_attr(), c));
    EXPECT_EQ(A.general_cmd(ctx_, c.data(), c.size(), out.data(), out.size()), EINVAL);
    // Completion events only on CQs, OBJECT_CHANGE not on them.
    Made cq = create_cq(cq_attr());
    auto* ch = A.create_event_channel(ctx_, mlx5dv_devx_create_event_channel_flags(0));
    uint16_t comp[] = {prm::kEventCompletion}, change[] = {prm::kEventObjectChange};
    EXPECT_EQ(A.subscribe_devx_event(ch, cq.obj, sizeof comp, comp, 1), 0);
    EXPECT_EQ(A.subscribe_devx_event(ch, cq.obj, sizeof change, change, 1), EINVAL);
    EXPECT_EQ(A.subscribe_devx_event(ch, a.obj, sizeof comp, comp, 1), EINVAL);
    A.destroy_event_channel(ch);
}

// The interrupt path of a virtq: virtq -> firmware QP <-> driver QP -> CQ ->
// umems + UAR. Nothing in it can go while the virtq uses it.
TEST_F(EventQp, PinsKeepAVirtqsInterruptPath) {
    Made cq = create_cq(cq_attr());
    Made fw = create_qp(fw_qp_attr());
    Made drv = create_qp(drv_qp_attr(cq.id));
    ASSERT_TRUE(cq.obj && fw.obj && drv.obj);
    connect(fw, drv);
    prm::VirtqAttr a = valid_attr(0);
    a.event_mode = prm::EventMode::QP;
    a.event_qpn_or_msix = fw.id;
    Vq vq = create_virtq(a);
    ASSERT_TRUE(vq.obj) << std::hex << vq.ret.syndrome;
    EXPECT_EQ(dev_->qp_info(fw.id)->refs, 1u);
    EXPECT_EQ(destroy_obj(cq.obj), EBUSY);
    EXPECT_EQ(destroy_obj(fw.obj), EBUSY);
    EXPECT_EQ(destroy_obj(drv.obj), EBUSY);  // connected to the virtq's firmware QP
    A.free_uar(uar_);                        // void: the handle goes, the UAR stays (RES_BUSY)
    uar_ = nullptr;
    EXPECT_EQ(dev_->object_counts().uars, 1u);
    EXPECT_EQ(destroy_obj(vq.obj), 0);
    EXPECT_EQ(dev_->qp_info(fw.id)->refs, 0u);
    EXPECT_EQ(destroy_obj(cq.obj), EBUSY);  // still the driver QP's
    EXPECT_EQ(destroy_obj(drv.obj), 0);     // DPDK's order: SW QP, FW QP, CQ
    EXPECT_EQ(destroy_obj(fw.obj), 0);
    EXPECT_EQ(destroy_obj(cq.obj), 0);
}

TEST_F(EventQp, ContextCloseRemovesCqsAndQps) {
    auto before = dev_->object_counts();
    ibv_context* c2 = other_ctx();
    ibv_pd* pd = A.alloc_pd(c2);
    mlx5dv_obj o{};
    mlx5dv_pd dvpd{};
    o.pd.in = pd;
    o.pd.out = &dvpd;
    ASSERT_EQ(A.init_obj(&o, MLX5DV_OBJ_PD), 0);
    mlx5dv_devx_uar* uar = A.alloc_uar(c2, MLX5DV_UAR_ALLOC_TYPE_NC);
    HostBuf b = buffer(8192, c2);
    prm::CqAttr ca;
    ca.log_cq_size = 4;
    ca.uar_page = uar->page_id;
    ca.c_eqn = eqn_;
    ca.cq_umem_valid = ca.dbr_umem_valid = true;
    ca.cq_umem_id = ca.dbr_umem_id = b.umem;
    ca.dbr_addr = 4096;
    Made cq = create_cq(ca, c2);
    ASSERT_TRUE(cq.obj) << std::hex << cq.ret.syndrome;
    Made fw = create_qp(fw_qp_attr(dvpd.pdn), c2);
    ASSERT_TRUE(fw.obj);
    EXPECT_EQ(dev_->object_counts().cqs, before.cqs + 1);
    ASSERT_EQ(A.close_device(c2), 0);
    other_ = nullptr;
    auto after = dev_->object_counts();
    EXPECT_EQ(after.cqs, before.cqs);
    EXPECT_EQ(after.qps, before.qps);
    EXPECT_EQ(after.uars, before.uars);
    EXPECT_EQ(after.umems, before.umems);
    // Handles of a closed context are only freed.
    EXPECT_EQ(A.obj_destroy(cq.obj), 0);
    EXPECT_EQ(A.obj_destroy(fw.obj), 0);
    A.free_uar(uar);
    A.dealloc_pd(pd);
}

}  // namespace
}  // namespace mlx5async::emu::test
