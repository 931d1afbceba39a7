// CREATE_MKEY / DESTROY_MKEY / QUERY_SPECIAL_CONTEXTS and guest-memory
// translation: every validation rule (status, syndrome, nothing created),
// the pins (direct -> umem, indirect -> direct, virtq -> mkey), the virtq
// ring check through virtio_q_mkey, and translate() inside, across regions,
// outside and in holes.
#include <gtest/gtest.h>

#include <mutex>

#include "common/prm/mkey.hpp"
#include "emu/guest_memory.hpp"
#include "emu_fixture.hpp"

namespace mlx5async::emu::test {
namespace {

using prm::MkeyAttr;
using prm::Status;
namespace syn = syndrome;

struct Mk {
    mlx5dv_devx_obj* obj = nullptr;
    uint32_t mkey = 0;
    CmdRet ret;
};

class MkeyTest : public EmuTest {
protected:
    // A registered buffer: umem id and its host address.
    struct Buf {
        uint32_t umem = 0;
        std::byte* host = nullptr;
    };
    Buf buffer(size_t bytes) {
        Buf b;
        b.umem = register_umem(bytes);
        b.host = memory_.back().get();
        return b;
    }
    Mk create(const MkeyAttr& a, size_t trim = 0) {
        auto in = prm::encode_create_mkey(a);
        EXPECT_TRUE(in);
        in->resize(in->size() - trim);
        std::vector<std::byte> out(prm::kCreateMkeyOutBytes);
        Mk m;
        m.obj = A.obj_create(ctx_, in->data(), in->size(), out.data(), out.size());
        m.ret = ret_of(m.obj ? 0 : errno, out);
        if (m.obj) {
            objs_.push_back(m.obj);
            m.mkey = prm::mkey_value(*prm::decode_create_mkey_out(out), a.mkey_7_0);
        }
        return m;
    }
    MkeyAttr direct(const Buf& b, uint64_t off, uint64_t gpa, uint64_t len) {
        return prm::direct_mkey_attr(b.umem, off, gpa, len, pdn_);
    }
    Result<std::vector<GuestSpan>> tr(uint32_t mkey, uint64_t addr, size_t len) {
        DeviceState& st = dev_->state();
        std::lock_guard lk(st.mu);  // translate(): the caller holds the lock
        return translate(st, mkey, addr, len);
    }
    void expect_rejected(const MkeyAttr& a, Status s, uint32_t syndrome, size_t trim = 0) {
        size_t before = dev_->object_counts().mkeys;
        Mk m = create(a, trim);
        EXPECT_EQ(m.obj, nullptr);
        EXPECT_EQ(m.ret.rc, EREMOTEIO);
        EXPECT_EQ(m.ret.status, uint8_t(s));
        EXPECT_EQ(m.ret.syndrome, syndrome) << std::hex << m.ret.syndrome;
        EXPECT_EQ(dev_->object_counts().mkeys, before);
    }
    // Guest memory: R0 [0, 0x4000) R1 [0x4000, 0x6000), hole, R2 [0x8000, 0x9000).
    void guest_memory() {
        r0 = buffer(0x4000);
        r1 = buffer(0x2000);
        r2 = buffer(0x1000);
        d0 = create(direct(r0, 0, 0x0, 0x4000));
        d1 = create(direct(r1, 0, 0x4000, 0x2000));
        d2 = create(direct(r2, 0, 0x8000, 0x1000));
        ind = create(prm::indirect_mkey_attr(
            0, {{0x4000, d0.mkey, 0}, {0x2000, d1.mkey, 0x4000}, {0x2000, kNullMkey, 0x6000},
                {0x1000, d2.mkey, 0x8000}},
            pdn_));
        ASSERT_NE(ind.obj, nullptr) << std::hex << ind.ret.syndrome;
    }
    Buf r0, r1, r2;
    Mk d0, d1, d2, ind;
};

TEST_F(MkeyTest, DirectMkeyTranslatesInsideItsUmem) {
    Buf b = buffer(0x3000);
    Mk m = create(direct(b, 0x1000, 0x10000, 0x2000));
    ASSERT_NE(m.obj, nullptr) << std::hex << m.ret.syndrome;
    EXPECT_EQ(m.mkey & 0xff, b.umem & 0xff);  // mkey_7_0 as DPDK sets it
    auto s = tr(m.mkey, 0x10010, 0x20);
    ASSERT_TRUE(s) << s.error().what;
    ASSERT_EQ(s->size(), 1u);
    EXPECT_EQ((*s)[0].host, b.host + 0x1010);
    EXPECT_EQ((*s)[0].len, 0x20u);
    EXPECT_EQ(tr(m.mkey, 0x11ff0, 0x20).error().code, Errc::NotFound);  // one byte past
    EXPECT_EQ(tr(m.mkey ^ 0x1, 0x10010, 1).error().code, Errc::NotFound);  // wrong key byte
}

TEST_F(MkeyTest, DirectMkeyRules) {
    Buf b = buffer(0x2000);
    auto a = direct(b, 0, 0, 0x2000);
    auto bad_umem = a;
    bad_umem.umem_id = 0x4fff;
    expect_rejected(bad_umem, Status::BAD_RES_ERR, syn::kUnknownObject + uint32_t(Kind::Umem));
    expect_rejected(direct(b, 0x1000, 0, 0x1001), Status::BAD_PARAM_ERR, syn::kMkeyUmemRange);
    auto bad_pd = a;
    bad_pd.pd = 0x1fff;
    expect_rejected(bad_pd, Status::BAD_RES_ERR, syn::kUnknownObject + uint32_t(Kind::Pd));
    expect_rejected(direct(b, 0, 0, 0), Status::BAD_PARAM_ERR, syn::kMkeyLenZero);
    expect_rejected(direct(b, 0, ~0ull - 0xff, 0x1000), Status::BAD_PARAM_ERR,
                    syn::kMkeyRangeOverflow);
    auto small_page = a;
    small_page.log_page_size = 11;
    expect_rejected(small_page, Status::BAD_PARAM_ERR, syn::kMkeyPageSize);
    auto few_mtt = a;
    few_mtt.translations_octword_actual_size = 0;
    expect_rejected(few_mtt, Status::BAD_PARAM_ERR, syn::kMkeyTranslations);
    auto pa = a;
    pa.access_mode = prm::MkeyAccessMode::PA;
    expect_rejected(pa, Status::BAD_PARAM_ERR, syn::kMkeyAccessMode);
    auto in = *prm::encode_create_mkey(a);
    in[0x50] = std::byte{1};  // reserved_at_280
    std::vector<std::byte> out(prm::kCreateMkeyOutBytes);
    EXPECT_EQ(A.obj_create(ctx_, in.data(), in.size(), out.data(), out.size()), nullptr);
    EXPECT_EQ(ret_of(0, out).syndrome, syn::kReservedNonZero);
    EXPECT_NE(create(a).obj, nullptr);  // and the valid one passes
}

// Linux devx_handle_mkey_create: an input too short for the mkc is EINVAL
// before the firmware; MTT mkeys get mkey_umem_valid from the kernel.
TEST_F(MkeyTest, KernelChecksAndSetsUmemValidForDirectMkeys) {
    Buf b = buffer(0x1000);
    auto a = direct(b, 0, 0, 0x1000);
    a.umem_valid = false;
    Mk m = create(a);
    ASSERT_NE(m.obj, nullptr) << std::hex << m.ret.syndrome;
    EXPECT_EQ(tr(m.mkey, 0, 0x1000)->at(0).host, b.host);
    auto in = *prm::encode_create_mkey(a);
    std::vector<std::byte> out(prm::kCreateMkeyOutBytes);
    errno = 0;
    EXPECT_EQ(A.obj_create(ctx_, in.data(), 0x4f, out.data(), out.size()), nullptr);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(dev_->trace().size(), 3u);  // ALLOC_PD, CREATE_UMEM, one CREATE_MKEY
}

TEST_F(MkeyTest, IndirectMkeyRules) {
    Buf b = buffer(0x2000);
    Mk d = create(direct(b, 0, 0x1000, 0x2000));
    ASSERT_NE(d.obj, nullptr);
    auto ind = [&](std::vector<prm::KlmEntry> e) { return prm::indirect_mkey_attr(0, e, pdn_); };
    expect_rejected(ind({}), Status::BAD_PARAM_ERR, syn::kMkeyLenZero);  // len 0 first
    auto empty = ind({});
    empty.len = 0x1000;
    expect_rejected(empty, Status::BAD_PARAM_ERR, syn::kMkeyKlmEmpty);
    auto zero = ind({{0x1000, d.mkey, 0x1000}, {0, d.mkey, 0x1000}});
    expect_rejected(zero, Status::BAD_PARAM_ERR, syn::kMkeyKlmZero);
    expect_rejected(ind({{0x1000, d.mkey + 0x100, 0x1000}}), Status::BAD_RES_ERR,
                    syn::kMkeyKlmUnknown);
    expect_rejected(ind({{0x1000, d.mkey, 0x2800}}), Status::BAD_PARAM_ERR, syn::kMkeyKlmRange);
    expect_rejected(ind({{0x1000, d.mkey, 0x800}}), Status::BAD_PARAM_ERR, syn::kMkeyKlmRange);
    auto sum = ind({{0x1000, d.mkey, 0x1000}});
    sum.len = 0x2000;
    expect_rejected(sum, Status::BAD_PARAM_ERR, syn::kMkeyKlmLength);
    auto with_umem = ind({{0x1000, d.mkey, 0x1000}});
    with_umem.umem_valid = true;
    expect_rejected(with_umem, Status::BAD_PARAM_ERR, syn::kMkeyUmemWithKlm);
    expect_rejected(ind({{0x1000, d.mkey, 0x1000}, {0x1000, d.mkey, 0x2000}}),
                    Status::BAD_INP_LEN_ERR, syn::kMkeyKlmInLen, /*trim=*/1);
    Mk ok = create(ind({{0x1000, d.mkey, 0x1000}}));
    ASSERT_NE(ok.obj, nullptr);
    expect_rejected(ind({{0x1000, ok.mkey, 0}}), Status::BAD_PARAM_ERR, syn::kMkeyKlmIndirect);
}

TEST_F(MkeyTest, TranslateInsideAcrossRegionsOutsideAndHoles) {
    guest_memory();
    auto in = tr(ind.mkey, 0x100, 0x10);  // inside R0
    ASSERT_TRUE(in);
    ASSERT_EQ(in->size(), 1u);
    EXPECT_EQ((*in)[0].host, r0.host + 0x100);
    auto across = tr(ind.mkey, 0x3ff0, 0x20);  // R0 -> R1
    ASSERT_TRUE(across);
    ASSERT_EQ(across->size(), 2u);
    EXPECT_EQ((*across)[0].host, r0.host + 0x3ff0);
    EXPECT_EQ((*across)[0].len, 0x10u);
    EXPECT_EQ((*across)[1].host, r1.host);
    EXPECT_EQ((*across)[1].len, 0x10u);
    auto last = tr(ind.mkey, 0x8ff0, 0x10);  // R2, last bytes
    ASSERT_TRUE(last);
    EXPECT_EQ((*last)[0].host, r2.host + 0xff0);
    EXPECT_EQ(tr(ind.mkey, 0x6000, 1).error().code, Errc::NotFound);     // hole
    EXPECT_EQ(tr(ind.mkey, 0x5ff0, 0x20).error().code, Errc::NotFound);  // R1 into the hole
    EXPECT_EQ(tr(ind.mkey, 0x8ff0, 0x11).error().code, Errc::NotFound);  // past the end
    EXPECT_EQ(tr(ind.mkey, 0x100000, 4).error().code, Errc::NotFound);   // far outside
    EXPECT_EQ(tr(ind.mkey, 0x100, 0).error().code, Errc::InvalidArgument);
    EXPECT_EQ(tr(ind.mkey, ~0ull - 1, 4).error().code, Errc::InvalidArgument);
    EXPECT_EQ(tr(0x12345600, 0, 4).error().code, Errc::NotFound);  // no such mkey
}

TEST_F(MkeyTest, PinsDirectByIndirectAndUmemByDirect) {
    guest_memory();
    EXPECT_EQ(destroy_obj(d1.obj), EBUSY);  // RES_BUSY: the indirect mkey uses it
    EXPECT_EQ(A.umem_dereg(umems_[0]), EBUSY);  // R0's umem: d0 uses it
    EXPECT_EQ(destroy_obj(ind.obj), 0);
    EXPECT_EQ(destroy_obj(d1.obj), 0);
    EXPECT_EQ(dev_->object_counts().mkeys, 2u);
    EXPECT_EQ(destroy_obj(d0.obj), 0);
    EXPECT_EQ(A.umem_dereg(umems_[0]), 0);
    umems_.erase(umems_.begin());
}

TEST_F(MkeyTest, QuerySpecialContextsReportsTheNullMkey) {
    std::vector<std::byte> in(prm::kQuerySpecialContextsInBytes), out(prm::kQuerySpecialContextsOutBytes);
    prm::encode_query_special_contexts(in);
    ASSERT_EQ(A.general_cmd(ctx_, in.data(), in.size(), out.data(), out.size()), 0);
    auto s = prm::decode_query_special_contexts_out(out);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->null_mkey, kNullMkey);
}

// Rings at 0x1000 (desc 16·256), 0x2000 (avail), 0x3000 (used) of R0.
prm::VirtqAttr with_rings(prm::VirtqAttr a, uint32_t mkey) {
    a.virtio_q_mkey = mkey;
    a.desc_addr = 0x1000;
    a.available_addr = 0x2000;
    a.used_addr = 0x3000;
    return a;
}

TEST_F(MkeyTest, VirtqToRdyNeedsItsRingsInGuestMemory) {
    guest_memory();
    Vq vq = create_virtq(valid_attr(0));
    ASSERT_EQ(vq.ret.rc, 0);
    namespace mb = prm::modify_bits;
    const uint64_t sel = mb::STATE | mb::VIRTIO_Q_MKEY | mb::VIRTIO_Q_ADDRS;
    auto a = with_rings(valid_attr(0), ind.mkey);
    a.state = prm::VirtqState::RDY;
    auto bad = a;
    bad.virtio_q_mkey = ind.mkey + 0x100;
    EXPECT_EQ(modify_virtq(vq, bad, sel).syndrome, syn::kVirtqMkeyUnknown);
    bad = a;
    bad.desc_addr = 0x8800;  // 4 KiB of descriptors from R2's middle: past its end
    EXPECT_EQ(modify_virtq(vq, bad, sel).syndrome, syn::kVirtqRingUntranslated + 0);
    bad = a;
    bad.available_addr = 0x6000;  // the hole
    EXPECT_EQ(modify_virtq(vq, bad, sel).syndrome, syn::kVirtqRingUntranslated + 1);
    bad = a;
    bad.used_addr = 0x9000;  // outside
    auto r = modify_virtq(vq, bad, sel);
    EXPECT_EQ(r.status, uint8_t(Status::BAD_PARAM_ERR));
    EXPECT_EQ(r.syndrome, syn::kVirtqRingUntranslated + 2);
    auto info = dev_->virtq_info(vq.id);  // unchanged by the rejections
    EXPECT_EQ(info->state, prm::VirtqState::INIT);
    EXPECT_EQ(info->attr.virtio_q_mkey, 0u);
    EXPECT_EQ(destroy_obj(ind.obj), 0);  // nothing pinned it
    ind = create(prm::indirect_mkey_attr(0, {{0x4000, d0.mkey, 0}}, pdn_));
    a.virtio_q_mkey = ind.mkey;
    ASSERT_EQ(modify_virtq(vq, a, sel).rc, 0);
    EXPECT_EQ(dev_->virtq_info(vq.id)->attr.virtio_q_mkey, ind.mkey);
    EXPECT_EQ(destroy_obj(ind.obj), EBUSY);  // the virtq pins its mkey
}

TEST_F(MkeyTest, VirtqMkeyPinMovesWithModifyAndCreateChecksRings) {
    guest_memory();
    Mk other = create(prm::indirect_mkey_attr(0, {{0x4000, d0.mkey, 0}}, pdn_));
    auto bad = with_rings(valid_attr(0), ind.mkey);
    bad.used_addr = 0x7000;  // the hole
    Vq rejected = create_virtq(bad);
    EXPECT_EQ(rejected.ret.syndrome, syn::kVirtqRingUntranslated + 2);
    Vq vq = create_virtq(with_rings(valid_attr(0), ind.mkey));
    ASSERT_EQ(vq.ret.rc, 0);
    EXPECT_EQ(destroy_obj(ind.obj), EBUSY);
    auto a = valid_attr(0);
    a.virtio_q_mkey = 0x7f000000;  // unknown, even without a state change
    EXPECT_EQ(modify_virtq(vq, a, prm::modify_bits::VIRTIO_Q_MKEY).syndrome, syn::kVirtqMkeyUnknown);
    a.virtio_q_mkey = other.mkey;  // INIT: fields may change
    ASSERT_EQ(modify_virtq(vq, a, prm::modify_bits::VIRTIO_Q_MKEY).rc, 0);
    EXPECT_EQ(destroy_obj(ind.obj), 0);  // pin moved to `other`
    EXPECT_EQ(destroy_obj(other.obj), EBUSY);
    EXPECT_EQ(destroy_obj(vq.obj), 0);
    EXPECT_EQ(destroy_obj(other.obj), 0);
}

TEST_F(MkeyTest, ContextCloseRemovesMkeysBeforeUmems) {
    guest_memory();
    EXPECT_EQ(dev_->object_counts().mkeys, 4u);
    ASSERT_EQ(A.close_device(ctx_), 0);
    ctx_ = nullptr;
    auto c = dev_->object_counts();
    EXPECT_EQ(c.mkeys, 0u);
    EXPECT_EQ(c.umems, 0u);
}

}  // namespace
}  // namespace mlx5async::emu::test
