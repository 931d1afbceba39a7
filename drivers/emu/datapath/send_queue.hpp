// The send queues' side of the datapath: what the driver posts on an SQ of
// its own goes to the port's wire (wire.hpp), as ConnectX sends it.
//
// Posting (PRM "Send Queue", DPDK mlx5_tx_dbrec): the driver writes WQEs
// into the ring (64-byte basic blocks, each WQE's control segment naming
// its index and the SQ), stores its send counter in doorbell record [1],
// then the WQE's first 8 bytes to the send doorbell register of its UAR
// page (offset 0x800). A register keeps only its last write, so a write
// there makes every RDY SQ naming that page send what its record says was
// posted since it last looked.
//
// A WQE the device cannot execute (not an Ethernet SEND with the frame
// inline, another index or SQ number than the ring's, reserved bits set,
// a frame shorter than its header or longer than the port passes, a
// record more than the ring ahead) moves the SQ to ERR and writes an error
// CQE (REQ_ERR, its syndrome, the WQE's index); that frame and the WQEs
// after it are not sent, and the SQ says why (SqObj::error). A WQE whose
// control segment asks for a CQE (ce = 2) gets a REQ CQE once its frame
// left. Data segments are not emulated: a WQE with segments beyond its
// inline data fails the same way.
//
// Everything here runs under DeviceState::mu (datapath.cpp takes it).
#pragma once

#include <cstddef>
#include <cstdint>

namespace mlx5async::emu {
struct DeviceState;
}

namespace mlx5async::emu::dp {

class Wire;

struct SendStats {
    uint64_t doorbells = 0;  // send doorbell register writes seen
    uint64_t frames = 0;     // frames put on the wire
    uint64_t errors = 0;     // SQs moved to ERR
    SendStats& operator+=(const SendStats& o);
};

// The send doorbell register of UAR `uar_id` was written. `max_frame`: the
// longest frame the port passes.
void send_doorbell(DeviceState& st, uint32_t uar_id, size_t max_frame, Wire& wire, SendStats& s);

}  // namespace mlx5async::emu::dp
