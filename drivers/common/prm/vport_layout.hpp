// Field tables of QUERY_NIC_VPORT_CONTEXT: query_nic_vport_context_in and
// query_nic_vport_context_out with the nic_vport_context it carries (the
// port's MTU is what the driver reads).
//
// Offsets verified against Linux include/linux/mlx5/mlx5_ifc.h and DPDK
// 22.11 drivers/common/mlx5/mlx5_prm.h (mlx5_ifc_query_nic_vport_context_in
// / _out_bits, mlx5_ifc_nic_vport_context_bits):
//   query_nic_vport_context_in: other_vport 0x40, vport_number 0x50 (16),
//     allowed_list_type 0x65 (3); size 0x80.
//   query_nic_vport_context_out: nic_vport_context at 0x80; size 0x880.
//   nic_vport_context: min_wqe_inline_mode 0x5 (3), roce_en 0x1f,
//     affiliated_vhca_id 0x50 (16), mtu 0x130 (16), system_image_guid 0x140,
//     port_guid 0x180, node_guid 0x1c0, qkey_violation_counter 0x340 (16),
//     promisc_uc 0x780, allowed_list_size 0x794 (12), permanent_address
//     0x7a0 (0x40); size 0x800.
#pragma once

#include "field.hpp"

namespace mlx5async::prm::layout {

namespace query_nic_vport_context_in {
inline constexpr Field opcode{"opcode", 0x0, 16};
inline constexpr Field reserved_at_10{"reserved_at_10", 0x10, 16};
inline constexpr Field reserved_at_20{"reserved_at_20", 0x20, 16};
inline constexpr Field op_mod{"op_mod", 0x30, 16};
inline constexpr Field other_vport{"other_vport", 0x40, 1};
inline constexpr Field reserved_at_41{"reserved_at_41", 0x41, 15};
inline constexpr Field vport_number{"vport_number", 0x50, 16};
inline constexpr Field reserved_at_60{"reserved_at_60", 0x60, 5};
inline constexpr Field allowed_list_type{"allowed_list_type", 0x65, 3};
inline constexpr Field reserved_at_68{"reserved_at_68", 0x68, 24};
inline constexpr const Field* kFields[] = {&opcode, &reserved_at_10, &reserved_at_20, &op_mod,
                                           &other_vport, &reserved_at_41, &vport_number,
                                           &reserved_at_60, &allowed_list_type, &reserved_at_68};
static_assert(tiles(kFields, 0x80));
}  // namespace query_nic_vport_context_in

inline constexpr Layout kQueryNicVportContextIn{"query_nic_vport_context_in", 0x80,
                                                query_nic_vport_context_in::kFields};

// nic_vport_context as query_nic_vport_context_out holds it (at 0x80).
namespace query_nic_vport_context_out {
inline constexpr Field status{"status", 0x0, 8};
inline constexpr Field reserved_at_8{"reserved_at_8", 0x8, 24};
inline constexpr Field syndrome{"syndrome", 0x20, 32};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 64};
// nic_vport_context (+0x80)
inline constexpr Field reserved_at_80{"nic_vport_context.reserved_at_0", 0x80, 5};
inline constexpr Field min_wqe_inline_mode{"nic_vport_context.min_wqe_inline_mode", 0x85, 3};
inline constexpr Field reserved_at_88{"nic_vport_context.reserved_at_8", 0x88, 0x15};
inline constexpr Field disable_mc_local_lb{"nic_vport_context.disable_mc_local_lb", 0x9d, 1};
inline constexpr Field disable_uc_local_lb{"nic_vport_context.disable_uc_local_lb", 0x9e, 1};
inline constexpr Field roce_en{"nic_vport_context.roce_en", 0x9f, 1};
inline constexpr Field arm_change_event{"nic_vport_context.arm_change_event", 0xa0, 1};
inline constexpr Field reserved_at_a1{"nic_vport_context.reserved_at_21", 0xa1, 0x1a};
inline constexpr Field event_on_mtu{"nic_vport_context.event_on_mtu", 0xbb, 1};
inline constexpr Field event_on_promisc_change{"nic_vport_context.event_on_promisc_change", 0xbc, 1};
inline constexpr Field event_on_vlan_change{"nic_vport_context.event_on_vlan_change", 0xbd, 1};
inline constexpr Field event_on_mc_address_change{"nic_vport_context.event_on_mc_address_change",
                                                  0xbe, 1};
inline constexpr Field event_on_uc_address_change{"nic_vport_context.event_on_uc_address_change",
                                                  0xbf, 1};
inline constexpr Field reserved_at_c0{"nic_vport_context.reserved_at_40", 0xc0, 0xc};
inline constexpr Field affiliation_criteria{"nic_vport_context.affiliation_criteria", 0xcc, 4};
inline constexpr Field affiliated_vhca_id{"nic_vport_context.affiliated_vhca_id", 0xd0, 16};
inline constexpr Field reserved_at_e0{"nic_vport_context.reserved_at_60", 0xe0, 0xd0};
inline constexpr Field mtu{"nic_vport_context.mtu", 0x1b0, 16};
inline constexpr Field system_image_guid{"nic_vport_context.system_image_guid", 0x1c0, 64};
inline constexpr Field port_guid{"nic_vport_context.port_guid", 0x200, 64};
inline constexpr Field node_guid{"nic_vport_context.node_guid", 0x240, 64};
inline constexpr Field reserved_at_280{"nic_vport_context.reserved_at_200", 0x280, 0x140};
inline constexpr Field qkey_violation_counter{"nic_vport_context.qkey_violation_counter", 0x3c0, 16};
inline constexpr Field reserved_at_3d0{"nic_vport_context.reserved_at_350", 0x3d0, 0x430};
inline constexpr Field promisc_uc{"nic_vport_context.promisc_uc", 0x800, 1};
inline constexpr Field promisc_mc{"nic_vport_context.promisc_mc", 0x801, 1};
inline constexpr Field promisc_all{"nic_vport_context.promisc_all", 0x802, 1};
inline constexpr Field reserved_at_803{"nic_vport_context.reserved_at_783", 0x803, 2};
inline constexpr Field allowed_list_type{"nic_vport_context.allowed_list_type", 0x805, 3};
inline constexpr Field reserved_at_808{"nic_vport_context.reserved_at_788", 0x808, 0xc};
inline constexpr Field allowed_list_size{"nic_vport_context.allowed_list_size", 0x814, 0xc};
inline constexpr Field reserved_at_820{"nic_vport_context.permanent_address.reserved_at_0", 0x820, 16};
inline constexpr Field permanent_mac_47_32{"nic_vport_context.permanent_address.mac_addr_47_32",
                                           0x830, 16};
inline constexpr Field permanent_mac_31_0{"nic_vport_context.permanent_address.mac_addr_31_0",
                                          0x840, 32};
inline constexpr Field reserved_at_860{"nic_vport_context.reserved_at_7e0", 0x860, 32};
inline constexpr const Field* kFields[] = {
    &status, &reserved_at_8, &syndrome, &reserved_at_40, &reserved_at_80, &min_wqe_inline_mode,
    &reserved_at_88, &disable_mc_local_lb, &disable_uc_local_lb, &roce_en, &arm_change_event,
    &reserved_at_a1, &event_on_mtu, &event_on_promisc_change, &event_on_vlan_change,
    &event_on_mc_address_change, &event_on_uc_address_change, &reserved_at_c0,
    &affiliation_criteria, &affiliated_vhca_id, &reserved_at_e0, &mtu, &system_image_guid,
    &port_guid, &node_guid, &reserved_at_280, &qkey_violation_counter, &reserved_at_3d0,
    &promisc_uc, &promisc_mc, &promisc_all, &reserved_at_803, &allowed_list_type,
    &reserved_at_808, &allowed_list_size, &reserved_at_820, &permanent_mac_47_32,
    &permanent_mac_31_0, &reserved_at_860};
static_assert(tiles(kFields, 0x880));
}  // namespace query_nic_vport_context_out

inline constexpr Layout kQueryNicVportContextOut{"query_nic_vport_context_out", 0x880,
                                                 query_nic_vport_context_out::kFields};

}  // namespace mlx5async::prm::layout
