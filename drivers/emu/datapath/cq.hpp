// Writing CQEs into a CQ of the driver's, shared by the interrupt path
// (event QPs) and the send queues. Under DeviceState::mu.
#pragma once

#include <cstdint>

#include "../objects.hpp"

namespace mlx5async::emu::dp {

// Room for one more CQE: a collapsed or overrun-ignoring CQ always has it;
// otherwise fewer than its size are written past the consumer index the
// driver last stored in the doorbell record.
bool cq_has_room(const CqObj& cq);

// CQE number `cq.produced` at its slot (slot 0 when collapsed), the owner
// bit of this pass over the ring; counts it (produced + 1).
void post_cqe(CqObj& cq, prm::Cqe c);

}  // namespace mlx5async::emu::dp
