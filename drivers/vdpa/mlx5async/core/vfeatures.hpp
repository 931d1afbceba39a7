// Virtio features the device offers, from its caps.
#pragma once

#include <cstdint>

#include "common/prm/caps.hpp"
#include "common/prm/virtq.hpp"
#include "guest.hpp"

namespace mlx5async::core {

// VERSION_1 when the device does virtio 1.0 queues; MQ (queue pairs from
// max_num_virtio_queues); LOG_ALL (dirty-bitmap dump); PROTOCOL_FEATURES so
// vhost-user frontends use SET_VRING_ENABLE; and the virtio-net offloads the
// device lists in device_features_bits_mask (PRM numbering, as Linux
// mlx5_vnet.c maps it; DPDK's mlx5 reads the same bits as tso/csum caps).
inline uint64_t device_features(const prm::VirtioEmulationCaps& c, uint32_t max_virtqs) {
    uint64_t f = vfeat::LOG_ALL | vfeat::PROTOCOL_FEATURES;
    f |= prm::virtio_net_features_of(c.device_features_bits_mask);
    if (c.virtio_version_1_0) f |= vfeat::VERSION_1;
    if (max_virtqs >= 4) f |= vfeat::MQ;
    return f;
}

}  // namespace mlx5async::core
