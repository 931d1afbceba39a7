// A virtq's interrupts in QP event mode, as ConnectX sends them (DPDK
// mlx5_vdpa_event.c and Linux mlx5_vdpa are the drivers of this model).
//
// When a pass moved a queue's used index the guest is owed an interrupt,
// unless it set VRING_AVAIL_F_NO_INTERRUPT (virtio 1.x §2.7.7). In QP mode
// the virtq's firmware QP sends a zero-length message to its peer, the
// driver's RC QP: that consumes one receive WQE (posted while the QP's
// doorbell record counter is ahead of the WQEs consumed) and writes one CQE
// (RESP_SEND, wqe_counter = index of the WQE) into the driver QP's receive
// CQ. An armed CQ then raises a completion event (event 0) on the DevX event
// channels subscribed to it, and is disarmed. Without a receive WQE (RNR)
// the interrupt stays owed and is sent on a later pass; owed interrupts
// coalesce, the last one is never lost. Only RDY queues send.
//
// Arming: the driver writes the arm word into the CQ doorbell record [1],
// then the 64-bit CQ doorbell register (offset 0x20) of the UAR page the CQ
// names. A register keeps only its last write, so on any write every CQ of
// that page is re-checked: armed when its record changed since its last
// arm, or it was never armed. Armed with ci behind the CQEs written: the
// event fires at once.
//
// Everything here runs under DeviceState::mu (datapath.cpp takes it).
#pragma once

#include <cstdint>

#include "ring.hpp"

namespace mlx5async::emu {
struct DeviceState;
class VirtqObj;
}  // namespace mlx5async::emu

namespace mlx5async::emu::dp {

struct IrqStats {
    uint64_t needed = 0;         // used index moved with interrupts enabled
    uint64_t suppressed = 0;     // ... with VRING_AVAIL_F_NO_INTERRUPT set
    uint64_t raised = 0;         // interrupts delivered (QP mode: CQEs written)
    uint64_t rnr = 0;            // interrupts that waited for a receive WQE
    uint64_t dropped = 0;        // MSIX mode: no MSI-X target in the emulator
    uint64_t events = 0;         // completion events raised
    uint64_t arms = 0;           // CQ arms taken
    uint64_t uar_doorbells = 0;  // CQ doorbell register writes seen

    IrqStats& operator+=(const IrqStats& o);
};

// VRING_AVAIL_F_NO_INTERRUPT is read through the virtq mkey with `tr`.
// Afterwards vq.irq.pending says whether an interrupt is owed.
void used_moved(VirtqObj& vq, const Translator& tr, IrqStats& s);

// Sends what vq owes if it can now. True when nothing is owed any more
// (sent, dropped, or the queue is in ERR); false while it stays owed (not
// RDY, no receive WQE, QPs not connected, CQ full).
bool deliver(DeviceState& st, VirtqObj& vq, IrqStats& s);

// The CQ doorbell register of UAR `uar_id` held `reg` (as read from memory).
void uar_doorbell(DeviceState& st, uint32_t uar_id, uint64_t reg, IrqStats& s);

}  // namespace mlx5async::emu::dp
