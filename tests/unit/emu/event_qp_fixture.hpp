// Event-QP objects for the emulator tests: a UAR, the completion EQ, a CQ in
// a umem, the firmware QP and the driver's RC QP (DPDK mlx5_vdpa_event.c
// shapes), built with the PRM codec and run through emu::api().
#pragma once

#include <cstdlib>
#include <map>

#include "common/prm/event_qp.hpp"
#include "emu_fixture.hpp"

namespace mlx5async::emu::test {

struct Made {
    mlx5dv_devx_obj* obj = nullptr;
    uint32_t id = 0;
    CmdRet ret;
};

// Page-aligned host memory registered as a umem.
struct HostBuf {
    std::byte* host = nullptr;
    size_t size = 0;
    uint32_t umem = 0;
};

class EventQpTest : public EmuTest {
protected:
    void SetUp() override {
        EmuTest::SetUp();
        setup_event_objects();
    }
    void TearDown() override {
        teardown_event_objects();
        EmuTest::TearDown();
        for (auto* u : extra_umems_) A.umem_dereg(u);  // other contexts': closed, only freed
        for (void* p : aligned_) std::free(p);
    }
    void setup_event_objects() {
        uar_ = A.alloc_uar(ctx_, MLX5DV_UAR_ALLOC_TYPE_NC);
        ASSERT_NE(uar_, nullptr);
        ASSERT_EQ(A.query_eqn(ctx_, 0, &eqn_), 0);
    }
    // Objects before the UAR they name (its free would be RES_BUSY).
    void teardown_event_objects() {
        for (auto it = objs_.rbegin(); it != objs_.rend(); ++it) A.obj_destroy(*it);
        objs_.clear();
        if (uar_) A.free_uar(uar_);
        uar_ = nullptr;
    }

    HostBuf buffer(size_t n, ibv_context* ctx = nullptr) {
        size_t sz = (n + 4095) & ~size_t(4095);
        auto* p = static_cast<std::byte*>(std::aligned_alloc(4096, sz));
        std::memset(p, 0, sz);
        aligned_.push_back(p);
        auto* u = A.umem_reg(ctx ? ctx : ctx_, p, sz, IBV_ACCESS_LOCAL_WRITE);
        EXPECT_NE(u, nullptr);
        if (u) (ctx ? extra_umems_ : umems_).push_back(u);
        return {p, sz, u ? u->umem_id : 0};
    }

    // DPDK mlx5_devx_cq_create: CQEs then the doorbell record, one umem.
    prm::CqAttr cq_attr(uint8_t log_size = 4, bool collapsed = false) {
        size_t cqes = prm::kCqeBytes << log_size;
        HostBuf b = buffer(cqes + 64);
        prm::CqAttr a;
        a.cc = collapsed;
        a.log_cq_size = log_size;
        a.uar_page = uar_->page_id;
        a.c_eqn = eqn_;
        a.cq_umem_valid = a.dbr_umem_valid = true;
        a.cq_umem_id = a.dbr_umem_id = b.umem;
        a.dbr_addr = cqes;
        cq_mem_[b.umem] = b.host;
        return a;
    }
    // The firmware QP: "managed by FW", no SQ, zero-length RQ.
    prm::QpAttr fw_qp_attr(uint32_t pd = 0) {
        prm::QpAttr a;
        a.pd = pd ? pd : pdn_;
        a.rq_type = uint8_t(prm::QpRqType::ZERO_LEN);
        a.no_sq = true;
        return a;
    }
    // DPDK's SW QP: 2^log 16-byte receive WQEs, then the doorbell record.
    prm::QpAttr drv_qp_attr(uint32_t cqn, uint8_t log_size = 4) {
        size_t rq = size_t(16) << log_size;
        HostBuf b = buffer(rq + 64);
        prm::QpAttr a;
        a.pd = pdn_;
        a.pm_state = uint8_t(prm::QpPmState::MIGRATED);
        a.log_rq_size = log_size;
        a.no_sq = true;
        a.uar_page = uar_->page_id;
        a.cqn_rcv = cqn;
        a.wq_umem_valid = a.dbr_umem_valid = true;
        a.wq_umem_id = a.dbr_umem_id = b.umem;
        a.dbr_addr = rq;
        qp_mem_[b.umem] = b.host;
        return a;
    }

    Made create(std::vector<std::byte>& in, ibv_context* ctx = nullptr) {
        std::vector<std::byte> out(prm::kEventQpCmdBytes);
        Made m;
        m.obj = A.obj_create(ctx ? ctx : ctx_, in.data(), in.size(), out.data(), out.size());
        m.ret = ret_of(m.obj ? 0 : errno, out);
        if (m.obj) {
            if (!ctx) objs_.push_back(m.obj);
            m.id = uint32_t(prm::get_bits(out, 0x48, 24));
        }
        return m;
    }
    Made create_cq(const prm::CqAttr& a, ibv_context* ctx = nullptr) {
        std::vector<std::byte> in(prm::kCreateCqInBytes);
        EXPECT_TRUE(prm::encode_create_cq(a, in));
        return create(in, ctx);
    }
    Made create_qp(const prm::QpAttr& a, ibv_context* ctx = nullptr) {
        std::vector<std::byte> in(prm::kCreateQpInBytes);
        EXPECT_TRUE(prm::encode_create_qp(a, in));
        return create(in, ctx);
    }
    CmdRet modify_qp(const Made& qp, prm::QpTransition t, uint32_t remote = 0) {
        prm::QpModify m;
        m.transition = t;
        m.qpn = qp.id;
        m.remote_qpn = remote;
        m.vhca_port_num = 1;
        std::vector<std::byte> in(prm::kQpModifyInBytes), out(prm::kEventQpCmdBytes);
        EXPECT_TRUE(prm::encode_qp_modify(m, in));
        int rc = A.obj_modify(qp.obj, in.data(), in.size(), out.data(), out.size());
        return ret_of(rc, out);
    }
    // DPDK mlx5_vdpa_qps2rts: both QPs RST -> INIT -> RTR -> RTS, each naming the other.
    void connect(const Made& fw, const Made& drv) {
        using T = prm::QpTransition;
        for (T t : {T::RST2INIT, T::INIT2RTR, T::RTR2RTS}) {
            ASSERT_EQ(modify_qp(fw, t, drv.id).rc, 0) << prm::qp_transition_name(t);
            ASSERT_EQ(modify_qp(drv, t, fw.id).rc, 0) << prm::qp_transition_name(t);
        }
    }

    mlx5dv_devx_uar* uar_ = nullptr;
    uint32_t eqn_ = 0;
    std::vector<void*> aligned_;
    std::vector<mlx5dv_devx_umem*> extra_umems_;
    std::map<uint32_t, std::byte*> cq_mem_, qp_mem_;  // umem id -> host
};

inline void expect_rule(const CmdRet& r, prm::Status s, uint32_t syn) {
    EXPECT_NE(r.rc, 0);
    EXPECT_EQ(r.status, uint8_t(s)) << std::hex << "syndrome 0x" << r.syndrome;
    EXPECT_EQ(r.syndrome, syn) << std::hex << "got 0x" << r.syndrome << " want 0x" << syn;
}

}  // namespace mlx5async::emu::test
