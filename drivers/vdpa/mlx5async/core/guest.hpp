// What vhost tells the driver about the guest, as plain data (DPDK-free):
// the PMD glue fills it from rte_vhost; the device core consumes it.
#pragma once

#include <cstdint>
#include <vector>

namespace mlx5async::core {

// One region of guest memory mapped into this process.
struct MemRegion {
    uint64_t guest_phys_addr = 0;
    uint64_t size = 0;
    uint64_t host_addr = 0;  // where the region is mapped here (host_user_addr)
    // The file behind the mapping (st_dev, st_ino; 0 when unknown) and the
    // region's offset in it: the same GPA, size and host address over
    // another file (a frontend that reconnected) is other memory.
    uint64_t file_dev = 0;
    uint64_t file_ino = 0;
    uint64_t file_offset = 0;
};

// One vring as vhost hands it over. Addresses are guest physical (the
// device reaches them through the guest-memory mkey).
struct VringConfig {
    uint16_t index = 0;
    uint16_t size = 0;
    uint64_t desc_gpa = 0;
    uint64_t avail_gpa = 0;
    uint64_t used_gpa = 0;
    uint16_t last_avail_idx = 0;
    uint16_t last_used_idx = 0;
    bool enabled = false;
    int kickfd = -1;
    int callfd = -1;
};

struct GuestConfig {
    uint64_t features = 0;  // negotiated virtio features
    std::vector<MemRegion> mem;
    std::vector<VringConfig> vrings;

    // Ring `index`, or null when vhost has not set it up.
    const VringConfig* vring(uint16_t index) const {
        for (const VringConfig& v : vrings)
            if (v.index == index) return &v;
        return nullptr;
    }
    VringConfig* vring(uint16_t index) {
        return const_cast<VringConfig*>(static_cast<const GuestConfig*>(this)->vring(index));
    }
};

// Ring indexes handed back to vhost after a suspend (rte_vhost_set_vring_base).
struct RingIndexes {
    uint16_t ring = 0;
    uint16_t last_avail_idx = 0;
    uint16_t last_used_idx = 0;
    bool from_device = false;  // false: last known-good (the device failed to answer)
};

// Virtio feature bits the driver cares about.
namespace vfeat {
inline constexpr uint64_t CSUM = 1ull << 0;
inline constexpr uint64_t GUEST_CSUM = 1ull << 1;
inline constexpr uint64_t MAC = 1ull << 5;
inline constexpr uint64_t GUEST_TSO4 = 1ull << 7;
inline constexpr uint64_t GUEST_TSO6 = 1ull << 8;
inline constexpr uint64_t HOST_TSO4 = 1ull << 11;
inline constexpr uint64_t HOST_TSO6 = 1ull << 12;
inline constexpr uint64_t MRG_RXBUF = 1ull << 15;
inline constexpr uint64_t STATUS = 1ull << 16;
inline constexpr uint64_t CTRL_VQ = 1ull << 17;
inline constexpr uint64_t MQ = 1ull << 22;
inline constexpr uint64_t LOG_ALL = 1ull << 26;  // VHOST_F_LOG_ALL
inline constexpr uint64_t RING_INDIRECT_DESC = 1ull << 28;
inline constexpr uint64_t RING_EVENT_IDX = 1ull << 29;
inline constexpr uint64_t PROTOCOL_FEATURES = 1ull << 30;  // VHOST_USER_F_PROTOCOL_FEATURES
inline constexpr uint64_t VERSION_1 = 1ull << 32;
inline constexpr uint64_t ACCESS_PLATFORM = 1ull << 33;
inline constexpr uint64_t RING_PACKED = 1ull << 34;
}  // namespace vfeat

}  // namespace mlx5async::core
