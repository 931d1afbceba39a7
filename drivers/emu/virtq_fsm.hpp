// The virtq state machine as data (libvfio-user migration.c shape). MODIFY
// may take only the edges in kVqEdges; ERR is entered only on a device error
// (which raises OBJECT_CHANGE), and nothing leaves ERR but DESTROY.
// transition() is the only writer of a virtq's state.
#pragma once

#include <cstdint>

#include "common/base/result.hpp"
#include "common/prm/virtq.hpp"
#include "objects.hpp"

namespace mlx5async::emu {

using prm::VirtqState;

struct VqEdge {
    VirtqState from, to;
    bool needs_freeze_to_rdy;
};

// Same table as Linux mlx5_vdpa is_valid_state_change(); self-edges are not
// in it (a MODIFY to the current state is rejected).
inline constexpr VqEdge kVqEdges[] = {
    {VirtqState::INIT, VirtqState::RDY, false},
    {VirtqState::RDY, VirtqState::SUSPEND, false},
    {VirtqState::SUSPEND, VirtqState::RDY, true},  // HCA cap freeze_to_rdy_supported
};

enum class VqCause : uint8_t {
    Modify,       // MODIFY_GENERAL_OBJECT with the STATE bit
    DeviceError,  // firmware-detected error: -> ERR with error_type
};

struct VqRequest {
    VirtqState to;
    VqCause cause = VqCause::Modify;
    uint8_t error_type = 0;  // DeviceError only
};

// Pure check: Ok, or a Firmware error with BAD_RES_STATE_ERR and the syndrome
// of the rule (kStateIsErr, kFreezeToRdyUnsupported, kIllegalTransition).
Result<void> check_transition(VirtqState from, const VqRequest& rq, bool freeze_to_rdy_supported);

// Validates against the table, applies side effects (entering RDY replays
// pending kicks), then stores the state. On error nothing changes.
Result<void> transition(VirtqObj& vq, const VqRequest& rq, bool freeze_to_rdy_supported);

}  // namespace mlx5async::emu
