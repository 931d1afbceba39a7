// QUERY_HCA_CAP (opcode 0x100): general device caps and the virtio emulation
// caps (op_mod = cap_type << 1 | current).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "../base/result.hpp"

namespace mlx5async::prm {

inline constexpr uint16_t kCapTypeGeneral = 0x0;
inline constexpr uint16_t kCapTypeVirtioEmulation = 0x13;  // MLX5_CAP_VDPA_EMULATION
inline constexpr uint16_t cap_op_mod(uint16_t cap_type, bool current = true) {
    return uint16_t(cap_type << 1) | (current ? 1 : 0);
}

inline constexpr size_t kQueryHcaCapInBytes = 16;
inline constexpr size_t kCapBytes = 4096;  // capability union
// Bytes of the union that cmd_hca_cap / virtio_emulation_cap occupy: the
// readers and writers need at least this much.
inline constexpr size_t kCapLayoutBytes = 256;
inline constexpr size_t kQueryHcaCapOutBytes = 16 + kCapBytes;

// The general caps the driver uses (cmd_hca_cap, PRM names).
struct GeneralCaps {
    uint16_t vhca_id = 0;
    uint8_t log_max_pd = 0;
    bool umem_uid_0 = false;
    // cmd_hca_cap has no user_unaffiliated_events bit: that is a 4x64-bit
    // mask in device_event_cap (a separate cap type). event_cap (0x90) says
    // whether that cap (DevX user event masks) is valid.
    bool event_cap = false;
    bool eth_net_offloads = false;
    uint64_t general_obj_types = 0;  // bit 13 VIRTIO_NET_Q, bit 0x1c VIRTIO_Q_COUNTERS
    // Timestamp formats an SQ may take: 0 free running, 1 real time, 2 both
    // (MLX5_HCA_CAP_TIMESTAMP_FORMAT_*; prm::sq_ts_format_for_cap).
    uint8_t sq_ts_format = 0;

    bool has_obj_type(uint16_t t) const { return t < 64 && (general_obj_types >> t) & 1; }
    bool operator==(const GeneralCaps&) const = default;
};

// virtio_emulation_cap, every value field (Linux names; DPDK's split feature
// bits are the top four of device_features_bits_mask).
struct VirtioEmulationCaps {
    bool desc_tunnel_offload_type = false;
    bool eth_frame_offload_type = false;
    bool virtio_version_1_0 = false;
    uint16_t device_features_bits_mask = 0;  // 13 bits: features 12..0, MSB first
    uint8_t event_mode = 0;                  // bitmask 1 << EventMode
    uint8_t virtio_queue_type = 0;           // bitmask 0x1 split, 0x2 packed
    uint16_t max_tunnel_desc = 0;
    uint8_t log_doorbell_stride = 0;
    uint8_t log_doorbell_bar_size = 0;
    uint64_t doorbell_bar_offset = 0;
    uint8_t max_emulated_devices = 0;
    uint32_t max_num_virtio_queues = 0;  // 24 bits
    // DPDK 22.11 names, in Linux's reserved_at_38 (carried, no overlap).
    bool vnet_modify_ext = false;
    bool virtio_net_q_addr_modify = false;
    bool virtio_q_index_modify = false;
    bool desc_group_mkey_supported = false;
    bool freeze_to_rdy_supported = false;
    struct UmemParam {
        uint32_t a = 0;
        uint32_t b = 0;
        bool operator==(const UmemParam&) const = default;
    };
    UmemParam umem_param[3]{};  // umem_N size = a * queue_size + b

    uint64_t umem_size(int n, uint16_t queue_size) const {
        return uint64_t(umem_param[n].a) * queue_size + umem_param[n].b;
    }
    bool operator==(const VirtioEmulationCaps&) const = default;
};

// QUERY_HCA_CAP input (kQueryHcaCapInBytes).
void encode_query_hca_cap(uint16_t op_mod, std::span<std::byte> in);

// The writers take a capability image of at least kCapLayoutBytes and zero
// it first; a value wider than its PRM field is a caller bug and aborts with
// the field's name (the emulator's profiles are constants).

void write_general_caps(const GeneralCaps& c, std::span<std::byte> cap);
Result<GeneralCaps> read_general_caps(std::span<const std::byte> cap);
void write_virtio_emulation_caps(const VirtioEmulationCaps& c, std::span<std::byte> cap);
Result<VirtioEmulationCaps> read_virtio_emulation_caps(std::span<const std::byte> cap);

// Whole QUERY_HCA_CAP output: status check, then the capability at byte 16.
Result<GeneralCaps> decode_query_general_caps_out(std::span<const std::byte> out);
Result<VirtioEmulationCaps> decode_query_virtio_caps_out(std::span<const std::byte> out);

}  // namespace mlx5async::prm
