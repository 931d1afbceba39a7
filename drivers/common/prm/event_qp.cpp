#include "event_qp.hpp"

#include <array>
#include <initializer_list>
#include <string>

#include "codec_util.hpp"
#include "event_qp_layout.hpp"
#include "general_obj.hpp"
#include "opcodes.hpp"

namespace mlx5async::prm {

namespace L = layout;
namespace Cq = layout::create_cq_in;
namespace Qp = layout::create_qp_in;
namespace Mod = layout::qp_modify_in;
namespace C = layout::cqc;
namespace Q = layout::qpc;
using detail::bind;
using detail::need_bytes;

// The public sizes are the layouts' (pas[] excluded).
static_assert(kCreateCqInBytes == L::kCreateCqIn.bytes());
static_assert(kCreateQpInBytes == L::kCreateQpIn.bytes());
static_assert(kQpModifyInBytes == L::kQpModifyIn.bytes());
static_assert(kEventQpCmdBytes == L::kDestroyCqIn.bytes());
static_assert(kCqeBytes == L::kCqe64.bytes());

namespace {

// ---- binding tables: one per typed struct, walked in both directions ----

constexpr const Field& cq_at(const Field& f) { return Cq::in_cqc(f); }
constexpr const Field& qp_at(const Field& f) { return Qp::in_qpc(f); }
constexpr const Field& mod_at(const Field& f) { return Mod::in_qpc(f); }

using CqBinding = detail::Binding<CqAttr>;
constexpr CqBinding kCqBindings[] = {
    bind<&CqAttr::uid>(Cq::uid),
    bind<&CqAttr::dbr_umem_valid>(cq_at(C::dbr_umem_valid)),
    bind<&CqAttr::cqe_sz>(cq_at(C::cqe_sz)),
    bind<&CqAttr::cc>(cq_at(C::cc)),
    bind<&CqAttr::oi>(cq_at(C::oi)),
    bind<&CqAttr::dbr_umem_id>(cq_at(C::dbr_umem_id)),
    bind<&CqAttr::log_cq_size>(cq_at(C::log_cq_size)),
    bind<&CqAttr::uar_page>(cq_at(C::uar_page)),
    bind<&CqAttr::c_eqn>(cq_at(C::c_eqn_or_apu_element)),
    bind<&CqAttr::log_page_size>(cq_at(C::log_page_size)),
    bind<&CqAttr::dbr_addr>(cq_at(C::dbr_addr)),
    bind<&CqAttr::cq_umem_offset>(Cq::cq_umem_offset),
    bind<&CqAttr::cq_umem_id>(Cq::cq_umem_id),
    bind<&CqAttr::cq_umem_valid>(Cq::cq_umem_valid),
};

using QpBinding = detail::Binding<QpAttr>;
constexpr QpBinding kQpBindings[] = {
    bind<&QpAttr::uid>(Qp::uid),
    bind<&QpAttr::st>(qp_at(Q::st)),
    bind<&QpAttr::pm_state>(qp_at(Q::pm_state)),
    bind<&QpAttr::pd>(qp_at(Q::pd)),
    bind<&QpAttr::log_rq_size>(qp_at(Q::log_rq_size)),
    bind<&QpAttr::log_rq_stride>(qp_at(Q::log_rq_stride)),
    bind<&QpAttr::no_sq>(qp_at(Q::no_sq)),
    bind<&QpAttr::log_sq_size>(qp_at(Q::log_sq_size)),
    bind<&QpAttr::ts_format>(qp_at(Q::ts_format)),
    bind<&QpAttr::uar_page>(qp_at(Q::uar_page)),
    bind<&QpAttr::log_page_size>(qp_at(Q::log_page_size)),
    bind<&QpAttr::cqn_snd>(qp_at(Q::cqn_snd)),
    bind<&QpAttr::cqn_rcv>(qp_at(Q::cqn_rcv)),
    bind<&QpAttr::dbr_addr>(qp_at(Q::dbr_addr)),
    bind<&QpAttr::rq_type>(qp_at(Q::rq_type)),
    bind<&QpAttr::dbr_umem_valid>(qp_at(Q::dbr_umem_valid)),
    bind<&QpAttr::dbr_umem_id>(qp_at(Q::dbr_umem_id)),
    bind<&QpAttr::wq_umem_offset>(Qp::wq_umem_offset),
    bind<&QpAttr::wq_umem_id>(Qp::wq_umem_id),
    bind<&QpAttr::wq_umem_valid>(Qp::wq_umem_valid),
};

// The transition itself is the opcode, bound separately.
using ModBinding = detail::Binding<QpModify>;
constexpr ModBinding kModBindings[] = {
    bind<&QpModify::qpn>(Mod::qpn),
    bind<&QpModify::mtu>(mod_at(Q::mtu)),
    bind<&QpModify::log_msg_max>(mod_at(Q::log_msg_max)),
    bind<&QpModify::remote_qpn>(mod_at(Q::remote_qpn)),
    bind<&QpModify::fl>(mod_at(Q::fl)),
    bind<&QpModify::vhca_port_num>(mod_at(Q::vhca_port_num)),
    bind<&QpModify::retry_count>(mod_at(Q::retry_count)),
    bind<&QpModify::rnr_retry>(mod_at(Q::rnr_retry)),
    bind<&QpModify::min_rnr_nak>(mod_at(Q::min_rnr_nak)),
};

// Every value field of `l` is bound, except the named ones the codec fills
// itself (opcode) or leaves zero (op_mod, qpc.state).
template <typename S, size_t N>
constexpr bool binds_all_but(const detail::Binding<S> (&table)[N], const Layout& l,
                             std::initializer_list<std::string_view> skip) {
    size_t values = 0;
    for (const Field* f : l.fields) {
        if (f->reserved()) continue;
        bool skipped = false;
        for (std::string_view s : skip) skipped = skipped || f->name == s;
        if (skipped) continue;
        ++values;
        bool found = false;
        for (const auto& b : table) found = found || b.field->same_as(*f);
        if (!found) return false;
    }
    return values == N;
}
static_assert(binds_all_but(kCqBindings, L::kCreateCqIn, {"opcode", "op_mod"}));
static_assert(binds_all_but(kQpBindings, L::kCreateQpIn, {"opcode", "op_mod", "state",
                                                          "mtu", "log_msg_max", "remote_qpn",
                                                          "primary_address_path.fl",
                                                          "primary_address_path.vhca_port_num",
                                                          "retry_count", "rnr_retry",
                                                          "min_rnr_nak"}));

// "create_qp_in.qpc.pd" for a field inside the context, else "create_qp_in.pd".
template <size_t N>
std::string qualified(const char* cmd, const char* ctx, const std::array<Field, N>& ctx_fields,
                      const Field* f) {
    bool in_ctx = f >= ctx_fields.data() && f < ctx_fields.data() + N;
    return std::string(cmd) + "." + (in_ctx ? std::string(ctx) + "." : "") + std::string(f->name);
}

template <typename S, size_t N, size_t M>
Result<void> check_fits(const detail::Binding<S> (&table)[N], const S& s, const char* cmd,
                        const char* ctx, const std::array<Field, M>& ctx_fields) {
    const detail::Binding<S>* b = detail::first_overwide(table, s);
    if (!b) return {};
    return fail(Errc::InvalidArgument, qualified(cmd, ctx, ctx_fields, b->field) + ": value " +
                                           detail::hex(b->get(s)) + " does not fit " +
                                           std::to_string(b->field->bit_width) + " bits");
}

Result<void> need_opcode(std::span<const std::byte> in, Opcode op, const char* what) {
    if (get<Cq::opcode>(in) == uint16_t(op)) return {};
    return fail(Errc::InvalidArgument, std::string(what) + ": opcode " +
                                           detail::hex(get<Cq::opcode>(in)) + " is not " +
                                           opcode_name(uint16_t(op)));
}

std::string_view first_reserved(const Layout& l, std::span<const std::byte> in,
                                std::string_view short_msg) {
    if (in.size() < l.bytes()) return short_msg;
    const Field* f = first_nonzero_reserved(l, in);
    return f ? f->name : std::string_view{};
}

// destroy_cq_in / destroy_qp_in and create_cq_out / create_qp_out share one
// 16-byte shape: a number at 0x48.
void encode_number_in(Opcode op, uint32_t number, std::span<std::byte> in, const char* what) {
    detail::require_bytes(in, kEventQpCmdBytes, what);
    detail::zero(in, kEventQpCmdBytes);
    set<L::obj_cmd::opcode>(in, uint16_t(op));
    set<L::obj_cmd::number>(in, number);
}

Result<uint32_t> decode_number_in(std::span<const std::byte> in, Opcode op, const char* what) {
    MLX5A_CHECK(need_bytes(in, kEventQpCmdBytes, what));
    MLX5A_CHECK(need_opcode(in, op, what));
    return uint32_t(get<L::obj_cmd::number>(in));
}

void encode_number_out(uint32_t number, std::span<std::byte> out, const char* what) {
    detail::require_bytes(out, kEventQpCmdBytes, what);
    detail::zero(out, kEventQpCmdBytes);
    set<L::obj_out::number>(out, number);
}

// Status first (a failed command's output may be just the 8-byte header).
Result<uint32_t> decode_number_out(std::span<const std::byte> out, Opcode op, const char* what) {
    MLX5A_CHECK(check_out(out, uint16_t(op), 0));
    MLX5A_CHECK(need_bytes(out, kEventQpCmdBytes, what));
    return uint32_t(get<L::obj_out::number>(out));
}

bool is_transition(uint16_t op) {
    return op == uint16_t(QpTransition::RST2INIT) || op == uint16_t(QpTransition::INIT2RTR) ||
           op == uint16_t(QpTransition::RTR2RTS);
}

}  // namespace

CqUmemFields create_cq_umem_fields() { return {cq_at(C::dbr_umem_id), Cq::cq_umem_id}; }

QpMadeFields create_qp_made_fields() {
    return {qp_at(Q::cqn_rcv), qp_at(Q::cqn_snd), qp_at(Q::dbr_umem_id), Qp::wq_umem_id};
}

QpModifyMadeFields qp_modify_made_fields() { return {Mod::qpn, mod_at(Q::remote_qpn)}; }

// ---- CQ ----------------------------------------------------------------

Result<void> encode_create_cq(const CqAttr& a, std::span<std::byte> in) {
    MLX5A_CHECK(need_bytes(in, kCreateCqInBytes, "create_cq_in"));
    MLX5A_CHECK(check_fits(kCqBindings, a, "create_cq_in", "cq_context", Cq::kCqcFields));
    detail::zero(in, kCreateCqInBytes);
    set<Cq::opcode>(in, uint16_t(Opcode::CREATE_CQ));
    detail::write_bound(kCqBindings, a, in);
    return {};
}

Result<CqAttr> decode_create_cq_in(std::span<const std::byte> in) {
    MLX5A_CHECK(need_bytes(in, kCreateCqInBytes, "create_cq_in"));
    MLX5A_CHECK(need_opcode(in, Opcode::CREATE_CQ, "create_cq_in"));
    return detail::read_bound(kCqBindings, in);
}

std::string_view create_cq_in_nonzero_reserved(std::span<const std::byte> in) {
    return first_reserved(L::kCreateCqIn, in, "create_cq_in (short buffer)");
}

void encode_create_cq_out(uint32_t cqn, std::span<std::byte> out) {
    encode_number_out(cqn, out, "create_cq_out");
}

Result<uint32_t> decode_create_cq_out(std::span<const std::byte> out) {
    return decode_number_out(out, Opcode::CREATE_CQ, "create_cq_out");
}

void encode_destroy_cq(uint32_t cqn, std::span<std::byte> in) {
    encode_number_in(Opcode::DESTROY_CQ, cqn, in, "destroy_cq_in");
}

Result<uint32_t> decode_destroy_cq_in(std::span<const std::byte> in) {
    return decode_number_in(in, Opcode::DESTROY_CQ, "destroy_cq_in");
}

// ---- QP ----------------------------------------------------------------

Result<void> encode_create_qp(const QpAttr& a, std::span<std::byte> in) {
    MLX5A_CHECK(need_bytes(in, kCreateQpInBytes, "create_qp_in"));
    MLX5A_CHECK(check_fits(kQpBindings, a, "create_qp_in", "qpc", Qp::kQpcFields));
    detail::zero(in, kCreateQpInBytes);
    set<Qp::opcode>(in, uint16_t(Opcode::CREATE_QP));
    detail::write_bound(kQpBindings, a, in);
    return {};
}

Result<QpAttr> decode_create_qp_in(std::span<const std::byte> in) {
    MLX5A_CHECK(need_bytes(in, kCreateQpInBytes, "create_qp_in"));
    MLX5A_CHECK(need_opcode(in, Opcode::CREATE_QP, "create_qp_in"));
    return detail::read_bound(kQpBindings, in);
}

std::string_view create_qp_in_nonzero_reserved(std::span<const std::byte> in) {
    return first_reserved(L::kCreateQpIn, in, "create_qp_in (short buffer)");
}

void encode_create_qp_out(uint32_t qpn, std::span<std::byte> out) {
    encode_number_out(qpn, out, "create_qp_out");
}

Result<uint32_t> decode_create_qp_out(std::span<const std::byte> out) {
    return decode_number_out(out, Opcode::CREATE_QP, "create_qp_out");
}

void encode_destroy_qp(uint32_t qpn, std::span<std::byte> in) {
    encode_number_in(Opcode::DESTROY_QP, qpn, in, "destroy_qp_in");
}

Result<uint32_t> decode_destroy_qp_in(std::span<const std::byte> in) {
    return decode_number_in(in, Opcode::DESTROY_QP, "destroy_qp_in");
}

// ---- QP transitions ----------------------------------------------------

const char* qp_transition_name(QpTransition t) noexcept {
    switch (t) {
        case QpTransition::RST2INIT: return "RST2INIT_QP";
        case QpTransition::INIT2RTR: return "INIT2RTR_QP";
        case QpTransition::RTR2RTS: return "RTR2RTS_QP";
    }
    return "UNKNOWN_QP_TRANSITION";
}

// Every field is written as given: which transition carries which field is
// the caller's choice (DPDK mlx5_devx_cmd_modify_qp_state sets
// vhca_port_num in RST2INIT and INIT2RTR, fl/mtu/log_msg_max/remote_qpn/
// min_rnr_nak in INIT2RTR, retry_count/rnr_retry in RTR2RTS).
Result<void> encode_qp_modify(const QpModify& m, std::span<std::byte> in) {
    const char* what = qp_transition_name(m.transition);
    MLX5A_CHECK(need_bytes(in, kQpModifyInBytes, what));
    if (!is_transition(uint16_t(m.transition)))
        return fail(Errc::InvalidArgument, "qp modify: opcode " +
                                               detail::hex(uint16_t(m.transition)) +
                                               " is not a QP transition");
    MLX5A_CHECK(check_fits(kModBindings, m, "qp_modify_in", "qpc", Mod::kQpcFields));
    detail::zero(in, kQpModifyInBytes);
    set<Mod::opcode>(in, uint16_t(m.transition));
    detail::write_bound(kModBindings, m, in);
    return {};
}

Result<QpModify> decode_qp_modify_in(std::span<const std::byte> in) {
    MLX5A_CHECK(need_bytes(in, kQpModifyInBytes, "qp_modify_in"));
    auto op = uint16_t(get<Mod::opcode>(in));
    if (!is_transition(op))
        return fail(Errc::InvalidArgument,
                    "qp_modify_in: opcode " + detail::hex(op) + " is not a QP transition");
    QpModify m = detail::read_bound(kModBindings, in);
    m.transition = QpTransition(op);
    return m;
}

void encode_qp_modify_out(std::span<std::byte> out) {
    detail::require_bytes(out, kEventQpCmdBytes, "qp_modify_out");
    detail::zero(out, kEventQpCmdBytes);
}

// The output does not say which transition it answers: the caller, who
// knows, sets Error::opcode.
Result<void> decode_qp_modify_out(std::span<const std::byte> out) {
    MLX5A_CHECK(check_out(out, 0, 0));
    return need_bytes(out, kEventQpCmdBytes, "qp_modify_out");
}

// ---- CQE and arm word --------------------------------------------------

namespace E = layout::cqe64;

void encode_cqe(const Cqe& c, std::span<std::byte, kCqeBytes> out) {
    std::span<std::byte> b(out);
    detail::zero(b, kCqeBytes);
    set<E::byte_cnt>(b, c.byte_cnt);
    set<E::vendor_err_synd>(b, c.vendor_err_synd);
    set<E::syndrome>(b, c.syndrome);
    set<E::qpn>(b, c.qpn);  // truncated to 24 bits, as the hardware writes it
    set<E::wqe_counter>(b, c.wqe_counter);
    set<E::signature>(b, c.signature);
    set<E::opcode>(b, c.opcode);
    set<E::owner>(b, c.owner);
}

Cqe decode_cqe(std::span<const std::byte, kCqeBytes> in) {
    std::span<const std::byte> b(in);
    Cqe c;
    c.byte_cnt = uint32_t(get<E::byte_cnt>(b));
    c.vendor_err_synd = uint8_t(get<E::vendor_err_synd>(b));
    c.syndrome = uint8_t(get<E::syndrome>(b));
    c.qpn = uint32_t(get<E::qpn>(b));
    c.wqe_counter = uint16_t(get<E::wqe_counter>(b));
    c.signature = uint8_t(get<E::signature>(b));
    c.opcode = uint8_t(get<E::opcode>(b));
    c.owner = get<E::owner>(b) != 0;
    return c;
}

// Linux mlx5_cq_arm: sn & 3 at bit 28, cmd at bit 24 (MLX5_CQ_DB_REQ_NOT /
// _SOL), consumer index & 0xffffff.
uint32_t cq_arm_word(const CqArm& a) {
    return (uint32_t(a.sn & 0x3) << 28) | (uint32_t(uint8_t(a.cmd) & 0x7) << 24) |
           (a.ci & 0xffffff);
}

CqArm decode_cq_arm_word(uint32_t w) {
    return {uint8_t((w >> 28) & 0x3), CqArmCmd((w >> 24) & 0x7), w & 0xffffff};
}

}  // namespace mlx5async::prm
