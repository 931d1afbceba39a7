// Field tables of the event-QP commands: cqc (the CQ context),
// create_cq_in / create_cq_out, destroy_cq_in, qpc (the QP context),
// create_qp_in / create_qp_out, destroy_qp_in, the three QP transitions
// rst2init_qp_in / init2rtr_qp_in / rtr2rts_qp_in (one layout) and their
// output.
//
// Offsets verified against Linux include/linux/mlx5/mlx5_ifc.h
// (mlx5_ifc_cqc_bits, mlx5_ifc_create_cq_in/out_bits,
// mlx5_ifc_destroy_cq_in_bits, mlx5_ifc_ads_bits, mlx5_ifc_qpc_bits,
// mlx5_ifc_create_qp_in/out_bits, mlx5_ifc_destroy_qp_in_bits,
// mlx5_ifc_rst2init/init2rtr/rtr2rts_qp_in/out_bits):
//   cqc: dbr_umem_valid 0x6, cqe_sz 0x8 (3), cc 0xb, oi 0xf, log_cq_size
//        0x63 (5), uar_page 0x68 (24), c_eqn_or_apu_element 0xa0 (32),
//        log_page_size 0xc3 (5), dbr_addr 0x1c0 (64); size 0x200.
//   create_cq_in: cq_context (cqc) 0x80, cq_umem_valid 0x2e0, pas[] 0x880.
//   create_cq_out: cqn 0x48 (24); destroy_cq_in: cqn 0x48 (24).
//   ads (0x160 bits): fl 0x0, vhca_port_num 0x128 (8).
//   qpc: state 0x0 (4), st 0x8 (8), pm_state 0x13 (2), pd 0x28 (24), mtu
//        0x40 (3), log_msg_max 0x43 (5), log_rq_size 0x49 (4), log_rq_stride
//        0x4d (3), no_sq 0x50, log_sq_size 0x51 (4), ts_format 0x58 (2),
//        uar_page 0x68 (24), log_page_size 0xa3 (5), remote_qpn 0xa8 (24),
//        primary_address_path 0xc0 (fl 0xc0, vhca_port_num 0x1e8),
//        secondary_address_path 0x220, retry_count 0x38d (3), rnr_retry
//        0x390 (3), cqn_snd 0x3e8 (24), min_rnr_nak 0x4a3 (5), cqn_rcv
//        0x4e8 (24), dbr_addr 0x500 (64), rq_type 0x565 (3),
//        dbr_umem_valid 0x683; size 0x740.
//   create_qp_in: qpc 0xc0, wq_umem_offset 0x800 (64), wq_umem_id 0x840,
//        wq_umem_valid 0x860, pas[] 0x880.
//   create_qp_out: qpn 0x48 (24); destroy_qp_in: qpn 0x48 (24).
//   rst2init/init2rtr/rtr2rts_qp_in: qpn 0x48 (24), qpc 0xc0,
//        reserved_at_800 (0x80); size 0x880. Their outputs: 0x80.
//
// Fields Linux leaves in padding that DPDK 22.11 mlx5_prm.h and rdma-core's
// mlx5_ifc.h name (DevX umem-backed queues need them), named here at the
// same offsets: cqc.dbr_umem_id 0x20 (Linux reserved_at_20),
// qpc.dbr_umem_id 0x720 (the tail of Linux reserved_at_684[0xbc]),
// create_cq_in.cq_umem_offset 0x280 (64) and cq_umem_id 0x2c0 (Linux
// reserved_at_280[0x60]).
//
// Linux value fields the codec never sets are padding here, so a decoder
// flags them as non-zero reserved bits: cqc status/apu_cq/period/
// moderation fields, qpc fields outside the list above, create_qp_in's
// qpc_ext/input_qpn/opt_param_mask/ece (inside reserved_at_40), the
// transitions' opt_param_mask/ece (inside reserved_at_60) and
// create_qp_out's ece (reserved_at_60).
//
// cqc.c_eqn_or_apu_element is Linux's 32-bit field; DPDK 22.11 calls its low
// 8 bits c_eqn (0xb8) and the rest reserved_at_a0, so an EQ number below 256
// has the same image under both.
#pragma once

#include <array>
#include <iterator>

#include "field.hpp"
#include "mkey_layout.hpp"  // tiles_span

namespace mlx5async::prm::layout {

// The 128-bit "opcode + object number" input shared by destroy_cq_in and
// destroy_qp_in.
namespace obj_cmd {
inline constexpr Field opcode{"opcode", 0x0, 16};
inline constexpr Field uid{"uid", 0x10, 16};
inline constexpr Field reserved_at_20{"reserved_at_20", 0x20, 16};
inline constexpr Field op_mod{"op_mod", 0x30, 16};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 8};
inline constexpr Field number{"cqn", 0x48, 24};  // qpn in destroy_qp_in
inline constexpr Field reserved_at_60{"reserved_at_60", 0x60, 32};
inline constexpr const Field* kFields[] = {&opcode, &uid, &reserved_at_20, &op_mod,
                                           &reserved_at_40, &number, &reserved_at_60};
static_assert(tiles(kFields, 0x80));
}  // namespace obj_cmd

inline constexpr Layout kDestroyCqIn{"destroy_cq_in", 0x80, obj_cmd::kFields};

// create_cq_out / create_qp_out: status, syndrome, the new object at 0x48.
namespace obj_out {
inline constexpr Field status{"status", 0x0, 8};
inline constexpr Field reserved_at_8{"reserved_at_8", 0x8, 24};
inline constexpr Field syndrome{"syndrome", 0x20, 32};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 8};
inline constexpr Field number{"cqn", 0x48, 24};  // qpn in create_qp_out
inline constexpr Field reserved_at_60{"reserved_at_60", 0x60, 32};
inline constexpr const Field* kFields[] = {&status, &reserved_at_8, &syndrome, &reserved_at_40,
                                           &number, &reserved_at_60};
static_assert(tiles(kFields, 0x80));
}  // namespace obj_out

// rst2init/init2rtr/rtr2rts_qp_out: status, syndrome, nothing else we use.
namespace qp_modify_out {
inline constexpr Field status{"status", 0x0, 8};
inline constexpr Field reserved_at_8{"reserved_at_8", 0x8, 24};
inline constexpr Field syndrome{"syndrome", 0x20, 32};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 0x40};
inline constexpr const Field* kFields[] = {&status, &reserved_at_8, &syndrome, &reserved_at_40};
static_assert(tiles(kFields, 0x80));
}  // namespace qp_modify_out

namespace cqc {
inline constexpr Field reserved_at_0{"reserved_at_0", 0x0, 6};
inline constexpr Field dbr_umem_valid{"dbr_umem_valid", 0x6, 1};
inline constexpr Field reserved_at_7{"reserved_at_7", 0x7, 1};
inline constexpr Field cqe_sz{"cqe_sz", 0x8, 3};
inline constexpr Field cc{"cc", 0xb, 1};
inline constexpr Field reserved_at_c{"reserved_at_c", 0xc, 3};
inline constexpr Field oi{"oi", 0xf, 1};
inline constexpr Field reserved_at_10{"reserved_at_10", 0x10, 16};
inline constexpr Field dbr_umem_id{"dbr_umem_id", 0x20, 32};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 0x23};
inline constexpr Field log_cq_size{"log_cq_size", 0x63, 5};
inline constexpr Field uar_page{"uar_page", 0x68, 24};
inline constexpr Field reserved_at_80{"reserved_at_80", 0x80, 32};
inline constexpr Field c_eqn_or_apu_element{"c_eqn_or_apu_element", 0xa0, 32};
inline constexpr Field reserved_at_c0{"reserved_at_c0", 0xc0, 3};
inline constexpr Field log_page_size{"log_page_size", 0xc3, 5};
inline constexpr Field reserved_at_c8{"reserved_at_c8", 0xc8, 0xf8};
inline constexpr Field dbr_addr{"dbr_addr", 0x1c0, 64};
inline constexpr const Field* kFields[] = {
    &reserved_at_0, &dbr_umem_valid, &reserved_at_7, &cqe_sz, &cc, &reserved_at_c, &oi,
    &reserved_at_10, &dbr_umem_id, &reserved_at_40, &log_cq_size, &uar_page, &reserved_at_80,
    &c_eqn_or_apu_element, &reserved_at_c0, &log_page_size, &reserved_at_c8, &dbr_addr,
};
static_assert(tiles(kFields, 0x200));
}  // namespace cqc

inline constexpr Layout kCqc{"cqc", 0x200, cqc::kFields};

namespace qpc {
inline constexpr Field state{"state", 0x0, 4};
inline constexpr Field reserved_at_4{"reserved_at_4", 0x4, 4};
inline constexpr Field st{"st", 0x8, 8};
inline constexpr Field reserved_at_10{"reserved_at_10", 0x10, 3};
inline constexpr Field pm_state{"pm_state", 0x13, 2};
inline constexpr Field reserved_at_15{"reserved_at_15", 0x15, 0x13};
inline constexpr Field pd{"pd", 0x28, 24};
inline constexpr Field mtu{"mtu", 0x40, 3};
inline constexpr Field log_msg_max{"log_msg_max", 0x43, 5};
inline constexpr Field reserved_at_48{"reserved_at_48", 0x48, 1};
inline constexpr Field log_rq_size{"log_rq_size", 0x49, 4};
inline constexpr Field log_rq_stride{"log_rq_stride", 0x4d, 3};
inline constexpr Field no_sq{"no_sq", 0x50, 1};
inline constexpr Field log_sq_size{"log_sq_size", 0x51, 4};
inline constexpr Field reserved_at_55{"reserved_at_55", 0x55, 3};
inline constexpr Field ts_format{"ts_format", 0x58, 2};
inline constexpr Field reserved_at_5a{"reserved_at_5a", 0x5a, 6};
inline constexpr Field reserved_at_60{"reserved_at_60", 0x60, 8};
inline constexpr Field uar_page{"uar_page", 0x68, 24};
inline constexpr Field reserved_at_80{"reserved_at_80", 0x80, 0x23};
inline constexpr Field log_page_size{"log_page_size", 0xa3, 5};
inline constexpr Field remote_qpn{"remote_qpn", 0xa8, 24};
// primary_address_path (ads) starts at 0xc0.
inline constexpr Field fl{"primary_address_path.fl", 0xc0, 1};
inline constexpr Field reserved_at_c1{"reserved_at_c1", 0xc1, 0x127};
inline constexpr Field vhca_port_num{"primary_address_path.vhca_port_num", 0x1e8, 8};
inline constexpr Field reserved_at_1f0{"reserved_at_1f0", 0x1f0, 0x19d};
inline constexpr Field retry_count{"retry_count", 0x38d, 3};
inline constexpr Field rnr_retry{"rnr_retry", 0x390, 3};
inline constexpr Field reserved_at_393{"reserved_at_393", 0x393, 0x55};
inline constexpr Field cqn_snd{"cqn_snd", 0x3e8, 24};
inline constexpr Field reserved_at_400{"reserved_at_400", 0x400, 0xa3};
inline constexpr Field min_rnr_nak{"min_rnr_nak", 0x4a3, 5};
inline constexpr Field reserved_at_4a8{"reserved_at_4a8", 0x4a8, 0x40};
inline constexpr Field cqn_rcv{"cqn_rcv", 0x4e8, 24};
inline constexpr Field dbr_addr{"dbr_addr", 0x500, 64};
inline constexpr Field reserved_at_540{"reserved_at_540", 0x540, 0x25};
inline constexpr Field rq_type{"rq_type", 0x565, 3};
inline constexpr Field reserved_at_568{"reserved_at_568", 0x568, 0x11b};
inline constexpr Field dbr_umem_valid{"dbr_umem_valid", 0x683, 1};
inline constexpr Field reserved_at_684{"reserved_at_684", 0x684, 0x9c};
inline constexpr Field dbr_umem_id{"dbr_umem_id", 0x720, 32};
inline constexpr const Field* kFields[] = {
    &state, &reserved_at_4, &st, &reserved_at_10, &pm_state, &reserved_at_15, &pd, &mtu,
    &log_msg_max, &reserved_at_48, &log_rq_size, &log_rq_stride, &no_sq, &log_sq_size,
    &reserved_at_55, &ts_format, &reserved_at_5a, &reserved_at_60, &uar_page, &reserved_at_80,
    &log_page_size, &remote_qpn, &fl, &reserved_at_c1, &vhca_port_num, &reserved_at_1f0,
    &retry_count, &rnr_retry, &reserved_at_393, &cqn_snd, &reserved_at_400, &min_rnr_nak,
    &reserved_at_4a8, &cqn_rcv, &dbr_addr, &reserved_at_540, &rq_type, &reserved_at_568,
    &dbr_umem_valid, &reserved_at_684, &dbr_umem_id,
};
static_assert(tiles(kFields, 0x740));
// The ads sub-struct is 0x160 bits: primary at 0xc0, secondary at 0x220,
// log_ack_req_freq right after at 0x380.
static_assert(fl.bit_offset + 0x128 == vhca_port_num.bit_offset);
}  // namespace qpc

inline constexpr Layout kQpc{"qpc", 0x740, qpc::kFields};

// A context table shifted into its command, with the command's own fields
// around it (as create_mkey_in does with mkc).
template <size_t N>
constexpr std::array<Field, N> shifted(const Field* const (&ctx)[N], uint32_t base) {
    std::array<Field, N> a{};
    for (size_t i = 0; i < N; ++i) a[i] = ctx[i]->at(base);
    return a;
}
template <size_t N>
constexpr const Field& find_shifted(const std::array<Field, N>& a, const Field& f,
                                    uint32_t base) {
    for (const Field& g : a)
        if (g.bit_offset == f.bit_offset + base && g.bit_width == f.bit_width) return g;
    return f;  // not reached for a field of the context
}
// A command whose context is its last part (create_sq_in, modify_sq_in).
template <size_t H, size_t N>
constexpr std::array<const Field*, H + N> join(const Field* const (&head)[H],
                                               const std::array<Field, N>& ctx) {
    std::array<const Field*, H + N> a{};
    size_t n = 0;
    for (const Field* f : head) a[n++] = f;
    for (const Field& f : ctx) a[n++] = &f;
    return a;
}
template <size_t H, size_t N, size_t T>
constexpr std::array<const Field*, H + N + T> join(const Field* const (&head)[H],
                                                   const std::array<Field, N>& mid,
                                                   const Field* const (&tail)[T]) {
    std::array<const Field*, H + N + T> a{};
    size_t n = 0;
    for (const Field* f : head) a[n++] = f;
    for (const Field& f : mid) a[n++] = &f;
    for (const Field* f : tail) a[n++] = f;
    return a;
}

// The fixed part of create_cq_in; pas[] follows at 0x880.
namespace create_cq_in {
inline constexpr uint32_t kCqc = 0x80;  // cq_context
inline constexpr Field opcode{"opcode", 0x0, 16};
inline constexpr Field uid{"uid", 0x10, 16};
inline constexpr Field reserved_at_20{"reserved_at_20", 0x20, 16};
inline constexpr Field op_mod{"op_mod", 0x30, 16};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 0x40};
inline constexpr Field cq_umem_offset{"cq_umem_offset", 0x280, 64};
inline constexpr Field cq_umem_id{"cq_umem_id", 0x2c0, 32};
inline constexpr Field cq_umem_valid{"cq_umem_valid", 0x2e0, 1};
inline constexpr Field reserved_at_2e1{"reserved_at_2e1", 0x2e1, 0x59f};
inline constexpr auto kCqcFields = shifted(cqc::kFields, kCqc);
// The cqc field `f` as it sits inside create_cq_in.
constexpr const Field& in_cqc(const Field& f) { return find_shifted(kCqcFields, f, kCqc); }
inline constexpr const Field* kHead[] = {&opcode, &uid, &reserved_at_20, &op_mod,
                                         &reserved_at_40};
inline constexpr const Field* kTail[] = {&cq_umem_offset, &cq_umem_id, &cq_umem_valid,
                                         &reserved_at_2e1};
inline constexpr auto kFields = join(kHead, kCqcFields, kTail);
static_assert(tiles_span(kFields, 0x880));
}  // namespace create_cq_in

inline constexpr Layout kCreateCqIn{"create_cq_in", 0x880, create_cq_in::kFields};

// The fixed part of create_qp_in; pas[] follows at 0x880.
namespace create_qp_in {
inline constexpr uint32_t kQpc = 0xc0;
inline constexpr Field opcode{"opcode", 0x0, 16};
inline constexpr Field uid{"uid", 0x10, 16};
inline constexpr Field reserved_at_20{"reserved_at_20", 0x20, 16};
inline constexpr Field op_mod{"op_mod", 0x30, 16};
// Linux: qpc_ext 0x40, input_qpn 0x48, opt_param_mask 0x80, ece 0xa0.
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 0x80};
inline constexpr Field wq_umem_offset{"wq_umem_offset", 0x800, 64};
inline constexpr Field wq_umem_id{"wq_umem_id", 0x840, 32};
inline constexpr Field wq_umem_valid{"wq_umem_valid", 0x860, 1};
inline constexpr Field reserved_at_861{"reserved_at_861", 0x861, 0x1f};
inline constexpr auto kQpcFields = shifted(qpc::kFields, kQpc);
constexpr const Field& in_qpc(const Field& f) { return find_shifted(kQpcFields, f, kQpc); }
inline constexpr const Field* kHead[] = {&opcode, &uid, &reserved_at_20, &op_mod,
                                         &reserved_at_40};
inline constexpr const Field* kTail[] = {&wq_umem_offset, &wq_umem_id, &wq_umem_valid,
                                         &reserved_at_861};
inline constexpr auto kFields = join(kHead, kQpcFields, kTail);
static_assert(tiles_span(kFields, 0x880));
}  // namespace create_qp_in

inline constexpr Layout kCreateQpIn{"create_qp_in", 0x880, create_qp_in::kFields};

// rst2init_qp_in, init2rtr_qp_in and rtr2rts_qp_in share this layout.
namespace qp_modify_in {
inline constexpr uint32_t kQpc = 0xc0;
inline constexpr Field opcode{"opcode", 0x0, 16};
inline constexpr Field uid{"uid", 0x10, 16};
inline constexpr Field reserved_at_20{"reserved_at_20", 0x20, 16};
inline constexpr Field op_mod{"op_mod", 0x30, 16};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 8};
inline constexpr Field qpn{"qpn", 0x48, 24};
// Linux: opt_param_mask 0x80, ece 0xa0.
inline constexpr Field reserved_at_60{"reserved_at_60", 0x60, 0x60};
inline constexpr Field reserved_at_800{"reserved_at_800", 0x800, 0x80};
inline constexpr auto kQpcFields = shifted(qpc::kFields, kQpc);
constexpr const Field& in_qpc(const Field& f) { return find_shifted(kQpcFields, f, kQpc); }
inline constexpr const Field* kHead[] = {&opcode, &uid, &reserved_at_20, &op_mod,
                                         &reserved_at_40, &qpn, &reserved_at_60};
inline constexpr const Field* kTail[] = {&reserved_at_800};
inline constexpr auto kFields = join(kHead, kQpcFields, kTail);
static_assert(tiles_span(kFields, 0x880));
}  // namespace qp_modify_in

inline constexpr Layout kQpModifyIn{"rst2init_qp_in", 0x880, qp_modify_in::kFields};

// The 64-byte CQE (Linux include/linux/mlx5/device.h struct mlx5_cqe64; DPDK
// struct mlx5_cqe): byte_cnt at byte 44, sop_drop_qpn at byte 56 (qpn its
// low 24 bits), wqe_counter at byte 60, signature at byte 62 (DPDK rsvd5),
// op_own at byte 63 (opcode << 4 | format << 2 | se << 1 | owner); an
// error CQE (struct mlx5_err_cqe) has vendor_err_synd at byte 54 and
// syndrome at byte 55. Only the fields the event QP and the send queue need
// are named; the rest is padding.
namespace cqe64 {
inline constexpr Field reserved_at_0{"reserved_at_0", 0x0, 0x160};
inline constexpr Field byte_cnt{"byte_cnt", 0x160, 32};
inline constexpr Field reserved_at_180{"reserved_at_180", 0x180, 0x30};
inline constexpr Field vendor_err_synd{"err.vendor_err_synd", 0x1b0, 8};
inline constexpr Field syndrome{"err.syndrome", 0x1b8, 8};
inline constexpr Field reserved_at_1c0{"sop_drop_qpn.reserved_at_1c0", 0x1c0, 8};
inline constexpr Field qpn{"sop_drop_qpn.qpn", 0x1c8, 24};
inline constexpr Field wqe_counter{"wqe_counter", 0x1e0, 16};
inline constexpr Field signature{"signature", 0x1f0, 8};
inline constexpr Field opcode{"op_own.opcode", 0x1f8, 4};
inline constexpr Field reserved_at_1fc{"op_own.reserved_at_1fc", 0x1fc, 3};
inline constexpr Field owner{"op_own.owner", 0x1ff, 1};
inline constexpr const Field* kFields[] = {&reserved_at_0,   &byte_cnt,    &reserved_at_180,
                                           &vendor_err_synd, &syndrome,    &reserved_at_1c0,
                                           &qpn,             &wqe_counter, &signature,
                                           &opcode,          &reserved_at_1fc, &owner};
static_assert(tiles(kFields, 0x200));
}  // namespace cqe64

inline constexpr Layout kCqe64{"cqe64", 0x200, cqe64::kFields};

}  // namespace mlx5async::prm::layout
