#include "virtq_fsm.hpp"

#include "common/prm/status.hpp"
#include "store.hpp"
#include "syndrome.hpp"

namespace mlx5async::emu {

struct VqFsmAccess {
    static void set(VirtqObj& vq, VirtqState s, uint8_t error_type) {
        vq.state_ = s;
        vq.error_type_ = error_type;
        vq.attr.state = s;
        vq.attr.error_type = error_type;
    }
};

namespace {

std::string edge_name(VirtqState from, VirtqState to) {
    return std::string(prm::virtq_state_name(from)) + "->" + prm::virtq_state_name(to);
}

const VqEdge* find_edge(VirtqState from, VirtqState to) {
    for (const VqEdge& e : kVqEdges)
        if (e.from == from && e.to == to) return &e;
    return nullptr;
}

// Side effects of entering a state, before it is stored.
void on_enter(VirtqObj& vq, VirtqState to) {
    if (to == VirtqState::RDY && vq.kicks.pending) {
        // vdpa_sim: a kick that arrived while suspended is replayed on resume.
        vq.kicks.replayed += vq.kicks.pending;
        vq.kicks.delivered += vq.kicks.pending;
        vq.kicks.pending = 0;
    }
}

}  // namespace

Result<void> check_transition(VirtqState from, const VqRequest& rq, bool freeze_cap) {
    using prm::Status;
    if (from == VirtqState::ERR)
        return fw_fail(Status::BAD_RES_STATE_ERR, syndrome::kStateIsErr,
                       "virtq in ERR: only DESTROY allowed (" + edge_name(from, rq.to) + ")");
    if (rq.cause == VqCause::DeviceError) {
        if (rq.to == VirtqState::ERR) return {};
        return fw_fail(Status::BAD_RES_STATE_ERR, syndrome::kIllegalTransition,
                       "device error must go to ERR");
    }
    const VqEdge* e = find_edge(from, rq.to);
    if (!e)
        return fw_fail(Status::BAD_RES_STATE_ERR, syndrome::kIllegalTransition,
                       "illegal virtq transition " + edge_name(from, rq.to));
    if (e->needs_freeze_to_rdy && !freeze_cap)
        return fw_fail(Status::BAD_RES_STATE_ERR, syndrome::kFreezeToRdyUnsupported,
                       edge_name(from, rq.to) + " needs freeze_to_rdy_supported");
    return {};
}

Result<void> transition(VirtqObj& vq, const VqRequest& rq, bool freeze_cap) {
    MLX5A_CHECK(check_transition(vq.state(), rq, freeze_cap));
    on_enter(vq, rq.to);
    VqFsmAccess::set(vq, rq.to, rq.cause == VqCause::DeviceError ? rq.error_type : 0);
    return {};
}

}  // namespace mlx5async::emu
