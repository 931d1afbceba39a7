// TX -> RX loopback of one queue pair (Linux vdpa_sim_net's work function):
// each chain the driver makes available on TX queue 2k+1 is copied, virtio-net
// header included, into the next receive chain of RX queue 2k; both are
// completed. Unlike vdpa_sim_net, a TX chain waits (is not consumed) while
// the RX queue has no buffer or is not RDY, so nothing is ever dropped.
// Every chain is fetched, copied and completed in one step: when this returns,
// hw_available_index / hw_used_index say exactly what was consumed/completed.
// Checksum offload (CSUM on TX, RX without GUEST_CSUM): the device completes
// a NEEDS_CSUM packet's checksum on the way, as the wire would deliver it
// (doc/emulator.md, "Offloads"); nothing else in the header is rewritten but
// num_buffers. With MRG_RXBUF a packet spans as many receive buffers as it
// needs (num_buffers of them); without it, it is cut to one buffer.
#pragma once

#include <cstdint>
#include <functional>

#include "../objects.hpp"
#include "common/prm/counters.hpp"
#include "common/prm/virtq.hpp"
#include "ring.hpp"

namespace mlx5async::emu::dp {

// One virtq as the loopback sees it: its context (indexes move here), its
// counters and who hears about its writes (dirty log, tests). A TX queue's
// frames are counted in `frames` (when given) and, with `max_frame`, one
// longer than that (Ethernet header and one VLAN tag included, virtio-net
// header not) is consumed and dropped, as the port drops it.
struct QueueIo {
    prm::VirtqAttr& attr;
    prm::VirtqCounters& ctr;
    const WriteObserver* on_write = nullptr;
    uint8_t error = 0;  // set when this queue hit a bad ring/descriptor
    bool host_fault = false;  // an access to its memory faulted (host_access.hpp)
    FrameCounters* frames = nullptr;
    size_t max_frame = 0;  // 0: no limit
    // Told of a gratuitous ARP once it reached the receiver, before its TX
    // chain completes (whoever sees the used entry sees the call's effects).
    const std::function<void()>* on_announce = nullptr;
};

// The longest frame a port with this MTU (the largest IP packet) passes:
// Ethernet header and one VLAN tag on top (no FCS in guest memory).
constexpr size_t max_frame_of_mtu(uint32_t mtu) { return size_t(mtu) + 14 + 4; }

struct LoopbackResult {
    uint32_t packets = 0;  // delivered to RX
    uint32_t dropped = 0;  // consumed from TX, not delivered (oversize)
    uint32_t announces = 0;  // gratuitous ARPs among the packets
    bool blocked = false;  // TX chains left waiting for RX buffers
};

// virtio-net header size: 12 bytes with VERSION_1 or MRG_RXBUF (num_buffers
// present), else 10 (virtio 1.x §5.1.6).
size_t net_hdr_len(const prm::VirtqAttr& a);

// Moves at most `budget` packets. rx may be null (RX queue not RDY).
LoopbackResult loopback(const Translator& tr, QueueIo& tx, QueueIo* rx, uint32_t budget);

}  // namespace mlx5async::emu::dp
