#include "interrupts.hpp"

#include <endian.h>

#include <atomic>

#include "../state.hpp"
#include "cq.hpp"
#include "packed_ring.hpp"

namespace mlx5async::emu::dp {
namespace {

constexpr uint16_t kAvailNoInterrupt = 1;  // virtio 1.x VRING_AVAIL_F_NO_INTERRUPT
constexpr uint32_t kCiMask = 0xffffff;     // CQ indexes are 24-bit

// Doorbell records are big-endian 32-bit words the driver writes concurrently.
uint32_t load_be32(const std::byte* p) {
    auto* w = reinterpret_cast<uint32_t*>(const_cast<std::byte*>(p));
    return be32toh(std::atomic_ref<uint32_t>(*w).load(std::memory_order_acquire));
}

enum class Sent : uint8_t { Ok, NoWqe, NotConnected, CqFull };

// Armed, and a CQE past the arm's consumer index: one event, then disarmed.
void fire_if_armed(DeviceState& st, uint32_t cqn, CqObj& cq, IrqStats& s) {
    if (!cq.armed) return;
    uint32_t ahead = (cq.produced - cq.arm_ci) & kCiMask;
    if (ahead == 0 || ahead > kCiMask / 2) return;  // nothing new (or ci ahead: nothing yet)
    cq.armed = false;
    ++cq.events;
    ++s.events;
    st.events.raise(kCqEventObjType, cqn, prm::kEventCompletion, completion_eqe(cqn));
}

void arm(DeviceState& st, uint32_t cqn, CqObj& cq, uint32_t word, IrqStats& s) {
    cq.armed = true;
    cq.ever_armed = true;
    cq.arm_ci = prm::decode_cq_arm_word(word).ci;
    cq.last_arm_word = word;
    ++cq.arms;
    ++s.arms;
    fire_if_armed(st, cqn, cq, s);  // armed with ci behind: at once
}

// The firmware QP `fw_qpn` sends one zero-length message to its peer.
Sent send(DeviceState& st, uint32_t fw_qpn, IrqStats& s) {
    auto fw = st.qps.find(fw_qpn);
    if (!fw || !fw->firmware || fw->state != prm::QpState::RTS) return Sent::NotConnected;
    auto drv = st.qps.find(fw->remote_qpn);
    if (!drv || drv->firmware || drv->remote_qpn != fw_qpn ||
        (drv->state != prm::QpState::RTR && drv->state != prm::QpState::RTS))
        return Sent::NotConnected;
    auto cq = st.cqs.find(drv->attr.cqn_rcv);
    if (!cq) return Sent::NotConnected;
    uint16_t posted = uint16_t(load_be32(drv->dbr));  // receive counter: low 16 bits
    if (posted == drv->rq_consumed) return Sent::NoWqe;
    if (!cq_has_room(*cq)) return Sent::CqFull;
    prm::Cqe c;
    c.qpn = fw->remote_qpn;
    c.wqe_counter = drv->rq_consumed;
    c.opcode = uint8_t(prm::CqeOpcode::RESP_SEND);
    post_cqe(*cq, c);
    ++drv->rq_consumed;
    fire_if_armed(st, drv->attr.cqn_rcv, *cq, s);
    return Sent::Ok;
}

}  // namespace

IrqStats& IrqStats::operator+=(const IrqStats& o) {
    needed += o.needed;
    suppressed += o.suppressed;
    raised += o.raised;
    rnr += o.rnr;
    dropped += o.dropped;
    events += o.events;
    arms += o.arms;
    uar_doorbells += o.uar_doorbells;
    return *this;
}

void used_moved(VirtqObj& vq, const Translator& tr, IrqStats& s) {
    // virtio §2.7.7.2: read flags after the used idx store is visible.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    GuestMem mem(tr, vq.attr.virtio_q_mkey, nullptr);
    // Split: avail->flags (le16 at 0). Packed: the driver event suppression
    // area's flags (le16 at 2); DESC (EVENT_IDX, not offered) counts as enabled.
    const bool packed = vq.attr.virtio_q_type == prm::VirtqType::PACKED;
    auto flags = mem.load_idx(vq.attr.available_addr + (packed ? 2 : 0));
    if (flags && (packed ? *flags == kEventFlagsDisable : (*flags & kAvailNoInterrupt) != 0)) {
        ++vq.irq.suppressed;
        ++s.suppressed;
        return;
    }
    ++vq.irq.needed;
    ++s.needed;
    if (vq.attr.event_mode != prm::EventMode::NO_MSIX) vq.irq.pending = true;
}

bool deliver(DeviceState& st, VirtqObj& vq, IrqStats& s) {
    if (!vq.irq.pending || vq.state() == prm::VirtqState::ERR) {
        vq.irq.pending = false;
        return true;
    }
    if (vq.state() != prm::VirtqState::RDY) return false;  // held over SUSPEND
    if (vq.attr.event_mode == prm::EventMode::MSIX) {
        ++vq.irq.dropped;
        ++s.dropped;
        vq.irq.pending = false;
        return true;
    }
    if (vq.attr.event_mode != prm::EventMode::QP) {
        vq.irq.pending = false;
        return true;
    }
    Sent r = send(st, vq.attr.event_qpn_or_msix, s);
    if (r == Sent::Ok) {
        ++vq.irq.raised;
        ++s.raised;
        vq.irq.pending = false;
        vq.irq.waiting_wqe = false;
        return true;
    }
    if (r == Sent::NoWqe && !vq.irq.waiting_wqe) {
        vq.irq.waiting_wqe = true;
        ++vq.irq.rnr;
        ++s.rnr;
    }
    return false;
}

void uar_doorbell(DeviceState& st, uint32_t uar_id, uint64_t reg, IrqStats& s) {
    ++s.uar_doorbells;
    uint64_t v = be64toh(reg);
    uint32_t named = uint32_t(v) & kCiMask;
    uint32_t word = uint32_t(v >> 32);
    st.cqs.for_each([&](uint32_t cqn, CqObj& cq) {
        if (cq.attr.uar_page != uar_id) return;
        if (cqn == named) return arm(st, cqn, cq, word, s);
        // Its own write may have been overwritten: the record tells.
        uint32_t w = load_be32(cq.dbr + 4);
        if (!cq.ever_armed || w != cq.last_arm_word) arm(st, cqn, cq, w, s);
    });
}

}  // namespace mlx5async::emu::dp
