// Field tables of virtio_q (the virtq context) and virtio_net_q_object
// (VIRTIO_NET_Q general object, obj_type 0x000d), in the order and with the
// names of prm-virtq-fields.tsv. Offsets cross-checked against Linux
// include/linux/mlx5/mlx5_ifc_vdpa.h (mlx5_ifc_virtio_q_bits,
// mlx5_ifc_virtio_net_q_object_bits) and DPDK 22.11 mlx5_prm.h
// (mlx5_ifc_virtio_q_bits, mlx5_ifc_virtio_net_q_bits).
//
// The main tables are the Linux layout. DPDK-only fields that do not overlap a
// Linux value field (queue_period_* inside Linux's reserved_at_340) are
// carried too: the codec reads and writes them, and kCarried lists them so
// the reserved-bit check skips them.
#pragma once

#include "field.hpp"

namespace mlx5async::prm::layout {

namespace virtio_q {
inline constexpr Field virtio_q_type{"virtio_q_type", 0x0, 8};
inline constexpr Field reserved_at_8{"reserved_at_8", 0x8, 5};
inline constexpr Field event_mode{"event_mode", 0xd, 3};
inline constexpr Field queue_index{"queue_index", 0x10, 16};
inline constexpr Field full_emulation{"full_emulation", 0x20, 1};
inline constexpr Field virtio_version_1_0{"virtio_version_1_0", 0x21, 1};
inline constexpr Field reserved_at_22{"reserved_at_22", 0x22, 2};
inline constexpr Field offload_type{"offload_type", 0x24, 4};
inline constexpr Field event_qpn_or_msix{"event_qpn_or_msix", 0x28, 24};
inline constexpr Field doorbell_stride_index{"doorbell_stride_index", 0x40, 16};
inline constexpr Field queue_size{"queue_size", 0x50, 16};
inline constexpr Field device_emulation_id{"device_emulation_id", 0x60, 32};
inline constexpr Field desc_addr{"desc_addr", 0x80, 64};
inline constexpr Field used_addr{"used_addr", 0xc0, 64};
inline constexpr Field available_addr{"available_addr", 0x100, 64};
inline constexpr Field virtio_q_mkey{"virtio_q_mkey", 0x140, 32};
inline constexpr Field max_tunnel_desc{"max_tunnel_desc", 0x160, 16};
inline constexpr Field reserved_at_170{"reserved_at_170", 0x170, 8};
inline constexpr Field error_type{"error_type", 0x178, 8};
inline constexpr Field umem_1_id{"umem_1_id", 0x180, 32};
inline constexpr Field umem_1_size{"umem_1_size", 0x1a0, 32};
inline constexpr Field umem_1_offset{"umem_1_offset", 0x1c0, 64};
inline constexpr Field umem_2_id{"umem_2_id", 0x200, 32};
inline constexpr Field umem_2_size{"umem_2_size", 0x220, 32};
inline constexpr Field umem_2_offset{"umem_2_offset", 0x240, 64};
inline constexpr Field umem_3_id{"umem_3_id", 0x280, 32};
inline constexpr Field umem_3_size{"umem_3_size", 0x2a0, 32};
inline constexpr Field umem_3_offset{"umem_3_offset", 0x2c0, 64};
inline constexpr Field counter_set_id{"counter_set_id", 0x300, 32};
inline constexpr Field reserved_at_320{"reserved_at_320", 0x320, 8};
inline constexpr Field pd{"pd", 0x328, 24};
inline constexpr Field reserved_at_340{"reserved_at_340", 0x340, 32};
inline constexpr Field desc_group_mkey{"desc_group_mkey", 0x360, 32};  // Linux only
inline constexpr Field reserved_at_380{"reserved_at_380", 0x380, 128};

inline constexpr const Field* kFields[] = {
    &virtio_q_type, &reserved_at_8, &event_mode, &queue_index,
    &full_emulation, &virtio_version_1_0, &reserved_at_22, &offload_type, &event_qpn_or_msix,
    &doorbell_stride_index, &queue_size, &device_emulation_id,
    &desc_addr, &used_addr, &available_addr, &virtio_q_mkey,
    &max_tunnel_desc, &reserved_at_170, &error_type,
    &umem_1_id, &umem_1_size, &umem_1_offset, &umem_2_id, &umem_2_size, &umem_2_offset,
    &umem_3_id, &umem_3_size, &umem_3_offset,
    &counter_set_id, &reserved_at_320, &pd, &reserved_at_340, &desc_group_mkey,
    &reserved_at_380,
};
static_assert(tiles(kFields, 0x400));

// DPDK 22.11 names where its layout differs. queue_period_* are carried by
// the codec (they sit in Linux's reserved_at_340, modify bit 5 QUEUE_PERIOD).
namespace dpdk {
inline constexpr Field doorbell_stride_idx{"doorbell_stride_idx", 0x40, 16};
inline constexpr Field reserved_at_160{"reserved_at_160", 0x160, 24};
inline constexpr Field reserved_at_340{"reserved_at_340", 0x340, 2};
inline constexpr Field queue_period_mode{"queue_period_mode", 0x342, 2};
inline constexpr Field queue_period_us{"queue_period_us", 0x344, 12};
inline constexpr Field queue_max_count{"queue_max_count", 0x350, 16};
inline constexpr Field reserved_at_360{"reserved_at_360", 0x360, 160};
inline constexpr const Field* kFields[] = {&doorbell_stride_idx, &reserved_at_160,
                                           &reserved_at_340, &queue_period_mode,
                                           &queue_period_us, &queue_max_count,
                                           &reserved_at_360};
}  // namespace dpdk

// Value fields the codec carries outside the Linux table.
inline constexpr const Field* kCarried[] = {&dpdk::queue_period_mode, &dpdk::queue_period_us,
                                            &dpdk::queue_max_count};
}  // namespace virtio_q

inline constexpr Layout kVirtioQ{"virtio_q", 0x400, virtio_q::kFields};

namespace virtio_net_q_object {
inline constexpr uint32_t kContext = 0x200;  // virtio_q_context

inline constexpr Field modify_field_select{"modify_field_select", 0x0, 64};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 32};
inline constexpr Field vhca_id{"vhca_id", 0x60, 16};  // Linux only
inline constexpr Field reserved_at_70{"reserved_at_70", 0x70, 16};
inline constexpr Field queue_feature_bit_mask_12_3{"queue_feature_bit_mask_12_3", 0x80, 10};
inline constexpr Field dirty_bitmap_dump_enable{"dirty_bitmap_dump_enable", 0x8a, 1};
inline constexpr Field vhost_log_page{"vhost_log_page", 0x8b, 5};
inline constexpr Field reserved_at_90{"reserved_at_90", 0x90, 12};
inline constexpr Field state{"state", 0x9c, 4};
inline constexpr Field reserved_at_a0{"reserved_at_a0", 0xa0, 5};
inline constexpr Field queue_feature_bit_mask_2_0{"queue_feature_bit_mask_2_0", 0xa5, 3};
inline constexpr Field tisn_or_qpn{"tisn_or_qpn", 0xa8, 24};
inline constexpr Field dirty_bitmap_mkey{"dirty_bitmap_mkey", 0xc0, 32};
inline constexpr Field dirty_bitmap_size{"dirty_bitmap_size", 0xe0, 32};
inline constexpr Field dirty_bitmap_addr{"dirty_bitmap_addr", 0x100, 64};
inline constexpr Field hw_available_index{"hw_available_index", 0x140, 16};
inline constexpr Field hw_used_index{"hw_used_index", 0x150, 16};
inline constexpr Field reserved_at_160{"reserved_at_160", 0x160, 160};
// virtio_q_context: the virtio_q table shifted to 0x200.
inline constexpr Field virtio_q_type = virtio_q::virtio_q_type.at(kContext);
inline constexpr Field ctx_reserved_at_8 = virtio_q::reserved_at_8.at(kContext);
inline constexpr Field event_mode = virtio_q::event_mode.at(kContext);
inline constexpr Field queue_index = virtio_q::queue_index.at(kContext);
inline constexpr Field full_emulation = virtio_q::full_emulation.at(kContext);
inline constexpr Field virtio_version_1_0 = virtio_q::virtio_version_1_0.at(kContext);
inline constexpr Field ctx_reserved_at_22 = virtio_q::reserved_at_22.at(kContext);
inline constexpr Field offload_type = virtio_q::offload_type.at(kContext);
inline constexpr Field event_qpn_or_msix = virtio_q::event_qpn_or_msix.at(kContext);
inline constexpr Field doorbell_stride_index = virtio_q::doorbell_stride_index.at(kContext);
inline constexpr Field queue_size = virtio_q::queue_size.at(kContext);
inline constexpr Field device_emulation_id = virtio_q::device_emulation_id.at(kContext);
inline constexpr Field desc_addr = virtio_q::desc_addr.at(kContext);
inline constexpr Field used_addr = virtio_q::used_addr.at(kContext);
inline constexpr Field available_addr = virtio_q::available_addr.at(kContext);
inline constexpr Field virtio_q_mkey = virtio_q::virtio_q_mkey.at(kContext);
inline constexpr Field max_tunnel_desc = virtio_q::max_tunnel_desc.at(kContext);
inline constexpr Field ctx_reserved_at_170 = virtio_q::reserved_at_170.at(kContext);
inline constexpr Field error_type = virtio_q::error_type.at(kContext);
inline constexpr Field umem_1_id = virtio_q::umem_1_id.at(kContext);
inline constexpr Field umem_1_size = virtio_q::umem_1_size.at(kContext);
inline constexpr Field umem_1_offset = virtio_q::umem_1_offset.at(kContext);
inline constexpr Field umem_2_id = virtio_q::umem_2_id.at(kContext);
inline constexpr Field umem_2_size = virtio_q::umem_2_size.at(kContext);
inline constexpr Field umem_2_offset = virtio_q::umem_2_offset.at(kContext);
inline constexpr Field umem_3_id = virtio_q::umem_3_id.at(kContext);
inline constexpr Field umem_3_size = virtio_q::umem_3_size.at(kContext);
inline constexpr Field umem_3_offset = virtio_q::umem_3_offset.at(kContext);
inline constexpr Field counter_set_id = virtio_q::counter_set_id.at(kContext);
inline constexpr Field ctx_reserved_at_320 = virtio_q::reserved_at_320.at(kContext);
inline constexpr Field pd = virtio_q::pd.at(kContext);
inline constexpr Field ctx_reserved_at_340 = virtio_q::reserved_at_340.at(kContext);
inline constexpr Field desc_group_mkey = virtio_q::desc_group_mkey.at(kContext);
inline constexpr Field ctx_reserved_at_380 = virtio_q::reserved_at_380.at(kContext);

inline constexpr const Field* kFields[] = {
    &modify_field_select, &reserved_at_40, &vhca_id, &reserved_at_70,
    &queue_feature_bit_mask_12_3, &dirty_bitmap_dump_enable, &vhost_log_page, &reserved_at_90,
    &state, &reserved_at_a0, &queue_feature_bit_mask_2_0, &tisn_or_qpn,
    &dirty_bitmap_mkey, &dirty_bitmap_size, &dirty_bitmap_addr,
    &hw_available_index, &hw_used_index, &reserved_at_160,
    &virtio_q_type, &ctx_reserved_at_8, &event_mode, &queue_index,
    &full_emulation, &virtio_version_1_0, &ctx_reserved_at_22, &offload_type,
    &event_qpn_or_msix, &doorbell_stride_index, &queue_size, &device_emulation_id,
    &desc_addr, &used_addr, &available_addr, &virtio_q_mkey,
    &max_tunnel_desc, &ctx_reserved_at_170, &error_type,
    &umem_1_id, &umem_1_size, &umem_1_offset, &umem_2_id, &umem_2_size, &umem_2_offset,
    &umem_3_id, &umem_3_size, &umem_3_offset,
    &counter_set_id, &ctx_reserved_at_320, &pd, &ctx_reserved_at_340, &desc_group_mkey,
    &ctx_reserved_at_380,
};
static_assert(tiles(kFields, 0x600));
static_assert(sizeof(kFields) / sizeof(kFields[0]) ==
              18 + sizeof(virtio_q::kFields) / sizeof(virtio_q::kFields[0]));

// DPDK 22.11 (mlx5_ifc_virtio_net_q_bits): the top four bits of
// queue_feature_bit_mask_12_3 are named one by one; the codec carries them
// as part of queue_feature_bit_mask_12_3.
namespace dpdk {
// Mask bits use the PRM's own numbering (Linux MLX5_VIRTIO_NET_F_*), not
// virtio's: 12 HOST_TSO4, 11 HOST_TSO6, 10 CSUM, 9 GUEST_CSUM.
inline constexpr Field tso_ipv4{"tso_ipv4", 0x80, 1};
inline constexpr Field tso_ipv6{"tso_ipv6", 0x81, 1};
inline constexpr Field tx_csum{"tx_csum", 0x82, 1};
inline constexpr Field rx_csum{"rx_csum", 0x83, 1};
inline constexpr Field reserved_at_84{"reserved_at_84", 0x84, 6};
inline constexpr Field doorbell_stride_idx = virtio_q::dpdk::doorbell_stride_idx.at(kContext);
inline constexpr Field reserved_at_160 = virtio_q::dpdk::reserved_at_160.at(kContext);
inline constexpr Field queue_period_mode = virtio_q::dpdk::queue_period_mode.at(kContext);
inline constexpr Field queue_period_us = virtio_q::dpdk::queue_period_us.at(kContext);
inline constexpr Field queue_max_count = virtio_q::dpdk::queue_max_count.at(kContext);
inline constexpr Field reserved_at_360 = virtio_q::dpdk::reserved_at_360.at(kContext);
inline constexpr const Field* kFields[] = {&tso_ipv4, &tso_ipv6, &tx_csum, &rx_csum,
                                           &reserved_at_84, &doorbell_stride_idx,
                                           &reserved_at_160, &queue_period_mode,
                                           &queue_period_us, &queue_max_count,
                                           &reserved_at_360};
}  // namespace dpdk

inline constexpr const Field* kCarried[] = {&dpdk::queue_period_mode, &dpdk::queue_period_us,
                                            &dpdk::queue_max_count};
}  // namespace virtio_net_q_object

inline constexpr Layout kVirtioNetQObject{"virtio_net_q_object", 0x600,
                                          virtio_net_q_object::kFields};

}  // namespace mlx5async::prm::layout
