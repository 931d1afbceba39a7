// Field tables of the transport objects a virtq's TX side refers to:
// alloc_transport_domain_in/_out, dealloc_transport_domain_in, tisc (the TIS
// context), create_tis_in/_out, destroy_tis_in.
//
// Offsets verified against Linux include/linux/mlx5/mlx5_ifc.h
// (mlx5_ifc_alloc_transport_domain_in/out_bits,
// mlx5_ifc_dealloc_transport_domain_in_bits, mlx5_ifc_tisc_bits,
// mlx5_ifc_create_tis_in/out_bits, mlx5_ifc_destroy_tis_in_bits):
//   command in headers: opcode 0x0 (16), uid 0x10 (16), op_mod 0x30 (16).
//   alloc_transport_domain_out: transport_domain 0x48 (24); size 0x80.
//   dealloc_transport_domain_in: transport_domain 0x48 (24); size 0x80.
//   tisc: strict_lag_tx_port_affinity 0x0, tls_en 0x1, lag_tx_port_affinity
//        0x4 (4), prio 0xc (4), transport_domain 0x128 (24), underlay_qpn
//        0x148 (24), pd 0x168 (24); size 0x500.
//   create_tis_in: ctx (tisc) at 0x100; size 0x600.
//   create_tis_out: tisn 0x48 (24); destroy_tis_in: tisn 0x48 (24).
#pragma once

#include "field.hpp"

namespace mlx5async::prm::layout {

// The 128-bit "opcode + object number" shape shared by these commands.
namespace td_cmd {
inline constexpr Field opcode{"opcode", 0x0, 16};
inline constexpr Field uid{"uid", 0x10, 16};
inline constexpr Field reserved_at_20{"reserved_at_20", 0x20, 16};
inline constexpr Field op_mod{"op_mod", 0x30, 16};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 8};
inline constexpr Field number{"transport_domain", 0x48, 24};  // tisn in the TIS commands
inline constexpr Field reserved_at_60{"reserved_at_60", 0x60, 32};
inline constexpr const Field* kFields[] = {&opcode, &uid, &reserved_at_20, &op_mod,
                                          &reserved_at_40, &number, &reserved_at_60};
static_assert(tiles(kFields, 0x80));
inline constexpr Layout kLayout{"dealloc_transport_domain_in", 0x80, kFields};
}  // namespace td_cmd

// Output: status, syndrome, then the allocated number at 0x48.
namespace num_out {
inline constexpr Field status{"status", 0x0, 8};
inline constexpr Field reserved_at_8{"reserved_at_8", 0x8, 24};
inline constexpr Field syndrome{"syndrome", 0x20, 32};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 8};
inline constexpr Field number{"transport_domain", 0x48, 24};  // tisn for create_tis_out
inline constexpr Field reserved_at_60{"reserved_at_60", 0x60, 32};
inline constexpr const Field* kFields[] = {&status, &reserved_at_8, &syndrome, &reserved_at_40,
                                          &number, &reserved_at_60};
static_assert(tiles(kFields, 0x80));
}  // namespace num_out

namespace tisc {
inline constexpr Field strict_lag_tx_port_affinity{"strict_lag_tx_port_affinity", 0x0, 1};
inline constexpr Field tls_en{"tls_en", 0x1, 1};
inline constexpr Field reserved_at_2{"reserved_at_2", 0x2, 2};
inline constexpr Field lag_tx_port_affinity{"lag_tx_port_affinity", 0x4, 4};
inline constexpr Field reserved_at_8{"reserved_at_8", 0x8, 4};
inline constexpr Field prio{"prio", 0xc, 4};
inline constexpr Field reserved_at_10{"reserved_at_10", 0x10, 16};
inline constexpr Field reserved_at_20{"reserved_at_20", 0x20, 0x100};
inline constexpr Field reserved_at_120{"reserved_at_120", 0x120, 8};
inline constexpr Field transport_domain{"transport_domain", 0x128, 24};
inline constexpr Field reserved_at_140{"reserved_at_140", 0x140, 8};
inline constexpr Field underlay_qpn{"underlay_qpn", 0x148, 24};
inline constexpr Field reserved_at_160{"reserved_at_160", 0x160, 8};
inline constexpr Field pd{"pd", 0x168, 24};
inline constexpr Field reserved_at_180{"reserved_at_180", 0x180, 0x380};
inline constexpr const Field* kFields[] = {
    &strict_lag_tx_port_affinity, &tls_en, &reserved_at_2, &lag_tx_port_affinity, &reserved_at_8,
    &prio, &reserved_at_10, &reserved_at_20, &reserved_at_120, &transport_domain,
    &reserved_at_140, &underlay_qpn, &reserved_at_160, &pd, &reserved_at_180};
static_assert(tiles(kFields, 0x500));
inline constexpr Layout kLayout{"tisc", 0x500, kFields};
}  // namespace tisc

namespace create_tis_in {
inline constexpr uint32_t kCtx = 0x100;  // tisc
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 0xc0};
}  // namespace create_tis_in

}  // namespace mlx5async::prm::layout
