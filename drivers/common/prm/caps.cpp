#include "caps.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "caps_layout.hpp"
#include "codec_util.hpp"
#include "general_obj.hpp"
#include "opcodes.hpp"

namespace mlx5async::prm {

namespace G = layout::cmd_hca_cap;
namespace V = layout::virtio_emulation_cap;
using detail::bind;
using detail::need_bytes;

static_assert(layout::kQueryHcaCapIn.bytes() == kQueryHcaCapInBytes);
static_assert(layout::kQueryHcaCapOutHdr.bytes() + kCapBytes == kQueryHcaCapOutBytes);
static_assert(layout::kCmdHcaCap.bytes() == kCapLayoutBytes);
static_assert(layout::kVirtioEmulationCap.bytes() == kCapLayoutBytes);

namespace {

using GC = GeneralCaps;
constexpr detail::Binding<GC> kGeneral[] = {
    bind<&GC::vhca_id>(G::vhca_id),
    bind<&GC::event_cap>(G::event_cap),
    bind<&GC::eth_net_offloads>(G::eth_net_offloads),
    bind<&GC::umem_uid_0>(G::umem_uid_0),
    bind<&GC::log_max_pd>(G::log_max_pd),
    bind<&GC::general_obj_types>(G::general_obj_types),
    bind<&GC::sq_ts_format>(G::sq_ts_format),
};
static_assert(detail::binds_all_values(kGeneral, layout::kCmdHcaCap, 0));

using VC = VirtioEmulationCaps;
template <size_t N, bool A>
constexpr detail::Binding<VC> bind_umem(const Field& f) {
    return {&f,
            [](const VC& c) { return uint64_t(A ? c.umem_param[N].a : c.umem_param[N].b); },
            [](VC& c, uint64_t v) { (A ? c.umem_param[N].a : c.umem_param[N].b) = uint32_t(v); }};
}
constexpr detail::Binding<VC> kVirtio[] = {
    bind<&VC::desc_tunnel_offload_type>(V::desc_tunnel_offload_type),
    bind<&VC::eth_frame_offload_type>(V::eth_frame_offload_type),
    bind<&VC::virtio_version_1_0>(V::virtio_version_1_0),
    bind<&VC::device_features_bits_mask>(V::device_features_bits_mask),
    bind<&VC::event_mode>(V::event_mode),
    bind<&VC::virtio_queue_type>(V::virtio_queue_type),
    bind<&VC::max_tunnel_desc>(V::max_tunnel_desc),
    bind<&VC::log_doorbell_stride>(V::log_doorbell_stride),
    bind<&VC::vnet_modify_ext>(V::dpdk::vnet_modify_ext),
    bind<&VC::virtio_net_q_addr_modify>(V::dpdk::virtio_net_q_addr_modify),
    bind<&VC::virtio_q_index_modify>(V::dpdk::virtio_q_index_modify),
    bind<&VC::log_doorbell_bar_size>(V::log_doorbell_bar_size),
    bind<&VC::doorbell_bar_offset>(V::doorbell_bar_offset),
    bind<&VC::max_emulated_devices>(V::max_emulated_devices),
    bind<&VC::max_num_virtio_queues>(V::max_num_virtio_queues),
    bind<&VC::desc_group_mkey_supported>(V::desc_group_mkey_supported),
    bind<&VC::freeze_to_rdy_supported>(V::freeze_to_rdy_supported),
    bind_umem<0, true>(V::umem_1_buffer_param_a),
    bind_umem<0, false>(V::umem_1_buffer_param_b),
    bind_umem<1, true>(V::umem_2_buffer_param_a),
    bind_umem<1, false>(V::umem_2_buffer_param_b),
    bind_umem<2, true>(V::umem_3_buffer_param_a),
    bind_umem<2, false>(V::umem_3_buffer_param_b),
};
static_assert(detail::binds_all_values(kVirtio, layout::kVirtioEmulationCap,
                                       std::size(V::kCarried)));

template <typename S, size_t N>
void write_caps(const detail::Binding<S> (&table)[N], const S& s, std::span<std::byte> cap,
                const char* layout) {
    detail::require_bytes(cap, kCapLayoutBytes, layout);
    if (const auto* b = detail::first_overwide(table, s)) {
        std::fprintf(stderr, "mlx5async prm: %s.%.*s: value %s does not fit %u bits\n", layout,
                     int(b->field->name.size()), b->field->name.data(),
                     detail::hex(b->get(s)).c_str(), b->field->bit_width);
        std::abort();
    }
    detail::zero(cap, kCapLayoutBytes);
    detail::write_bound(table, s, cap);
}

// Status check, then the capability at byte 16 of the output.
Result<std::span<const std::byte>> cap_of_out(std::span<const std::byte> out, const char* what) {
    constexpr auto kOp = uint16_t(Opcode::QUERY_HCA_CAP);
    MLX5A_CHECK(check_out(out, kOp, 0));
    size_t hdr = layout::kQueryHcaCapOutHdr.bytes();
    if (auto r = need_bytes(out, hdr + kCapLayoutBytes, what); !r) {
        Error e = r.error();
        e.opcode = kOp;
        return unexpected(std::move(e));
    }
    return out.subspan(hdr);
}

}  // namespace

void encode_query_hca_cap(uint16_t op_mod, std::span<std::byte> in) {
    namespace Q = layout::query_hca_cap_in;
    detail::require_bytes(in, kQueryHcaCapInBytes, "query_hca_cap_in");
    detail::zero(in, kQueryHcaCapInBytes);
    set<Q::opcode>(in, uint16_t(Opcode::QUERY_HCA_CAP));
    set<Q::op_mod>(in, op_mod);
}

void write_general_caps(const GeneralCaps& c, std::span<std::byte> cap) {
    write_caps(kGeneral, c, cap, "cmd_hca_cap");
}

Result<GeneralCaps> read_general_caps(std::span<const std::byte> cap) {
    MLX5A_CHECK(need_bytes(cap, kCapLayoutBytes, "cmd_hca_cap"));
    return detail::read_bound(kGeneral, cap);
}

void write_virtio_emulation_caps(const VirtioEmulationCaps& c, std::span<std::byte> cap) {
    write_caps(kVirtio, c, cap, "virtio_emulation_cap");
}

Result<VirtioEmulationCaps> read_virtio_emulation_caps(std::span<const std::byte> cap) {
    MLX5A_CHECK(need_bytes(cap, kCapLayoutBytes, "virtio_emulation_cap"));
    return detail::read_bound(kVirtio, cap);
}

Result<GeneralCaps> decode_query_general_caps_out(std::span<const std::byte> out) {
    auto cap = cap_of_out(out, "query_hca_cap_out (cmd_hca_cap)");
    MLX5A_CHECK(cap);
    return read_general_caps(*cap);
}

Result<VirtioEmulationCaps> decode_query_virtio_caps_out(std::span<const std::byte> out) {
    auto cap = cap_of_out(out, "query_hca_cap_out (virtio_emulation_cap)");
    MLX5A_CHECK(cap);
    return read_virtio_emulation_caps(*cap);
}

}  // namespace mlx5async::prm
