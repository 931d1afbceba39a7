// The driver's mirror of one virtq's lifecycle, a table of allowed edges
// (libvfio-user style): checked before any side effect, stored only after
// the firmware agreed. Distinct from the firmware FSM in the emulator.
#pragma once

#include <cstdint>

namespace mlx5async::core {

enum class VqPhase : uint8_t {
    Absent,     // no firmware object
    Init,       // created, never started
    Ready,      // RDY: the device owns the ring
    Suspended,  // SUSPEND: indexes queried and handed back; object kept
    Error,      // ERR reported (OBJECT_CHANGE or a failed command)
};

const char* vq_phase_name(VqPhase p) noexcept;

struct VqPhaseEdge {
    VqPhase from, to;
};

inline constexpr VqPhaseEdge kVqPhaseEdges[] = {
    {VqPhase::Absent, VqPhase::Init},          // CREATE
    {VqPhase::Init, VqPhase::Ready},           // MODIFY state=RDY (+fields)
    {VqPhase::Ready, VqPhase::Suspended},      // MODIFY state=SUSPEND, QUERY
    {VqPhase::Suspended, VqPhase::Ready},      // MODIFY state=RDY (freeze_to_rdy)
    {VqPhase::Init, VqPhase::Absent},          // DESTROY
    {VqPhase::Ready, VqPhase::Absent},
    {VqPhase::Suspended, VqPhase::Absent},
    {VqPhase::Error, VqPhase::Absent},         // recovery: destroy, then re-create
    {VqPhase::Init, VqPhase::Error},
    {VqPhase::Ready, VqPhase::Error},
    {VqPhase::Suspended, VqPhase::Error},
};

constexpr bool vq_phase_allowed(VqPhase from, VqPhase to) {
    for (const auto& e : kVqPhaseEdges)
        if (e.from == from && e.to == to) return true;
    return false;
}

}  // namespace mlx5async::core
