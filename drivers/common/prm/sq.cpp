#include "sq.hpp"

#include <algorithm>
#include <string>

#include "codec_util.hpp"
#include "general_obj.hpp"
#include "opcodes.hpp"
#include "sq_layout.hpp"

namespace mlx5async::prm {

namespace L = layout;
namespace Cr = layout::create_sq_in;
namespace Md = layout::modify_sq_in;
namespace S = layout::sqc;
namespace Ctl = layout::wqe_ctrl_seg;
namespace Eth = layout::wqe_eth_seg;
using detail::bind;
using detail::need_bytes;

static_assert(kCreateSqInBytes == L::kCreateSqIn.bytes());
static_assert(kModifySqInBytes == L::kModifySqIn.bytes());
static_assert(kSqCmdBytes == L::kDestroySqIn.bytes() && kSqCmdBytes == L::kCreateSqOut.bytes());
static_assert(L::kWqeCtrlSeg.bytes() == kWqeSegment && L::kWqeEthSeg.bytes() == kWqeSegment);

namespace {

constexpr const Field& sq_at(const Field& f) { return Cr::in_sqc(f); }

using SqBinding = detail::Binding<SqAttr>;
constexpr SqBinding kSqBindings[] = {
    bind<&SqAttr::uid>(Cr::uid),
    bind<&SqAttr::flush_in_error_en>(sq_at(S::flush_in_error_en)),
    bind<&SqAttr::min_wqe_inline_mode>(sq_at(S::min_wqe_inline_mode)),
    bind<&SqAttr::state>(sq_at(S::state)),
    bind<&SqAttr::ts_format>(sq_at(S::ts_format)),
    bind<&SqAttr::user_index>(sq_at(S::user_index)),
    bind<&SqAttr::cqn>(sq_at(S::cqn)),
    bind<&SqAttr::tis_lst_sz>(sq_at(S::tis_lst_sz)),
    bind<&SqAttr::tis_num_0>(sq_at(S::tis_num_0)),
    bind<&SqAttr::wq_type>(sq_at(S::wq_type)),
    bind<&SqAttr::pd>(sq_at(S::pd)),
    bind<&SqAttr::uar_page>(sq_at(S::uar_page)),
    bind<&SqAttr::dbr_addr>(sq_at(S::dbr_addr)),
    bind<&SqAttr::log_wq_stride>(sq_at(S::log_wq_stride)),
    bind<&SqAttr::log_wq_pg_sz>(sq_at(S::log_wq_pg_sz)),
    bind<&SqAttr::log_wq_sz>(sq_at(S::log_wq_sz)),
    bind<&SqAttr::dbr_umem_valid>(sq_at(S::dbr_umem_valid)),
    bind<&SqAttr::wq_umem_valid>(sq_at(S::wq_umem_valid)),
    bind<&SqAttr::dbr_umem_id>(sq_at(S::dbr_umem_id)),
    bind<&SqAttr::wq_umem_id>(sq_at(S::wq_umem_id)),
    bind<&SqAttr::wq_umem_offset>(sq_at(S::wq_umem_offset)),
};
// Every value field but the opcode (the codec's) and op_mod (zero) is bound.
constexpr bool binds_all_but_opcode() {
    size_t values = 0;
    for (const Field* f : L::kCreateSqIn.fields) {
        if (f->reserved() || f->name == "opcode" || f->name == "op_mod") continue;
        ++values;
        bool found = false;
        for (const auto& b : kSqBindings) found = found || b.field->same_as(*f);
        if (!found) return false;
    }
    return values == std::size(kSqBindings);
}
static_assert(binds_all_but_opcode());

Result<void> need_opcode(std::span<const std::byte> in, Opcode op, const char* what) {
    if (get<Cr::opcode>(in) == uint16_t(op)) return {};
    return fail(Errc::InvalidArgument, std::string(what) + ": opcode " + detail::hex(get<Cr::opcode>(in)) +
                                           " is not " + opcode_name(uint16_t(op)));
}

std::string_view first_reserved(const Layout& l, std::span<const std::byte> in, std::string_view short_msg) {
    if (in.size() < l.bytes()) return short_msg;
    const Field* f = first_nonzero_reserved(l, in);
    return f ? f->name : std::string_view{};
}

}  // namespace

const char* sq_state_name(uint8_t s) noexcept {
    switch (SqState(s)) {
        case SqState::RST: return "RST";
        case SqState::RDY: return "RDY";
        case SqState::ERR: return "ERR";
    }
    return "UNKNOWN_SQ_STATE";
}

SqTsFormat sq_ts_format_for_cap(uint8_t cap) noexcept {
    switch (cap) {
        case 0: return SqTsFormat::FREE_RUNNING;
        case 1: return SqTsFormat::REAL_TIME;
        default: return SqTsFormat::DEFAULT;
    }
}

bool sq_ts_format_allowed(uint8_t cap, uint8_t ts_format) noexcept {
    switch (SqTsFormat(ts_format)) {
        case SqTsFormat::FREE_RUNNING: return cap == 0 || cap == 2;
        case SqTsFormat::REAL_TIME: return cap == 1 || cap == 2;
        case SqTsFormat::DEFAULT: return true;
    }
    return false;
}

// ---- CREATE_SQ / MODIFY_SQ / DESTROY_SQ --------------------------------

Result<void> encode_create_sq(const SqAttr& a, std::span<std::byte> in) {
    MLX5A_CHECK(need_bytes(in, kCreateSqInBytes, "create_sq_in"));
    if (const SqBinding* b = detail::first_overwide(kSqBindings, a))
        return fail(Errc::InvalidArgument, "create_sq_in." + std::string(b->field->name) + ": value " +
                                               detail::hex(b->get(a)) + " does not fit " +
                                               std::to_string(b->field->bit_width) + " bits");
    detail::zero(in, kCreateSqInBytes);
    set<Cr::opcode>(in, uint16_t(Opcode::CREATE_SQ));
    detail::write_bound(kSqBindings, a, in);
    return {};
}

Result<SqAttr> decode_create_sq_in(std::span<const std::byte> in) {
    MLX5A_CHECK(need_bytes(in, kCreateSqInBytes, "create_sq_in"));
    MLX5A_CHECK(need_opcode(in, Opcode::CREATE_SQ, "create_sq_in"));
    return detail::read_bound(kSqBindings, in);
}

std::string_view create_sq_in_nonzero_reserved(std::span<const std::byte> in) {
    return first_reserved(L::kCreateSqIn, in, "create_sq_in (short buffer)");
}

void encode_create_sq_out(uint32_t sqn, std::span<std::byte> out) {
    detail::require_bytes(out, kSqCmdBytes, "create_sq_out");
    detail::zero(out, kSqCmdBytes);
    set<L::create_sq_out::sqn>(out, sqn);
}

Result<uint32_t> decode_create_sq_out(std::span<const std::byte> out) {
    MLX5A_CHECK(check_out(out, uint16_t(Opcode::CREATE_SQ), 0));
    MLX5A_CHECK(need_bytes(out, kSqCmdBytes, "create_sq_out"));
    return uint32_t(get<L::create_sq_out::sqn>(out));
}

Result<void> encode_modify_sq(const SqModify& m, std::span<std::byte> in) {
    MLX5A_CHECK(need_bytes(in, kModifySqInBytes, "modify_sq_in"));
    if (!fits<Md::sqn>(m.sqn) || !fits<Md::sq_state>(m.from) || !fits<S::state>(m.to))
        return fail(Errc::InvalidArgument, "modify_sq_in: sqn or a state does not fit its field");
    detail::zero(in, kModifySqInBytes);
    set<Md::opcode>(in, uint16_t(Opcode::MODIFY_SQ));
    set<Md::sq_state>(in, m.from);
    set<Md::sqn>(in, m.sqn);
    detail::set_field(in, Md::in_sqc(S::state), m.to);
    return {};
}

Result<SqModify> decode_modify_sq_in(std::span<const std::byte> in) {
    MLX5A_CHECK(need_bytes(in, kModifySqInBytes, "modify_sq_in"));
    MLX5A_CHECK(need_opcode(in, Opcode::MODIFY_SQ, "modify_sq_in"));
    SqModify m;
    m.sqn = uint32_t(get<Md::sqn>(in));
    m.from = uint8_t(get<Md::sq_state>(in));
    m.to = uint8_t(detail::get_field(in, Md::in_sqc(S::state)));
    return m;
}

std::string_view modify_sq_in_nonzero_reserved(std::span<const std::byte> in) {
    if (in.size() < kModifySqInBytes) return "modify_sq_in (short buffer)";
    for (const Field* f : L::kModifySqIn.fields) {
        const bool carried = f->same_as(Md::opcode) || f->same_as(Md::sq_state) ||
                             f->same_as(Md::sqn) || f->same_as(Md::in_sqc(S::state));
        if (!carried && !bits_zero(in, *f)) return f->name;
    }
    return {};
}

void encode_modify_sq_out(std::span<std::byte> out) {
    detail::require_bytes(out, kSqCmdBytes, "modify_sq_out");
    detail::zero(out, kSqCmdBytes);
}

Result<void> decode_modify_sq_out(std::span<const std::byte> out) {
    MLX5A_CHECK(check_out(out, uint16_t(Opcode::MODIFY_SQ), 0));
    return need_bytes(out, kSqCmdBytes, "modify_sq_out");
}

void encode_destroy_sq(uint32_t sqn, std::span<std::byte> in) {
    detail::require_bytes(in, kSqCmdBytes, "destroy_sq_in");
    detail::zero(in, kSqCmdBytes);
    set<L::destroy_sq_in::opcode>(in, uint16_t(Opcode::DESTROY_SQ));
    set<L::destroy_sq_in::sqn>(in, sqn);
}

Result<uint32_t> decode_destroy_sq_in(std::span<const std::byte> in) {
    MLX5A_CHECK(need_bytes(in, kSqCmdBytes, "destroy_sq_in"));
    MLX5A_CHECK(need_opcode(in, Opcode::DESTROY_SQ, "destroy_sq_in"));
    return uint32_t(get<L::destroy_sq_in::sqn>(in));
}

// ---- Send WQE ----------------------------------------------------------

namespace {

// Inline bytes the Ethernet segment holds itself (inline_hdr_start).
constexpr size_t kEthSegInline = 2;

}  // namespace

uint8_t inline_send_ds(size_t frame_bytes) {
    const size_t rest = frame_bytes > kEthSegInline ? frame_bytes - kEthSegInline : 0;
    return uint8_t(std::min<size_t>(2 + (rest + kWqeSegment - 1) / kWqeSegment, 255));
}

Result<void> encode_inline_send(uint16_t wqe_index, uint32_t sqn, bool signaled,
                                std::span<const std::byte> frame, std::span<std::byte> out) {
    if (frame.size() < kEthHeaderBytes)
        return fail(Errc::InvalidArgument, "send WQE: a frame of " + std::to_string(frame.size()) +
                                               " bytes is shorter than its Ethernet header");
    const uint8_t ds = inline_send_ds(frame.size());
    if (ds > kMaxWqeDs || frame.size() > 0xffff)
        return fail(Errc::InvalidArgument, "send WQE: a frame of " + std::to_string(frame.size()) +
                                               " bytes does not fit one WQE inline");
    if (!fits<Ctl::sqn>(sqn)) return fail(Errc::InvalidArgument, "send WQE: sqn does not fit 24 bits");
    const size_t bytes = size_t(wqe_basic_blocks(ds)) * kWqeBasicBlock;
    MLX5A_CHECK(need_bytes(out, bytes, "send WQE"));
    detail::zero(out, bytes);
    set<Ctl::wqe_index>(out, wqe_index);
    set<Ctl::opcode>(out, kWqeOpcodeSend);
    set<Ctl::sqn>(out, sqn);
    set<Ctl::ds>(out, ds);
    set<Ctl::ce>(out, signaled ? kWqeCeCqeAlways : 0);
    auto eth = out.subspan(kWqeSegment);
    set<Eth::inline_hdr_sz>(eth, frame.size());
    std::copy(frame.begin(), frame.end(), eth.begin() + Eth::inline_hdr_start.bit_offset / 8);
    return {};
}

Result<WqeCtrl> decode_wqe_ctrl(std::span<const std::byte> ctrl) {
    MLX5A_CHECK(need_bytes(ctrl, kWqeSegment, "wqe_ctrl_seg"));
    if (const Field* f = first_nonzero_reserved(L::kWqeCtrlSeg, ctrl))
        return fail(Errc::InvalidArgument, "wqe_ctrl_seg: reserved field " + std::string(f->name) + " not zero");
    WqeCtrl c;
    c.opc_mod = uint8_t(get<Ctl::opc_mod>(ctrl));
    c.wqe_index = uint16_t(get<Ctl::wqe_index>(ctrl));
    c.opcode = uint8_t(get<Ctl::opcode>(ctrl));
    c.sqn = uint32_t(get<Ctl::sqn>(ctrl));
    c.ds = uint8_t(get<Ctl::ds>(ctrl));
    c.signature = uint8_t(get<Ctl::signature>(ctrl));
    c.fm = uint8_t(get<Ctl::fm>(ctrl));
    c.ce = uint8_t(get<Ctl::ce>(ctrl));
    c.se = get<Ctl::se>(ctrl) != 0;
    c.imm = uint32_t(get<Ctl::imm>(ctrl));
    return c;
}

Result<InlineSend> decode_inline_send(std::span<const std::byte> wqe) {
    auto c = decode_wqe_ctrl(wqe);
    MLX5A_CHECK(c);
    if (c->opcode != kWqeOpcodeSend || c->opc_mod != 0)
        return fail(Errc::InvalidArgument, "send WQE: opcode " + detail::hex(c->opcode) + " opc_mod " +
                                               detail::hex(c->opc_mod) + " is not an Ethernet SEND");
    if (c->ds < 2)
        return fail(Errc::InvalidArgument, "send WQE: ds " + std::to_string(c->ds) +
                                               " leaves no Ethernet segment");
    MLX5A_CHECK(need_bytes(wqe, size_t(c->ds) * kWqeSegment, "send WQE"));
    auto eth = wqe.subspan(kWqeSegment, kWqeSegment);
    if (const Field* f = first_nonzero_reserved(L::kWqeEthSeg, eth))
        return fail(Errc::InvalidArgument, "wqe_eth_seg: " + std::string(f->name) +
                                               " not zero (software parser, checksum, LSO or metadata "
                                               "fields: not for an inlined frame)");
    const size_t len = get<Eth::inline_hdr_sz>(eth);
    const size_t room = kEthSegInline + size_t(c->ds - 2) * kWqeSegment;
    if (len > room)
        return fail(Errc::InvalidArgument, "send WQE: inline_hdr_sz " + std::to_string(len) +
                                               " is longer than its " + std::to_string(c->ds) + " segments hold");
    InlineSend s;
    s.ctrl = *c;
    const auto* data = wqe.data() + kWqeSegment + Eth::inline_hdr_start.bit_offset / 8;
    s.frame.assign(data, data + len);
    s.trailing_ds = uint8_t(c->ds - inline_send_ds(len));
    return s;
}

}  // namespace mlx5async::prm
