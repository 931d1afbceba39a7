#include "emu_fixture.hpp"

namespace mlx5async::emu::test {

void EmuTest::open_device(const std::string& spec) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    name_ = std::string("t-") + info->name();
    if (name_.size() > 60) name_.resize(60);
    (void)destroy_device(name_);
    auto d = create_device(name_, spec);
    ASSERT_TRUE(d) << to_string(d.error());
    dev_ = device_of(*d);
    mlx5dv_context_attr attr{};
    attr.flags = MLX5DV_CONTEXT_FLAGS_DEVX;
    ctx_ = A.open_device(*d, &attr);
    ASSERT_NE(ctx_, nullptr);
    pd_ = A.alloc_pd(ctx_);
    ASSERT_NE(pd_, nullptr);
    mlx5dv_pd dvpd{};
    mlx5dv_obj o{};
    o.pd.in = pd_;
    o.pd.out = &dvpd;
    ASSERT_EQ(A.init_obj(&o, MLX5DV_OBJ_PD), 0);
    pdn_ = dvpd.pdn;
}

Result<prm::NicVportContext> EmuTest::query_own_vport() {
    std::vector<std::byte> in(prm::kQueryNicVportContextInBytes), out(prm::kQueryNicVportContextOutBytes);
    prm::encode_query_nic_vport_context(in);
    if (int rc = A.general_cmd(ctx_, in.data(), in.size(), out.data(), out.size()); rc != 0)
        return fail(Errc::Firmware, "QUERY_NIC_VPORT_CONTEXT: rc " + std::to_string(rc));
    return prm::decode_query_nic_vport_context_out(out);
}

void EmuTest::close_all() {
    // A handle whose destroy failed (its object still pinned by another a
    // test left) is destroyed again after the context closed: that frees it.
    if (dev_) dev_->faults().clear();
    std::vector<mlx5dv_devx_obj*> objs;
    std::vector<mlx5dv_devx_umem*> umems;
    for (auto it = objs_.rbegin(); it != objs_.rend(); ++it)
        if (A.obj_destroy(*it) != 0) objs.push_back(*it);
    for (auto* u : umems_)
        if (A.umem_dereg(u) != 0) umems.push_back(u);
    ibv_pd* pd = pd_ && A.dealloc_pd(pd_) != 0 ? pd_ : nullptr;
    objs_.clear();
    umems_.clear();
    pd_ = nullptr;
    if (ctx_) A.close_device(ctx_);
    ctx_ = nullptr;
    for (auto* o : objs) A.obj_destroy(o);
    for (auto* u : umems) A.umem_dereg(u);
    if (pd) A.dealloc_pd(pd);
    (void)destroy_device(name_);
}

int EmuTest::destroy_obj(mlx5dv_devx_obj* o) {
    int rc = A.obj_destroy(o);
    if (rc == 0) std::erase(objs_, o);
    return rc;
}

uint32_t EmuTest::register_umem(size_t bytes) {
    memory_.emplace_back(new std::byte[bytes]);
    auto* u = A.umem_reg(ctx_, memory_.back().get(), bytes, IBV_ACCESS_LOCAL_WRITE);
    EXPECT_NE(u, nullptr);
    if (!u) return 0;
    umems_.push_back(u);
    return u->umem_id;
}

prm::VirtqAttr EmuTest::valid_attr(uint16_t queue_index, uint16_t queue_size, uint32_t extra) {
    prm::VirtqAttr a;
    a.queue_index = queue_index;
    a.queue_size = queue_size;
    a.virtio_version_1_0 = true;
    a.pd = pdn_;
    a.event_mode = prm::EventMode::NO_MSIX;
    for (int n = 0; n < 3; ++n) {
        uint32_t size = uint32_t(dev_->profile().virtio.umem_size(n, queue_size)) + extra;
        a.umem[n] = {register_umem(size), size, 0};
    }
    return a;
}

prm::VirtqAttr EmuTest::valid_attr_on_ring(const prm::VirtqAttr& ring, uint32_t mkey) {
    prm::VirtqAttr a = valid_attr(ring.queue_index, ring.queue_size);
    a.desc_addr = ring.desc_addr;
    a.available_addr = ring.available_addr;
    a.used_addr = ring.used_addr;
    a.virtio_q_mkey = mkey;
    return a;
}

uint32_t EmuTest::direct_mkey(std::span<std::byte> buf, uint64_t start) {
    auto* u = A.umem_reg(ctx_, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    EXPECT_NE(u, nullptr);
    if (!u) return 0;
    umems_.push_back(u);
    prm::MkeyAttr m = prm::direct_mkey_attr(u->umem_id, 0, start, buf.size(), pdn_);
    auto in = prm::encode_create_mkey(m);
    EXPECT_TRUE(in);
    std::vector<std::byte> out(prm::kCreateMkeyOutBytes);
    auto* o = A.obj_create(ctx_, in->data(), in->size(), out.data(), out.size());
    EXPECT_NE(o, nullptr) << "CREATE_MKEY failed";
    if (!o) return 0;
    objs_.push_back(o);
    auto idx = prm::decode_create_mkey_out(out);
    EXPECT_TRUE(idx);
    return idx ? prm::mkey_value(*idx, m.mkey_7_0) : 0;
}

Vq EmuTest::create_virtq(const prm::VirtqAttr& a) {
    std::vector<std::byte> in(prm::kVirtqCmdInBytes), out(prm::kGeneralObjOutHdrBytes);
    auto enc = prm::encode_create_virtq(a, in);
    EXPECT_TRUE(enc);
    Vq vq;
    vq.obj = A.obj_create(ctx_, in.data(), in.size(), out.data(), out.size());
    vq.ret = ret_of(vq.obj ? 0 : errno, out);
    if (vq.obj) {
        vq.id = uint32_t(prm::get_bits(out, 64, 32));
        objs_.push_back(vq.obj);
    }
    return vq;
}

CmdRet EmuTest::modify_raw(const Vq& vq, std::vector<std::byte>& in) {
    std::vector<std::byte> out(prm::kGeneralObjOutHdrBytes);
    int rc = A.obj_modify(vq.obj, in.data(), in.size(), out.data(), out.size());
    return ret_of(rc, out);
}

CmdRet EmuTest::modify_virtq(const Vq& vq, prm::VirtqAttr a, uint64_t select) {
    a.modify_field_select = select;
    std::vector<std::byte> in(prm::kVirtqCmdInBytes);
    EXPECT_TRUE(prm::encode_modify_virtq(vq.id, a, in));
    return modify_raw(vq, in);
}

CmdRet EmuTest::query_virtq(const Vq& vq, prm::VirtqAttr* attr) {
    std::vector<std::byte> in(prm::kGeneralObjInHdrBytes), out(prm::kVirtqQueryOutBytes);
    prm::encode_query_virtq(vq.id, in);
    int rc = A.obj_query(vq.obj, in.data(), in.size(), out.data(), out.size());
    if (attr && rc == 0) {
        auto d = prm::decode_query_virtq_out(out, vq.id);
        EXPECT_TRUE(d);
        if (d) *attr = *d;
    }
    return ret_of(rc, out);
}

prm::VirtqState EmuTest::state_of(const Vq& vq) {
    auto info = dev_->virtq_info(vq.id);
    EXPECT_TRUE(info);
    return info ? info->state : prm::VirtqState::ERR;
}

Vq EmuTest::virtq_in_state(prm::VirtqState s, uint16_t queue_index) {
    using prm::VirtqState;
    Vq vq = create_virtq(valid_attr(queue_index));
    EXPECT_EQ(vq.ret.rc, 0);
    prm::VirtqAttr a;
    auto step = [&](VirtqState to) {
        a.state = to;
        EXPECT_EQ(modify_virtq(vq, a, prm::modify_bits::STATE).rc, 0);
    };
    if (s == VirtqState::RDY || s == VirtqState::SUSPEND) step(VirtqState::RDY);
    if (s == VirtqState::SUSPEND) step(VirtqState::SUSPEND);
    if (s == VirtqState::ERR) {
        EXPECT_TRUE(dev_->force_virtq_error(vq.id, 1));
    }
    EXPECT_EQ(state_of(vq), s);
    return vq;
}

}  // namespace mlx5async::emu::test
