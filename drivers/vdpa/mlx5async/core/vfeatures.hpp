// Virtio features the device offers, from its caps.
#pragma once

#include <cstdint>

#include "common/prm/caps.hpp"
#include "common/prm/virtq.hpp"
#include "guest.hpp"

namespace mlx5async::core {

// doc/guides/mlx5async.md, "Virtio features", says why each is offered or
// not. Always: LOG_ALL (dirty-bitmap dump); PROTOCOL_FEATURES, so vhost-user
// frontends use SET_VRING_ENABLE; GUEST_ANNOUNCE (the guest announces itself
// after a migration, through QEMU's control queue: nothing of the device);
// ANY_LAYOUT (the device gathers and scatters across descriptors) and
// ORDER_PLATFORM (it is a PCI device: the guest orders ring accesses for
// DMA). From the caps: VERSION_1 when the device does virtio 1.0 queues; MQ
// (queue pairs from max_num_virtio_queues); the virtio-net offloads the
// device lists in device_features_bits_mask (PRM numbering, as Linux
// mlx5_vnet.c maps it; DPDK's mlx5 reads the same bits as tso/csum caps);
// MTU when the port's MTU is known (`port_mtu` > 0: QUERY_NIC_VPORT_CONTEXT);
// RING_PACKED when the device lists packed virtqs (virtio_queue_type bit 1).
inline uint64_t device_features(const prm::VirtioEmulationCaps& c, uint32_t max_virtqs,
                                uint16_t port_mtu) {
    uint64_t f = vfeat::LOG_ALL | vfeat::PROTOCOL_FEATURES | vfeat::GUEST_ANNOUNCE |
                 vfeat::ANY_LAYOUT | vfeat::ORDER_PLATFORM;
    f |= prm::virtio_net_features_of(c.device_features_bits_mask);
    if (c.virtio_version_1_0) f |= vfeat::VERSION_1;
    if (max_virtqs >= 4) f |= vfeat::MQ;
    if (port_mtu) f |= vfeat::MTU;
    if (c.virtio_queue_type & (1u << unsigned(prm::VirtqType::PACKED))) f |= vfeat::RING_PACKED;
    return f;
}

}  // namespace mlx5async::core
