// Field tables for QUERY_HCA_CAP: query_hca_cap_in, query_hca_cap_out (its
// header; the capability union starts at 0x80), the subset of cmd_hca_cap
// (general caps, cap type 0x0) the driver reads, and virtio_emulation_cap
// (cap type 0x13).
//
// cmd_hca_cap offsets come from Linux include/linux/mlx5/mlx5_ifc.h
// (mlx5_ifc_cmd_hca_cap_bits): vhca_id 0x30, event_cap 0x90,
// eth_net_offloads 0x21c, umem_uid_0 0x252, log_max_pd 0x32b,
// general_obj_types 0x400, sq_ts_format 0x440 (2); every other bit is
// reserved_at_<hex> here.
// virtio_emulation_cap follows prm-virtq-fields.tsv (Linux layout; DPDK's
// split names listed in dpdk::).
#pragma once

#include "field.hpp"

namespace mlx5async::prm::layout {

namespace query_hca_cap_in {
inline constexpr Field opcode{"opcode", 0x0, 16};
inline constexpr Field uid{"uid", 0x10, 16};
inline constexpr Field reserved_at_20{"reserved_at_20", 0x20, 16};
inline constexpr Field op_mod{"op_mod", 0x30, 16};
inline constexpr Field other_function{"other_function", 0x40, 1};
inline constexpr Field reserved_at_41{"reserved_at_41", 0x41, 15};
inline constexpr Field function_id{"function_id", 0x50, 16};
inline constexpr Field reserved_at_60{"reserved_at_60", 0x60, 32};

inline constexpr const Field* kFields[] = {&opcode, &uid, &reserved_at_20, &op_mod,
                                           &other_function, &reserved_at_41, &function_id,
                                           &reserved_at_60};
static_assert(tiles(kFields, 0x80));
}  // namespace query_hca_cap_in

inline constexpr Layout kQueryHcaCapIn{"query_hca_cap_in", 0x80, query_hca_cap_in::kFields};

// Header of query_hca_cap_out; `capability` (0x8000 bits) follows at 0x80.
namespace query_hca_cap_out {
inline constexpr Field status{"status", 0x0, 8};
inline constexpr Field reserved_at_8{"reserved_at_8", 0x8, 24};
inline constexpr Field syndrome{"syndrome", 0x20, 32};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 64};

inline constexpr const Field* kFields[] = {&status, &reserved_at_8, &syndrome, &reserved_at_40};
static_assert(tiles(kFields, 0x80));
}  // namespace query_hca_cap_out

inline constexpr Layout kQueryHcaCapOutHdr{"query_hca_cap_out", 0x80, query_hca_cap_out::kFields};

namespace cmd_hca_cap {
inline constexpr Field reserved_at_0{"reserved_at_0", 0x0, 0x30};
inline constexpr Field vhca_id{"vhca_id", 0x30, 16};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 0x50};
// device_event_cap (cap type 0x14, user_affiliated/unaffiliated_events) is valid.
inline constexpr Field event_cap{"event_cap", 0x90, 1};
inline constexpr Field reserved_at_91{"reserved_at_91", 0x91, 0x18b};
inline constexpr Field eth_net_offloads{"eth_net_offloads", 0x21c, 1};
inline constexpr Field reserved_at_21d{"reserved_at_21d", 0x21d, 0x35};
inline constexpr Field umem_uid_0{"umem_uid_0", 0x252, 1};
inline constexpr Field reserved_at_253{"reserved_at_253", 0x253, 0xd8};
inline constexpr Field log_max_pd{"log_max_pd", 0x32b, 5};
inline constexpr Field reserved_at_330{"reserved_at_330", 0x330, 0xd0};
inline constexpr Field general_obj_types{"general_obj_types", 0x400, 64};
inline constexpr Field sq_ts_format{"sq_ts_format", 0x440, 2};
inline constexpr Field reserved_at_442{"reserved_at_442", 0x442, 0x3be};

inline constexpr const Field* kFields[] = {
    &reserved_at_0, &vhca_id, &reserved_at_40, &event_cap, &reserved_at_91,
    &eth_net_offloads, &reserved_at_21d, &umem_uid_0, &reserved_at_253, &log_max_pd,
    &reserved_at_330, &general_obj_types, &sq_ts_format, &reserved_at_442,
};
static_assert(tiles(kFields, 0x800));
}  // namespace cmd_hca_cap

inline constexpr Layout kCmdHcaCap{"cmd_hca_cap", 0x800, cmd_hca_cap::kFields};

namespace virtio_emulation_cap {
inline constexpr Field desc_tunnel_offload_type{"desc_tunnel_offload_type", 0x0, 1};
inline constexpr Field eth_frame_offload_type{"eth_frame_offload_type", 0x1, 1};
inline constexpr Field virtio_version_1_0{"virtio_version_1_0", 0x2, 1};
inline constexpr Field device_features_bits_mask{"device_features_bits_mask", 0x3, 13};
inline constexpr Field event_mode{"event_mode", 0x10, 8};
inline constexpr Field virtio_queue_type{"virtio_queue_type", 0x18, 8};
inline constexpr Field max_tunnel_desc{"max_tunnel_desc", 0x20, 16};
inline constexpr Field reserved_at_30{"reserved_at_30", 0x30, 3};
inline constexpr Field log_doorbell_stride{"log_doorbell_stride", 0x33, 5};
inline constexpr Field reserved_at_38{"reserved_at_38", 0x38, 3};
inline constexpr Field log_doorbell_bar_size{"log_doorbell_bar_size", 0x3b, 5};
inline constexpr Field doorbell_bar_offset{"doorbell_bar_offset", 0x40, 64};
inline constexpr Field max_emulated_devices{"max_emulated_devices", 0x80, 8};
inline constexpr Field max_num_virtio_queues{"max_num_virtio_queues", 0x88, 24};
inline constexpr Field reserved_at_a0{"reserved_at_a0", 0xa0, 32};
inline constexpr Field reserved_at_c0{"reserved_at_c0", 0xc0, 19};
inline constexpr Field desc_group_mkey_supported{"desc_group_mkey_supported", 0xd3, 1};
inline constexpr Field freeze_to_rdy_supported{"freeze_to_rdy_supported", 0xd4, 1};
inline constexpr Field reserved_at_d5{"reserved_at_d5", 0xd5, 11};
inline constexpr Field reserved_at_e0{"reserved_at_e0", 0xe0, 32};
inline constexpr Field umem_1_buffer_param_a{"umem_1_buffer_param_a", 0x100, 32};
inline constexpr Field umem_1_buffer_param_b{"umem_1_buffer_param_b", 0x120, 32};
inline constexpr Field umem_2_buffer_param_a{"umem_2_buffer_param_a", 0x140, 32};
inline constexpr Field umem_2_buffer_param_b{"umem_2_buffer_param_b", 0x160, 32};
inline constexpr Field umem_3_buffer_param_a{"umem_3_buffer_param_a", 0x180, 32};
inline constexpr Field umem_3_buffer_param_b{"umem_3_buffer_param_b", 0x1a0, 32};
inline constexpr Field reserved_at_1c0{"reserved_at_1c0", 0x1c0, 1600};

inline constexpr const Field* kFields[] = {
    &desc_tunnel_offload_type, &eth_frame_offload_type, &virtio_version_1_0,
    &device_features_bits_mask, &event_mode, &virtio_queue_type,
    &max_tunnel_desc, &reserved_at_30, &log_doorbell_stride, &reserved_at_38,
    &log_doorbell_bar_size, &doorbell_bar_offset, &max_emulated_devices,
    &max_num_virtio_queues, &reserved_at_a0, &reserved_at_c0, &desc_group_mkey_supported,
    &freeze_to_rdy_supported, &reserved_at_d5, &reserved_at_e0,
    &umem_1_buffer_param_a, &umem_1_buffer_param_b, &umem_2_buffer_param_a,
    &umem_2_buffer_param_b, &umem_3_buffer_param_a, &umem_3_buffer_param_b,
    &reserved_at_1c0,
};
static_assert(tiles(kFields, 0x800));

// DPDK 22.11 names. vnet_modify_ext, virtio_net_q_addr_modify and
// virtio_q_index_modify sit in Linux's reserved_at_38 and are carried by the
// codec; the tso/csum bits are the top of device_features_bits_mask.
namespace dpdk {
inline constexpr Field tso_ipv4{"tso_ipv4", 0x3, 1};
inline constexpr Field tso_ipv6{"tso_ipv6", 0x4, 1};
inline constexpr Field tx_csum{"tx_csum", 0x5, 1};
inline constexpr Field rx_csum{"rx_csum", 0x6, 1};
inline constexpr Field reserved_at_7{"reserved_at_7", 0x7, 9};
inline constexpr Field reserved_at_20{"reserved_at_20", 0x20, 19};
inline constexpr Field vnet_modify_ext{"vnet_modify_ext", 0x38, 1};
inline constexpr Field virtio_net_q_addr_modify{"virtio_net_q_addr_modify", 0x39, 1};
inline constexpr Field virtio_q_index_modify{"virtio_q_index_modify", 0x3a, 1};
inline constexpr Field reserved_at_80{"reserved_at_80", 0x80, 8};
inline constexpr const Field* kFields[] = {
    &tso_ipv4, &tso_ipv6, &tx_csum, &rx_csum, &reserved_at_7, &reserved_at_20,
    &vnet_modify_ext, &virtio_net_q_addr_modify, &virtio_q_index_modify, &reserved_at_80,
};
}  // namespace dpdk

inline constexpr const Field* kCarried[] = {&dpdk::vnet_modify_ext,
                                            &dpdk::virtio_net_q_addr_modify,
                                            &dpdk::virtio_q_index_modify};
}  // namespace virtio_emulation_cap

inline constexpr Layout kVirtioEmulationCap{"virtio_emulation_cap", 0x800,
                                            virtio_emulation_cap::kFields};

}  // namespace mlx5async::prm::layout
