// Virtio features the device offers, from its caps.
#pragma once

#include <cstdint>

#include "common/prm/caps.hpp"
#include "guest.hpp"

namespace mlx5async::core {

// VERSION_1 when the device does virtio 1.0 queues; MQ (queue pairs from
// max_num_virtio_queues); LOG_ALL (dirty-bitmap dump); PROTOCOL_FEATURES so
// vhost-user frontends use SET_VRING_ENABLE. Offload bits stay off: the
// device_features_bits_mask mapping is not verified against hardware yet
// (doc/open-questions.md).
inline uint64_t device_features(const prm::VirtioEmulationCaps& c, uint32_t max_virtqs) {
    uint64_t f = vfeat::LOG_ALL | vfeat::PROTOCOL_FEATURES;
    if (c.virtio_version_1_0) f |= vfeat::VERSION_1;
    if (max_virtqs >= 4) f |= vfeat::MQ;
    return f;
}

}  // namespace mlx5async::core
