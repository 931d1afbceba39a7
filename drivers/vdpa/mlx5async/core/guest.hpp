// What vhost tells the driver about the guest, as plain data (DPDK-free):
// the PMD glue fills it from rte_vhost; the device core consumes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/base/virtio_uapi.h"  // generated (common/base/virtio_uapi.py)

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
    // RING_PACKED negotiated: avail_gpa / used_gpa are the driver and
    // device event suppression areas, the indexes carry wrap counters in
    // bit 15 (vhost's convention).
    bool packed = false;
    bool enabled = false;
    int kickfd = -1;
    int callfd = -1;
    // Set up by the frontend, yet its addresses could not be read (vhost
    // could not map them): why. The device refuses such a ring by name.
    std::string unusable;
};

struct GuestConfig {
    uint64_t features = 0;  // negotiated virtio features
    uint16_t mtu = 0;       // the frontend's MTU (VHOST_USER_NET_SET_MTU); 0: not set
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

// Virtio feature bits the driver cares about, from the headers that define
// them (Linux uapi virtio_config.h, virtio_net.h, virtio_ring.h,
// vhost_types.h, through virtio_uapi.h).
namespace vfeat {
constexpr uint64_t bit(unsigned n) { return 1ull << n; }
inline constexpr uint64_t CSUM = bit(VIRTIO_NET_F_CSUM);
inline constexpr uint64_t GUEST_CSUM = bit(VIRTIO_NET_F_GUEST_CSUM);
inline constexpr uint64_t MTU = bit(VIRTIO_NET_F_MTU);
inline constexpr uint64_t MRG_RXBUF = bit(VIRTIO_NET_F_MRG_RXBUF);
inline constexpr uint64_t CTRL_VQ = bit(VIRTIO_NET_F_CTRL_VQ);
inline constexpr uint64_t GUEST_ANNOUNCE = bit(VIRTIO_NET_F_GUEST_ANNOUNCE);
inline constexpr uint64_t MQ = bit(VIRTIO_NET_F_MQ);
inline constexpr uint64_t LOG_ALL = bit(VHOST_F_LOG_ALL);
inline constexpr uint64_t ANY_LAYOUT = bit(VIRTIO_F_ANY_LAYOUT);
inline constexpr uint64_t RING_INDIRECT_DESC = bit(VIRTIO_RING_F_INDIRECT_DESC);
inline constexpr uint64_t RING_EVENT_IDX = bit(VIRTIO_RING_F_EVENT_IDX);
// vhost-user's VHOST_USER_F_PROTOCOL_FEATURES (vhost-user spec; DPDK's
// rte_vhost.h, which this DPDK-free layer does not include).
inline constexpr uint64_t PROTOCOL_FEATURES = bit(30);
inline constexpr uint64_t VERSION_1 = bit(VIRTIO_F_VERSION_1);
inline constexpr uint64_t ACCESS_PLATFORM = bit(VIRTIO_F_ACCESS_PLATFORM);
inline constexpr uint64_t RING_PACKED = bit(VIRTIO_F_RING_PACKED);
inline constexpr uint64_t ORDER_PLATFORM = bit(VIRTIO_F_ORDER_PLATFORM);
}  // namespace vfeat

}  // namespace mlx5async::core
