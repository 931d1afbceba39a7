#include "transport.hpp"

#include <algorithm>
#include <string>

#include "general_obj.hpp"
#include "opcodes.hpp"
#include "transport_layout.hpp"

namespace mlx5async::prm {
namespace {

namespace cmd = layout::td_cmd;
namespace nout = layout::num_out;
namespace tc = layout::tisc;

Result<void> need(std::span<const std::byte> b, size_t n, const char* what) {
    if (b.size() >= n) return {};
    return fail(Errc::ShortBuffer, std::string(what) + ": buffer of " + std::to_string(b.size()) +
                                       " bytes, layout needs " + std::to_string(n));
}

void encode_number_cmd(Opcode op, uint32_t number, std::span<std::byte> in) {
    std::fill(in.begin(), in.begin() + kTransportCmdBytes, std::byte{0});
    set<cmd::opcode>(in, uint16_t(op));
    set<cmd::number>(in, number);
}

Result<uint32_t> decode_number_cmd(std::span<const std::byte> in, Opcode op, const char* what) {
    MLX5A_CHECK(need(in, kTransportCmdBytes, what));
    if (get<cmd::opcode>(in) != uint16_t(op))
        return fail(Errc::InvalidArgument, std::string(what) + ": wrong opcode");
    return uint32_t(get<cmd::number>(in));
}

void encode_number_out(uint32_t number, std::span<std::byte> out) {
    std::fill(out.begin(), out.begin() + kTransportCmdBytes, std::byte{0});
    set<nout::number>(out, number);
}

Result<uint32_t> decode_number_out(std::span<const std::byte> out, Opcode op, const char* what) {
    MLX5A_CHECK(need(out, kTransportCmdBytes, what));
    MLX5A_CHECK(check_out(out, uint16_t(op), 0));
    return uint32_t(get<nout::number>(out));
}

std::span<std::byte> tisc_of(std::span<std::byte> in) {
    return in.subspan(layout::create_tis_in::kCtx / 8);
}
std::span<const std::byte> tisc_of(std::span<const std::byte> in) {
    return in.subspan(layout::create_tis_in::kCtx / 8);
}

}  // namespace

void encode_alloc_transport_domain(std::span<std::byte> in) {
    encode_number_cmd(Opcode::ALLOC_TRANSPORT_DOMAIN, 0, in);
}

void encode_alloc_transport_domain_out(uint32_t td, std::span<std::byte> out) {
    encode_number_out(td, out);
}

Result<uint32_t> decode_alloc_transport_domain_out(std::span<const std::byte> out) {
    return decode_number_out(out, Opcode::ALLOC_TRANSPORT_DOMAIN, "alloc_transport_domain_out");
}

void encode_dealloc_transport_domain(uint32_t td, std::span<std::byte> in) {
    encode_number_cmd(Opcode::DEALLOC_TRANSPORT_DOMAIN, td, in);
}

Result<uint32_t> decode_dealloc_transport_domain_in(std::span<const std::byte> in) {
    return decode_number_cmd(in, Opcode::DEALLOC_TRANSPORT_DOMAIN, "dealloc_transport_domain_in");
}

Result<void> encode_create_tis(const TisAttr& a, std::span<std::byte> in) {
    MLX5A_CHECK(need(in, kCreateTisInBytes, "create_tis_in"));
    struct Check {
        const char* name;
        bool ok;
    };
    for (const Check& c : {Check{"transport_domain", fits<tc::transport_domain>(a.transport_domain)},
                           Check{"pd", fits<tc::pd>(a.pd)},
                           Check{"underlay_qpn", fits<tc::underlay_qpn>(a.underlay_qpn)},
                           Check{"prio", fits<tc::prio>(a.prio)},
                           Check{"lag_tx_port_affinity",
                                 fits<tc::lag_tx_port_affinity>(a.lag_tx_port_affinity)}})
        if (!c.ok) return fail(Errc::InvalidArgument, std::string("tisc.") + c.name + ": value does not fit");
    std::fill(in.begin(), in.begin() + kCreateTisInBytes, std::byte{0});
    set<cmd::opcode>(in, uint16_t(Opcode::CREATE_TIS));
    auto t = tisc_of(in);
    set<tc::strict_lag_tx_port_affinity>(t, a.strict_lag_tx_port_affinity);
    set<tc::tls_en>(t, a.tls_en);
    set<tc::lag_tx_port_affinity>(t, a.lag_tx_port_affinity);
    set<tc::prio>(t, a.prio);
    set<tc::transport_domain>(t, a.transport_domain);
    set<tc::underlay_qpn>(t, a.underlay_qpn);
    set<tc::pd>(t, a.pd);
    return {};
}

Result<TisAttr> decode_create_tis_in(std::span<const std::byte> in) {
    MLX5A_CHECK(need(in, kCreateTisInBytes, "create_tis_in"));
    if (get<cmd::opcode>(in) != uint16_t(Opcode::CREATE_TIS))
        return fail(Errc::InvalidArgument, "create_tis_in: wrong opcode");
    auto t = tisc_of(in);
    TisAttr a;
    a.strict_lag_tx_port_affinity = get<tc::strict_lag_tx_port_affinity>(t);
    a.tls_en = get<tc::tls_en>(t);
    a.lag_tx_port_affinity = uint8_t(get<tc::lag_tx_port_affinity>(t));
    a.prio = uint8_t(get<tc::prio>(t));
    a.transport_domain = uint32_t(get<tc::transport_domain>(t));
    a.underlay_qpn = uint32_t(get<tc::underlay_qpn>(t));
    a.pd = uint32_t(get<tc::pd>(t));
    return a;
}

std::string_view create_tis_in_nonzero_reserved(std::span<const std::byte> in) {
    if (in.size() < kCreateTisInBytes) return {};
    if (!bits_zero(in, layout::create_tis_in::reserved_at_40)) return "create_tis_in.reserved_at_40";
    if (const Field* f = first_nonzero_reserved(tc::kLayout, tisc_of(in))) return f->name;
    return {};
}

void encode_create_tis_out(uint32_t tisn, std::span<std::byte> out) { encode_number_out(tisn, out); }

Result<uint32_t> decode_create_tis_out(std::span<const std::byte> out) {
    return decode_number_out(out, Opcode::CREATE_TIS, "create_tis_out");
}

void encode_destroy_tis(uint32_t tisn, std::span<std::byte> in) {
    encode_number_cmd(Opcode::DESTROY_TIS, tisn, in);
}

Result<uint32_t> decode_destroy_tis_in(std::span<const std::byte> in) {
    return decode_number_cmd(in, Opcode::DESTROY_TIS, "destroy_tis_in");
}

}  // namespace mlx5async::prm
