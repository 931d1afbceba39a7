// Field tables of the send queue commands and of the send WQE: sqc (the SQ
// context, its wq at 0x180), create_sq_in / create_sq_out, modify_sq_in /
// modify_sq_out, destroy_sq_in, and the two WQE segments a fully inlined
// Ethernet send uses (control segment, Ethernet segment).
//
// Offsets verified against DPDK 22.11 drivers/common/mlx5/mlx5_prm.h
// (mlx5_ifc_sqc_bits, mlx5_ifc_wq_bits, mlx5_ifc_create_sq_in/out_bits,
// mlx5_ifc_modify_sq_in_bits) and Linux include/linux/mlx5/mlx5_ifc.h
// (the same offsets; Linux's wq names the umem fields too):
//   sqc: flush_in_error_en 0x3, min_wqe_inline_mode 0x5 (3), state 0x8 (4),
//        ts_format 0x1a (2), user_index 0x28 (24), cqn 0x48 (24),
//        tis_lst_sz 0x100 (16), tis_num_0 0x168 (24), wq 0x180; size 0x780.
//   wq (at sqc 0x180): wq_type 0x0 (4), pd 0x48 (24), uar_page 0x68 (24),
//        dbr_addr 0x80 (64), hw_counter 0xc0, sw_counter 0xe0,
//        log_wq_stride 0x10c (4), log_wq_pg_sz 0x113 (5), log_wq_sz
//        0x11b (5), dbr_umem_valid 0x120, wq_umem_valid 0x121,
//        dbr_umem_id 0x140 (32), wq_umem_id 0x160 (32), wq_umem_offset
//        0x180 (64); size 0x600.
//   create_sq_in: ctx (sqc) at 0x100; size 0x880 (pas[] after).
//   create_sq_out: sqn 0x48 (24); destroy_sq_in: sqn 0x48 (24).
//   modify_sq_in: sq_state 0x40 (4, the current state), sqn 0x48 (24),
//        modify_bitmask 0x80 (64), ctx (sqc) at 0x100; size 0x880.
// Send WQE segments (Linux include/linux/mlx5/qp.h struct mlx5_wqe_ctrl_seg
// and struct mlx5_wqe_eth_seg; DPDK struct mlx5_wqe_cseg / mlx5_wqe_eseg):
//   ctrl (16 bytes): opmod_idx_opcode (opc_mod 8, wqe_index 16, opcode 8),
//        qpn_ds (sqn 24, ds 6), signature 8, fm_ce_se at byte 11 (fm 3,
//        ce 2: MLX5_WQE_CTRL_CQ_UPDATE = 2 << 2, se 1), imm 32.
//   eth (16 bytes): swp offsets, cs_flags, swp_flags, mss,
//        flow_table_metadata, inline_hdr_sz at byte 12 (16), the inline
//        data's first two bytes at byte 14.
//
// Value fields the codec never sets are padding here, so a decoder flags
// them as non-zero reserved bits: the sqc's rlky/cd_master/fre,
// allow_multi_pkt_send_wqe, the hairpin and UMR fields, rate limit; the
// wq's signature, padding mode, HDS, page_offset, lwm and both counters;
// the Ethernet segment's software-parser offsets, checksum flags, mss and
// metadata.
#pragma once

#include <array>

#include "event_qp_layout.hpp"  // shifted, find_shifted, join
#include "field.hpp"
#include "mkey_layout.hpp"  // tiles_span

namespace mlx5async::prm::layout {

namespace sqc {
inline constexpr Field reserved_at_0{"reserved_at_0", 0x0, 3};
inline constexpr Field flush_in_error_en{"flush_in_error_en", 0x3, 1};
inline constexpr Field reserved_at_4{"reserved_at_4", 0x4, 1};
inline constexpr Field min_wqe_inline_mode{"min_wqe_inline_mode", 0x5, 3};
inline constexpr Field state{"state", 0x8, 4};
inline constexpr Field reserved_at_c{"reserved_at_c", 0xc, 0xe};
inline constexpr Field ts_format{"ts_format", 0x1a, 2};
inline constexpr Field reserved_at_1c{"reserved_at_1c", 0x1c, 0xc};
inline constexpr Field user_index{"user_index", 0x28, 24};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 8};
inline constexpr Field cqn{"cqn", 0x48, 24};
inline constexpr Field reserved_at_60{"reserved_at_60", 0x60, 0xa0};
inline constexpr Field tis_lst_sz{"tis_lst_sz", 0x100, 16};
inline constexpr Field reserved_at_110{"reserved_at_110", 0x110, 0x58};
inline constexpr Field tis_num_0{"tis_num_0", 0x168, 24};
// wq
inline constexpr uint32_t kWq = 0x180;
inline constexpr Field wq_type{"wq.wq_type", 0x180, 4};
inline constexpr Field reserved_at_184{"wq.reserved_at_4", 0x184, 0x44};
inline constexpr Field pd{"wq.pd", 0x1c8, 24};
inline constexpr Field reserved_at_1e0{"wq.reserved_at_60", 0x1e0, 8};
inline constexpr Field uar_page{"wq.uar_page", 0x1e8, 24};
inline constexpr Field dbr_addr{"wq.dbr_addr", 0x200, 64};
inline constexpr Field reserved_at_240{"wq.reserved_at_c0", 0x240, 0x4c};
inline constexpr Field log_wq_stride{"wq.log_wq_stride", 0x28c, 4};
inline constexpr Field reserved_at_290{"wq.reserved_at_110", 0x290, 3};
inline constexpr Field log_wq_pg_sz{"wq.log_wq_pg_sz", 0x293, 5};
inline constexpr Field reserved_at_298{"wq.reserved_at_118", 0x298, 3};
inline constexpr Field log_wq_sz{"wq.log_wq_sz", 0x29b, 5};
inline constexpr Field dbr_umem_valid{"wq.dbr_umem_valid", 0x2a0, 1};
inline constexpr Field wq_umem_valid{"wq.wq_umem_valid", 0x2a1, 1};
inline constexpr Field reserved_at_2a2{"wq.reserved_at_122", 0x2a2, 0x1e};
inline constexpr Field dbr_umem_id{"wq.dbr_umem_id", 0x2c0, 32};
inline constexpr Field wq_umem_id{"wq.wq_umem_id", 0x2e0, 32};
inline constexpr Field wq_umem_offset{"wq.wq_umem_offset", 0x300, 64};
inline constexpr Field reserved_at_340{"wq.reserved_at_1c0", 0x340, 0x440};
inline constexpr const Field* kFields[] = {
    &reserved_at_0, &flush_in_error_en, &reserved_at_4, &min_wqe_inline_mode, &state,
    &reserved_at_c, &ts_format, &reserved_at_1c, &user_index, &reserved_at_40, &cqn,
    &reserved_at_60, &tis_lst_sz, &reserved_at_110, &tis_num_0, &wq_type, &reserved_at_184, &pd,
    &reserved_at_1e0, &uar_page, &dbr_addr, &reserved_at_240, &log_wq_stride, &reserved_at_290,
    &log_wq_pg_sz, &reserved_at_298, &log_wq_sz, &dbr_umem_valid, &wq_umem_valid,
    &reserved_at_2a2, &dbr_umem_id, &wq_umem_id, &wq_umem_offset, &reserved_at_340,
};
static_assert(tiles(kFields, 0x780));
static_assert(pd.bit_offset == kWq + 0x48 && wq_umem_offset.bit_offset == kWq + 0x180);
}  // namespace sqc

inline constexpr Layout kSqc{"sqc", 0x780, sqc::kFields};

namespace create_sq_in {
inline constexpr uint32_t kSqc = 0x100;
inline constexpr Field opcode{"opcode", 0x0, 16};
inline constexpr Field uid{"uid", 0x10, 16};
inline constexpr Field reserved_at_20{"reserved_at_20", 0x20, 16};
inline constexpr Field op_mod{"op_mod", 0x30, 16};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 0xc0};
inline constexpr auto kSqcFields = shifted(sqc::kFields, kSqc);
constexpr const Field& in_sqc(const Field& f) { return find_shifted(kSqcFields, f, kSqc); }
inline constexpr const Field* kHead[] = {&opcode, &uid, &reserved_at_20, &op_mod, &reserved_at_40};
}  // namespace create_sq_in

namespace modify_sq_in {
inline constexpr uint32_t kSqc = 0x100;
inline constexpr Field opcode{"opcode", 0x0, 16};
inline constexpr Field uid{"uid", 0x10, 16};
inline constexpr Field reserved_at_20{"reserved_at_20", 0x20, 16};
inline constexpr Field op_mod{"op_mod", 0x30, 16};
inline constexpr Field sq_state{"sq_state", 0x40, 4};
inline constexpr Field reserved_at_44{"reserved_at_44", 0x44, 4};
inline constexpr Field sqn{"sqn", 0x48, 24};
inline constexpr Field reserved_at_60{"reserved_at_60", 0x60, 32};
inline constexpr Field modify_bitmask{"modify_bitmask", 0x80, 64};
inline constexpr Field reserved_at_c0{"reserved_at_c0", 0xc0, 0x40};
inline constexpr auto kSqcFields = shifted(sqc::kFields, kSqc);
constexpr const Field& in_sqc(const Field& f) { return find_shifted(kSqcFields, f, kSqc); }
inline constexpr const Field* kHead[] = {&opcode, &uid, &reserved_at_20, &op_mod, &sq_state,
                                         &reserved_at_44, &sqn, &reserved_at_60, &modify_bitmask,
                                         &reserved_at_c0};
}  // namespace modify_sq_in

// The commands' own fields, then the context's shifted into place.
inline constexpr auto kCreateSqInFields = join(create_sq_in::kHead, create_sq_in::kSqcFields);
static_assert(tiles_span(kCreateSqInFields, 0x880));
inline constexpr Layout kCreateSqIn{"create_sq_in", 0x880, kCreateSqInFields};

inline constexpr auto kModifySqInFields = join(modify_sq_in::kHead, modify_sq_in::kSqcFields);
static_assert(tiles_span(kModifySqInFields, 0x880));
inline constexpr Layout kModifySqIn{"modify_sq_in", 0x880, kModifySqInFields};

// destroy_sq_in: the opcode and the SQ number.
namespace destroy_sq_in {
inline constexpr Field opcode{"opcode", 0x0, 16};
inline constexpr Field uid{"uid", 0x10, 16};
inline constexpr Field reserved_at_20{"reserved_at_20", 0x20, 16};
inline constexpr Field op_mod{"op_mod", 0x30, 16};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 8};
inline constexpr Field sqn{"sqn", 0x48, 24};
inline constexpr Field reserved_at_60{"reserved_at_60", 0x60, 32};
inline constexpr const Field* kFields[] = {&opcode, &uid, &reserved_at_20, &op_mod,
                                           &reserved_at_40, &sqn, &reserved_at_60};
static_assert(tiles(kFields, 0x80));
}  // namespace destroy_sq_in

inline constexpr Layout kDestroySqIn{"destroy_sq_in", 0x80, destroy_sq_in::kFields};

// create_sq_out: status, syndrome, the new SQ at 0x48; modify_sq_out and
// destroy_sq_out: status and syndrome (the same 16 bytes, nothing at 0x48).
namespace create_sq_out {
inline constexpr Field status{"status", 0x0, 8};
inline constexpr Field reserved_at_8{"reserved_at_8", 0x8, 24};
inline constexpr Field syndrome{"syndrome", 0x20, 32};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 8};
inline constexpr Field sqn{"sqn", 0x48, 24};
inline constexpr Field reserved_at_60{"reserved_at_60", 0x60, 32};
inline constexpr const Field* kFields[] = {&status, &reserved_at_8, &syndrome, &reserved_at_40,
                                           &sqn, &reserved_at_60};
static_assert(tiles(kFields, 0x80));
}  // namespace create_sq_out

inline constexpr Layout kCreateSqOut{"create_sq_out", 0x80, create_sq_out::kFields};

// ---- Send WQE ----------------------------------------------------------

namespace wqe_ctrl_seg {
inline constexpr Field opc_mod{"opc_mod", 0x0, 8};
inline constexpr Field wqe_index{"wqe_index", 0x8, 16};
inline constexpr Field opcode{"opcode", 0x18, 8};
inline constexpr Field sqn{"qpn_ds.sqn", 0x20, 24};
inline constexpr Field reserved_at_38{"qpn_ds.reserved_at_38", 0x38, 2};
inline constexpr Field ds{"qpn_ds.ds", 0x3a, 6};
inline constexpr Field signature{"signature", 0x40, 8};
inline constexpr Field reserved_at_48{"reserved_at_48", 0x48, 16};
inline constexpr Field fm{"fm_ce_se.fm", 0x58, 3};
inline constexpr Field reserved_at_5b{"fm_ce_se.reserved_at_5b", 0x5b, 1};
inline constexpr Field ce{"fm_ce_se.ce", 0x5c, 2};
inline constexpr Field se{"fm_ce_se.se", 0x5e, 1};
inline constexpr Field reserved_at_5f{"fm_ce_se.reserved_at_5f", 0x5f, 1};
inline constexpr Field imm{"imm", 0x60, 32};
inline constexpr const Field* kFields[] = {&opc_mod, &wqe_index, &opcode, &sqn, &reserved_at_38,
                                           &ds, &signature, &reserved_at_48, &fm, &reserved_at_5b,
                                           &ce, &se, &reserved_at_5f, &imm};
static_assert(tiles(kFields, 0x80));
}  // namespace wqe_ctrl_seg

inline constexpr Layout kWqeCtrlSeg{"wqe_ctrl_seg", 0x80, wqe_ctrl_seg::kFields};

namespace wqe_eth_seg {
inline constexpr Field reserved_at_0{"reserved_at_0", 0x0, 0x60};
inline constexpr Field inline_hdr_sz{"inline_hdr_sz", 0x60, 16};
inline constexpr Field inline_hdr_start{"inline_hdr_start", 0x70, 16};
inline constexpr const Field* kFields[] = {&reserved_at_0, &inline_hdr_sz, &inline_hdr_start};
static_assert(tiles(kFields, 0x80));
}  // namespace wqe_eth_seg

inline constexpr Layout kWqeEthSeg{"wqe_eth_seg", 0x80, wqe_eth_seg::kFields};

}  // namespace mlx5async::prm::layout
