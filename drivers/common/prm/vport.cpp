#include "vport.hpp"

#include <string>

#include "codec_util.hpp"
#include "general_obj.hpp"
#include "opcodes.hpp"
#include "vport_layout.hpp"

namespace mlx5async::prm {

namespace In = layout::query_nic_vport_context_in;
namespace Out = layout::query_nic_vport_context_out;

static_assert(layout::kQueryNicVportContextIn.bytes() == kQueryNicVportContextInBytes);
static_assert(layout::kQueryNicVportContextOut.bytes() == kQueryNicVportContextOutBytes);

void encode_query_nic_vport_context(std::span<std::byte> in) {
    detail::require_bytes(in, kQueryNicVportContextInBytes, "query_nic_vport_context_in");
    detail::zero(in, kQueryNicVportContextInBytes);
    set<In::opcode>(in, uint16_t(Opcode::QUERY_NIC_VPORT_CONTEXT));
}

Result<uint16_t> decode_query_nic_vport_context_in(std::span<const std::byte> in, bool& other_vport) {
    MLX5A_CHECK(detail::need_bytes(in, kQueryNicVportContextInBytes, "query_nic_vport_context_in"));
    if (const Field* f = first_nonzero_reserved(layout::kQueryNicVportContextIn, in))
        return fail(Errc::InvalidArgument,
                    "query_nic_vport_context_in: reserved field " + std::string(f->name) + " not zero");
    other_vport = get<In::other_vport>(in) != 0;
    return uint16_t(get<In::vport_number>(in));
}

void encode_query_nic_vport_context_out(const NicVportContext& c, std::span<std::byte> out) {
    detail::require_bytes(out, kQueryNicVportContextOutBytes, "query_nic_vport_context_out");
    detail::zero(out, kQueryNicVportContextOutBytes);
    set<Out::mtu>(out, c.mtu);
    set<Out::permanent_mac_47_32>(out, (c.permanent_mac >> 32) & 0xffff);
    set<Out::permanent_mac_31_0>(out, c.permanent_mac & 0xffffffff);
}

Result<NicVportContext> decode_query_nic_vport_context_out(std::span<const std::byte> out) {
    MLX5A_CHECK(check_out(out, uint16_t(Opcode::QUERY_NIC_VPORT_CONTEXT), 0));
    MLX5A_CHECK(detail::need_bytes(out, kQueryNicVportContextOutBytes, "query_nic_vport_context_out"));
    NicVportContext c;
    c.mtu = uint16_t(get<Out::mtu>(out));
    c.permanent_mac = (get<Out::permanent_mac_47_32>(out) << 32) | get<Out::permanent_mac_31_0>(out);
    return c;
}

}  // namespace mlx5async::prm
