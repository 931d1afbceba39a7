// VIRTIO_NET_Q general object (obj_type 0x000d): typed attributes and the
// CREATE/MODIFY/QUERY command encoders/decoders. Layout: virtio_net_q_object
// with nested virtio_q_context (prm-virtq-fields.tsv).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "../base/result.hpp"
#include "field.hpp"
#include "general_obj.hpp"

namespace mlx5async::prm {

enum class VirtqState : uint8_t { INIT = 0x0, RDY = 0x1, SUSPEND = 0x2, ERR = 0x3 };
const char* virtq_state_name(VirtqState s) noexcept;

// modify_field_select bits (prm-virtq-enums.tsv).
namespace modify_bits {
inline constexpr uint64_t STATE = 1ull << 0;
inline constexpr uint64_t DIRTY_BITMAP_PARAMS = 1ull << 3;
inline constexpr uint64_t DIRTY_BITMAP_DUMP_ENABLE = 1ull << 4;
inline constexpr uint64_t QUEUE_PERIOD = 1ull << 5;  // DPDK only
inline constexpr uint64_t VIRTIO_Q_ADDRS = 1ull << 6;
inline constexpr uint64_t VIRTIO_Q_AVAIL_IDX = 1ull << 7;
inline constexpr uint64_t VIRTIO_Q_USED_IDX = 1ull << 8;
inline constexpr uint64_t Q_TYPE = 1ull << 9;  // DPDK only
inline constexpr uint64_t QUEUE_VIRTIO_VERSION = 1ull << 10;
inline constexpr uint64_t VIRTIO_Q_MKEY = 1ull << 11;
inline constexpr uint64_t QUEUE_FEATURES = 1ull << 12;
inline constexpr uint64_t EVENT_MODE = 1ull << 13;       // DPDK only
inline constexpr uint64_t DESC_GROUP_MKEY = 1ull << 14;  // Linux only
inline constexpr uint64_t kAllKnown = STATE | DIRTY_BITMAP_PARAMS | DIRTY_BITMAP_DUMP_ENABLE |
                                      QUEUE_PERIOD | VIRTIO_Q_ADDRS | VIRTIO_Q_AVAIL_IDX |
                                      VIRTIO_Q_USED_IDX | Q_TYPE | QUEUE_VIRTIO_VERSION |
                                      VIRTIO_Q_MKEY | QUEUE_FEATURES | EVENT_MODE |
                                      DESC_GROUP_MKEY;
}  // namespace modify_bits

// Bits of queue_feature_bit_mask_12_3 / _2_0 use the PRM's own numbering
// (Linux MLX5_VIRTIO_NET_F_*), not virtio's feature bit numbers.
namespace queue_feature_bits {
inline constexpr unsigned MRG_RXBUF = 2;
inline constexpr unsigned HOST_ECN = 4;
inline constexpr unsigned GUEST_ECN = 6;
inline constexpr unsigned GUEST_TSO6 = 7;
inline constexpr unsigned GUEST_TSO4 = 8;
inline constexpr unsigned GUEST_CSUM = 9;  // DPDK rx_csum
inline constexpr unsigned CSUM = 10;       // DPDK tx_csum
inline constexpr unsigned HOST_TSO6 = 11;  // DPDK tso_ipv6
inline constexpr unsigned HOST_TSO4 = 12;  // DPDK tso_ipv4
}  // namespace queue_feature_bits

// Map virtio-net feature bits (VIRTIO_NET_F_*) to the 13-bit PRM mask:
// bits 12..3 go to queue_feature_bit_mask_12_3, bits 2..0 to _2_0.
uint16_t queue_feature_mask(uint64_t virtio_net_features) noexcept;
// The reverse: virtio-net feature bits of a PRM mask (device_features_bits_mask
// of the virtio emulation caps uses the same numbering).
uint64_t virtio_net_features_of(uint16_t mask) noexcept;
inline constexpr uint16_t queue_feature_mask_12_3(uint16_t mask) { return (mask >> 3) & 0x3ff; }
inline constexpr uint8_t queue_feature_mask_2_0(uint16_t mask) { return mask & 0x7; }

enum class VirtqType : uint8_t { SPLIT = 0, PACKED = 1 };
enum class EventMode : uint8_t { NO_MSIX = 0, QP = 1, MSIX = 2 };

struct VirtqUmem {
    uint32_t id = 0;
    uint32_t size = 0;
    uint64_t offset = 0;

    // Needed for VirtqAttr's defaulted == (it was implicitly deleted).
    bool operator==(const VirtqUmem&) const = default;
};

// Every field of virtio_net_q_object, PRM names. The DPDK-only queue_period
// fields (0x542..0x55f of the context) and the Linux-only desc_group_mkey
// (0x560) do not overlap, so both are carried.
struct VirtqAttr {
    uint64_t modify_field_select = 0;
    uint16_t vhca_id = 0;
    uint16_t queue_feature_bit_mask_12_3 = 0;  // 10 bits: virtio-net feature bits 12..3
    uint8_t queue_feature_bit_mask_2_0 = 0;    // 3 bits
    bool dirty_bitmap_dump_enable = false;
    uint8_t vhost_log_page = 0;  // log2 page size
    VirtqState state = VirtqState::INIT;
    uint32_t tisn_or_qpn = 0;  // 24 bits
    uint32_t dirty_bitmap_mkey = 0;
    uint32_t dirty_bitmap_size = 0;
    uint64_t dirty_bitmap_addr = 0;
    uint16_t hw_available_index = 0;
    uint16_t hw_used_index = 0;
    // virtio_q_context
    VirtqType virtio_q_type = VirtqType::SPLIT;
    EventMode event_mode = EventMode::NO_MSIX;
    uint16_t queue_index = 0;
    bool full_emulation = false;
    bool virtio_version_1_0 = false;
    uint8_t offload_type = 0;          // 4 bits
    uint32_t event_qpn_or_msix = 0;    // 24 bits
    uint16_t doorbell_stride_index = 0;
    uint16_t queue_size = 0;
    uint32_t device_emulation_id = 0;
    uint64_t desc_addr = 0;
    uint64_t used_addr = 0;
    uint64_t available_addr = 0;
    uint32_t virtio_q_mkey = 0;
    uint16_t max_tunnel_desc = 0;
    uint8_t error_type = 0;
    std::array<VirtqUmem, 3> umem{};
    uint32_t counter_set_id = 0;
    uint32_t pd = 0;  // 24 bits
    uint8_t queue_period_mode = 0;   // DPDK: 2 bits
    uint16_t queue_period_us = 0;    // DPDK: 12 bits
    uint16_t queue_max_count = 0;    // DPDK: 16 bits
    uint32_t desc_group_mkey = 0;    // Linux

    bool operator==(const VirtqAttr&) const = default;
};

inline constexpr size_t kVirtqObjBytes = 192;  // virtio_net_q_object
inline constexpr size_t kVirtqCmdInBytes = kGeneralObjInHdrBytes + kVirtqObjBytes;
inline constexpr size_t kVirtqQueryOutBytes = kGeneralObjOutHdrBytes + kVirtqObjBytes;

// The object image itself (span of exactly kVirtqObjBytes or more).
// Writing fails when a value does not fit its field (names the field).
Result<void> write_virtq_object(const VirtqAttr& a, std::span<std::byte> obj);
Result<VirtqAttr> read_virtq_object(std::span<const std::byte> obj);
// Name of the first reserved field holding a non-zero bit, or empty (the
// carried DPDK queue_period_* bits are not padding). A buffer shorter than
// kVirtqObjBytes yields "virtio_net_q_object (short buffer)".
std::string_view virtq_object_nonzero_reserved(std::span<const std::byte> obj);

// Whole commands (header + object), as the driver sends them.
Result<void> encode_create_virtq(const VirtqAttr& a, std::span<std::byte> in);
// The fields of a CREATE input that name other objects, for a CREATE that
// takes their ids from entries of its batch (devx::Command::ids_from).
struct VirtqCreateIdFields {
    std::array<Field, 3> umem_id;
    Field counter_set_id;
    Field event_qpn;
};
const VirtqCreateIdFields& virtq_create_id_fields();
Result<void> encode_modify_virtq(uint32_t obj_id, const VirtqAttr& a, std::span<std::byte> in);
void encode_query_virtq(uint32_t obj_id, std::span<std::byte> in);  // header only (16 bytes)
// Checks status first (Firmware error with status/syndrome), then decodes.
Result<VirtqAttr> decode_query_virtq_out(std::span<const std::byte> out, uint32_t obj_id = 0,
                                         int queue = -1);

}  // namespace mlx5async::prm
