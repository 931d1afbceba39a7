// QUERY_HCA_CAP through general_cmd, profiles and the spec string.
#include <cstdlib>

#include "common/prm/caps_layout.hpp"
#include "common/prm/vport.hpp"
#include "common/prm/vport_layout.hpp"
#include "emu/profile.hpp"
#include "emu_fixture.hpp"

namespace mlx5async::emu::test {
namespace {

using Caps = EmuTest;

std::vector<std::byte> query_cap(const devx::DevxApi& A, ibv_context* ctx, uint16_t type, int* rc) {
    std::vector<std::byte> in(prm::kQueryHcaCapInBytes), out(prm::kQueryHcaCapOutBytes);
    prm::encode_query_hca_cap(prm::cap_op_mod(type), in);
    *rc = A.general_cmd(ctx, in.data(), in.size(), out.data(), out.size());
    return out;
}

TEST_F(Caps, QueryReturnsProfileCaps) {
    int rc;
    auto g = prm::decode_query_general_caps_out(query_cap(A, ctx_, prm::kCapTypeGeneral, &rc));
    ASSERT_EQ(rc, 0);
    ASSERT_TRUE(g);
    EXPECT_EQ(*g, dev_->profile().general);
    EXPECT_TRUE(g->has_obj_type(uint16_t(prm::ObjType::VIRTIO_NET_Q)));
    EXPECT_TRUE(g->has_obj_type(uint16_t(prm::ObjType::VIRTIO_Q_COUNTERS)));
    auto v = prm::decode_query_virtio_caps_out(query_cap(A, ctx_, prm::kCapTypeVirtioEmulation, &rc));
    ASSERT_EQ(rc, 0);
    ASSERT_TRUE(v);
    EXPECT_EQ(*v, dev_->profile().virtio);
    EXPECT_TRUE(v->freeze_to_rdy_supported);  // cx7
}

// The offloads the datapath implements, in the PRM's numbering (Linux
// MLX5_VIRTIO_NET_F_*): CSUM, GUEST_CSUM and MRG_RXBUF, no TSO.
constexpr uint16_t kNetFeatures = (1u << prm::queue_feature_bits::CSUM) |
                                  (1u << prm::queue_feature_bits::GUEST_CSUM) |
                                  (1u << prm::queue_feature_bits::MRG_RXBUF);

TEST_F(Caps, AdvertisesExactlyChecksumsAndMergeableInPrmNumbering) {
    int rc;
    auto out = query_cap(A, ctx_, prm::kCapTypeVirtioEmulation, &rc);
    ASSERT_EQ(rc, 0);
    auto v = prm::decode_query_virtio_caps_out(out);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->device_features_bits_mask, kNetFeatures);
    EXPECT_EQ(v->device_features_bits_mask, 0x604);
    // Back in virtio numbering: VIRTIO_NET_F_CSUM (0) | GUEST_CSUM (1) | MRG_RXBUF (15).
    EXPECT_EQ(prm::virtio_net_features_of(v->device_features_bits_mask), 0x8003u);
    // The raw bits under DPDK's names (mlx5_ifc virtio_emulation_cap).
    std::span<const std::byte> cap = std::span<const std::byte>(out).subspan(16);
    namespace d = prm::layout::virtio_emulation_cap::dpdk;
    EXPECT_EQ(prm::get_bits(cap, d::tso_ipv4.bit_offset, 1), 0u);
    EXPECT_EQ(prm::get_bits(cap, d::tso_ipv6.bit_offset, 1), 0u);
    EXPECT_EQ(prm::get_bits(cap, d::tx_csum.bit_offset, 1), 1u);
    EXPECT_EQ(prm::get_bits(cap, d::rx_csum.bit_offset, 1), 1u);
}

TEST(Profiles, EveryProfileAdvertisesTheSameOffloads) {
    for (const char* name : {"cx6dx", "cx7"}) {
        auto p = builtin_profile(name);
        ASSERT_TRUE(p) << name;
        EXPECT_EQ(p->virtio.device_features_bits_mask, kNetFeatures) << name;
    }
}

TEST_F(Caps, UnknownCapTypeIsBadParam) {
    int rc;
    auto out = query_cap(A, ctx_, 0x7, &rc);
    auto r = ret_of(rc, out);
    EXPECT_EQ(r.rc, EREMOTEIO);
    EXPECT_EQ(r.status, uint8_t(prm::Status::BAD_PARAM_ERR));
    EXPECT_EQ(r.syndrome, syndrome::kBadOpMod);
}

TEST_F(Caps, ShortOutputIsBadOutputLength) {
    std::vector<std::byte> in(prm::kQueryHcaCapInBytes), out(64);
    prm::encode_query_hca_cap(prm::cap_op_mod(prm::kCapTypeGeneral), in);
    auto r = ret_of(A.general_cmd(ctx_, in.data(), in.size(), out.data(), out.size()), out);
    EXPECT_EQ(r.status, uint8_t(prm::Status::BAD_OUTP_LEN_ERR));
    EXPECT_EQ(r.syndrome, syndrome::kOutLenShort);
}

// QUERY_NIC_VPORT_CONTEXT: the port's hardware MTU (the profile's IP MTU
// plus Ethernet header, VLAN tag and FCS), for the function's own vport only.
TEST_F(Caps, NicVportContextCarriesThePortMtu) {
    auto c = query_own_vport();
    ASSERT_TRUE(c) << to_string(c.error());
    EXPECT_EQ(c->mtu, dev_->profile().mtu + 22u);
    std::vector<std::byte> in(prm::kQueryNicVportContextInBytes), out(prm::kQueryNicVportContextOutBytes);
    prm::encode_query_nic_vport_context(in);
    // Another function's vport, then a set reserved bit, then a short output.
    prm::set<prm::layout::query_nic_vport_context_in::other_vport>(in, 1);
    auto r = ret_of(A.general_cmd(ctx_, in.data(), in.size(), out.data(), out.size()), out);
    EXPECT_EQ(r.status, uint8_t(prm::Status::BAD_PARAM_ERR));
    EXPECT_EQ(r.syndrome, syndrome::kOtherVport);
    prm::encode_query_nic_vport_context(in);
    prm::set_bits(in, 0x70, 8, 1);
    r = ret_of(A.general_cmd(ctx_, in.data(), in.size(), out.data(), out.size()), out);
    EXPECT_EQ(r.syndrome, syndrome::kReservedNonZero);
    prm::encode_query_nic_vport_context(in);
    std::vector<std::byte> small(64);
    r = ret_of(A.general_cmd(ctx_, in.data(), in.size(), small.data(), small.size()), small);
    EXPECT_EQ(r.status, uint8_t(prm::Status::BAD_OUTP_LEN_ERR));
}

TEST_F(Caps, GeneralCmdRefusesObjectCommands) {
    std::vector<std::byte> in(prm::kVirtqCmdInBytes), out(16);
    ASSERT_TRUE(prm::encode_create_virtq(valid_attr(0), in));
    EXPECT_EQ(A.general_cmd(ctx_, in.data(), in.size(), out.data(), out.size()), EINVAL);
}

TEST(Profiles, Cx6dxAndCx7Differ) {
    auto a = builtin_profile("cx6dx");
    auto b = builtin_profile("cx7");
    ASSERT_TRUE(a && b);
    EXPECT_FALSE(a->virtio.freeze_to_rdy_supported);
    EXPECT_TRUE(b->virtio.freeze_to_rdy_supported);
    EXPECT_FALSE(a->virtio.desc_group_mkey_supported);
    EXPECT_FALSE(builtin_profile("cx5"));
}

// The datapath runs split and packed rings: every profile lists both, and
// packed=0 models firmware with split ones only (doc/emulator.md).
TEST(Profiles, EveryProfileListsSplitAndPackedUnlessTold) {
    for (const char* name : {"cx6dx", "cx7"}) {
        auto p = builtin_profile(name);
        ASSERT_TRUE(p);
        EXPECT_EQ(p->virtio.virtio_queue_type, 0x3) << name;
        auto q = parse_spec(std::string(name) + ",packed=0");
        ASSERT_TRUE(q);
        EXPECT_EQ(q->virtio.virtio_queue_type, 0x1) << name;
    }
    EXPECT_FALSE(parse_spec("cx7,packed=2"));
}

TEST(Profiles, MtuKeySetsThePortMtuWithinIpLimits) {
    auto p = parse_spec("cx7,mtu=9000");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->mtu, 9000u);
    EXPECT_EQ(builtin_profile("cx7")->mtu, 1500u);
    EXPECT_FALSE(parse_spec("cx7,mtu=67"));
    EXPECT_FALSE(parse_spec("cx7,mtu=65514"));
}

TEST(Profiles, DefaultTimingReproducesReferenceNumbers) {
    auto p = builtin_profile("cx7");
    ASSERT_TRUE(p);
    // DESIGN.md: 32 queues suspended one by one ~37 ms (MODIFY + QUERY each),
    // resumed ~16 ms (MODIFY each). Arithmetic on the model, not a timing.
    EXPECT_NEAR(32 * (p->timing.modify_us + p->timing.query_us) / 1000.0, 37.0, 0.5);
    EXPECT_NEAR(32 * p->timing.modify_us / 1000.0, 16.0, 0.5);
    EXPECT_EQ(p->max_inflight, 16u);
    EXPECT_EQ(p->cmd_slots, 32u);
}

TEST(Profiles, SpecOverridesAndRejections) {
    auto p = parse_spec("cx6dx,modify_us=0,query_us=7,jitter_pct=10,max_inflight=4,cmd_slots=8,"
                        "max_virtqs=12,freeze_to_rdy=1,clock=manual,seed=9");
    ASSERT_TRUE(p) << to_string(p.error());
    EXPECT_EQ(p->timing.modify_us, 0u);
    EXPECT_EQ(p->timing.query_us, 7u);
    EXPECT_EQ(p->timing.jitter_pct, 10u);
    EXPECT_EQ(p->max_inflight, 4u);
    EXPECT_EQ(p->cmd_slots, 8u);
    EXPECT_EQ(p->virtio.max_num_virtio_queues, 12u);
    EXPECT_TRUE(p->virtio.freeze_to_rdy_supported);
    EXPECT_EQ(p->clock, ClockKind::Manual);
    EXPECT_EQ(p->seed, 9u);
    EXPECT_FALSE(parse_spec("cx7,bogus=1"));
    EXPECT_FALSE(parse_spec("cx7,modify_us=abc"));
    EXPECT_FALSE(parse_spec("cx7,jitter_pct=101"));
    EXPECT_FALSE(parse_spec("cx7,max_inflight=40"));  // > cmd_slots
    EXPECT_FALSE(parse_spec("cx7,clock=wall"));
    EXPECT_FALSE(parse_spec("cx7,modify_us"));
}

TEST(Registry, DuplicateNameRejectedAndDestroyUnknownFails) {
    ASSERT_TRUE(create_device("reg-dup", "cx7"));
    EXPECT_FALSE(create_device("reg-dup", "cx7"));
    EXPECT_FALSE(create_device("reg-bad", "cx9"));
    EXPECT_TRUE(destroy_device("reg-dup"));
    EXPECT_FALSE(destroy_device("reg-dup"));
}

TEST(Registry, DefaultDeviceFromEnvironmentWhenNoneExists) {
    // Every other test destroys its devices, so the list is empty here.
    setenv(kProfileEnv, "cx6dx,max_virtqs=8", 1);
    int n = -1;
    ibv_device** list = api().get_device_list(&n);
    unsetenv(kProfileEnv);
    ASSERT_NE(list, nullptr);
    ASSERT_EQ(n, 1);
    EXPECT_STREQ(api().get_device_name(list[0]), kDefaultDeviceName);
    Device* d = device_of(list[0]);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->profile().name, "cx6dx");
    EXPECT_EQ(d->profile().virtio.max_num_virtio_queues, 8u);
    EXPECT_EQ(list[1], nullptr);
    api().free_device_list(list);
    EXPECT_TRUE(destroy_device(kDefaultDeviceName));
}

}  // namespace
}  // namespace mlx5async::emu::test
