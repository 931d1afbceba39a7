// ALLOC/DEALLOC_TRANSPORT_DOMAIN and CREATE/DESTROY_TIS: each rule answers a
// PRM status and its syndrome; a TIS pins its domain, a TX virtq its TIS.
#include <gtest/gtest.h>

#include "common/prm/transport.hpp"
#include "emu_fixture.hpp"

namespace mlx5async::emu::test {
namespace {

using prm::Status;
namespace syn = syndrome;

struct Made {
    mlx5dv_devx_obj* obj = nullptr;
    uint32_t id = 0;
    CmdRet ret;
};

class Transport : public EmuTest {
protected:
    Made alloc_td() {
        std::vector<std::byte> in(prm::kTransportCmdBytes), out(prm::kTransportCmdBytes);
        prm::encode_alloc_transport_domain(in);
        return make(in, out, [&] { return *prm::decode_alloc_transport_domain_out(out); });
    }
    Made create_tis(const prm::TisAttr& a, bool poison_reserved = false) {
        std::vector<std::byte> in(prm::kCreateTisInBytes), out(prm::kTransportCmdBytes);
        EXPECT_TRUE(prm::encode_create_tis(a, in));
        if (poison_reserved) in[32 + 20] = std::byte{1};
        return make(in, out, [&] { return *prm::decode_create_tis_out(out); });
    }
    template <typename F>
    Made make(std::vector<std::byte>& in, std::vector<std::byte>& out, F id_of) {
        Made m;
        m.obj = A.obj_create(ctx_, in.data(), in.size(), out.data(), out.size());
        m.ret = ret_of(m.obj ? 0 : errno, out);
        if (m.obj) {
            objs_.push_back(m.obj);
            m.id = id_of();
        }
        return m;
    }
};

TEST_F(Transport, TisInADomainAndDestroyOrder) {
    Made td = alloc_td();
    ASSERT_TRUE(td.obj);
    Made tis = create_tis({.transport_domain = td.id, .pd = pdn_});
    ASSERT_TRUE(tis.obj) << int(tis.ret.status);
    EXPECT_NE(destroy_obj(td.obj), 0) << "a domain with a TIS is busy";
    EXPECT_EQ(destroy_obj(tis.obj), 0);
    EXPECT_EQ(destroy_obj(td.obj), 0);
}

TEST_F(Transport, TisRulesAnswerStatusAndSyndrome) {
    Made td = alloc_td();
    ASSERT_TRUE(td.obj);
    Made no_td = create_tis({.transport_domain = td.id + 1});
    EXPECT_FALSE(no_td.obj);
    EXPECT_EQ(no_td.ret.status, uint8_t(Status::BAD_PARAM_ERR));
    EXPECT_EQ(no_td.ret.syndrome, syn::kTisUnknownTd);
    Made no_pd = create_tis({.transport_domain = td.id, .pd = pdn_ + 77});
    EXPECT_FALSE(no_pd.obj);
    EXPECT_EQ(no_pd.ret.syndrome, syn::kTisUnknownPd);
    Made reserved = create_tis({.transport_domain = td.id}, true);
    EXPECT_FALSE(reserved.obj);
    EXPECT_EQ(reserved.ret.syndrome, syn::kReservedNonZero);
}

TEST_F(Transport, TxVirtqNamesAnExistingTisAndPinsIt) {
    Made td = alloc_td();
    Made tis = create_tis({.transport_domain = td.id});
    ASSERT_TRUE(tis.obj);
    prm::VirtqAttr bad = valid_attr(1);
    bad.tisn_or_qpn = tis.id + 1;
    Vq none = create_virtq(bad);
    EXPECT_FALSE(none.obj);
    EXPECT_EQ(none.ret.status, uint8_t(Status::BAD_PARAM_ERR));
    EXPECT_EQ(none.ret.syndrome, syn::kVirtqTisUnknown);
    prm::VirtqAttr good = valid_attr(1);
    good.tisn_or_qpn = tis.id;
    Vq tx = create_virtq(good);
    ASSERT_TRUE(tx.obj);
    EXPECT_NE(destroy_obj(tis.obj), 0) << "a TIS used by a virtq is busy";
    EXPECT_EQ(destroy_obj(tx.obj), 0);
    EXPECT_EQ(destroy_obj(tis.obj), 0);
}

}  // namespace
}  // namespace mlx5async::emu::test
