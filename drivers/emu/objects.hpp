// The emulated device's objects. Each records the context that created it
// (a context close removes them) and how many others pin it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/prm/counters.hpp"
#include "common/prm/event_qp.hpp"
#include "common/prm/mkey.hpp"
#include "common/prm/sq.hpp"
#include "common/prm/virtq.hpp"
#include "host_pin.hpp"

namespace mlx5async::emu {

struct PdObj {
    uint32_t ctx = 0;
    uint32_t refs = 0;  // virtqs using it
};

struct PageObj {  // UAR and VAR: one page of the context's doorbell memfd
    uint32_t ctx = 0;
    uint32_t page = 0;
    uint32_t refs = 0;  // UAR: CQs and QPs naming it in uar_page
};

struct UmemObj {
    uint32_t ctx = 0;
    uint64_t addr = 0;  // registered host range, as the process gave it
    uint64_t size = 0;
    uint32_t access = 0;
    uint32_t refs = 0;  // virtqs using it
    HostPin pin;        // the pages as the device reaches them (host_pin.hpp)

    // Where the device reads and writes byte `off` of the umem.
    uint64_t host(uint64_t off) const { return pin.device_addr() + off; }
};

// Transport domain and TIS (a virtq's TX side names its TIS in tisn_or_qpn).
struct TdObj {
    uint32_t ctx = 0;
    uint32_t refs = 0;  // TISes in it
};

struct TisObj {
    uint32_t ctx = 0;
    uint32_t td = 0;
    uint32_t pd = 0;    // 0: none
    uint32_t refs = 0;  // virtqs using it
};

struct CountersObj {
    uint32_t ctx = 0;
    prm::VirtqCounters values;
    uint32_t refs = 0;
};

// A memory key (CREATE_MKEY). Its value is (id << 8) | key. Direct: MTT
// over [umem_offset, umem_offset + len) of a umem, addressed from start.
// Indirect: KLM entries over [start, start + len), in order.
struct MkeyObj {
    uint32_t ctx = 0;
    bool indirect = false;
    uint8_t key = 0;  // mkey_7_0
    uint32_t pd = 0;
    uint64_t start = 0;
    uint64_t len = 0;
    uint32_t umem_id = 0;  // direct
    uint64_t umem_offset = 0;
    std::vector<prm::KlmEntry> klm;  // indirect
    uint32_t refs = 0;               // virtqs and indirect mkeys using it
};

// The completion EQs of every device: vector v (mlx5dv_devx_query_eqn) is
// EQ kFirstCompEqn + v, the only c_eqn values CREATE_CQ accepts.
inline constexpr uint32_t kCompVectors = 4;
inline constexpr uint32_t kFirstCompEqn = 8;

// A completion queue (CREATE_CQ) over a umem, with its doorbell record in a
// umem: the device writes CQEs, the driver writes [0] consumer index and
// [1] arm word. Host pointers stay valid while the CQ pins its umems.
struct CqObj {
    uint32_t ctx = 0;
    prm::CqAttr attr;
    std::byte* buf = nullptr;  // 64 << log_cq_size bytes of CQEs
    std::byte* dbr = nullptr;  // kCqDbrBytes
    uint32_t refs = 0;         // QPs naming it (cqn_rcv / cqn_snd)
    // Device side (under DeviceState::mu).
    uint32_t produced = 0;       // CQEs written (24-bit counter, as ci)
    bool armed = false;
    bool ever_armed = false;
    uint32_t arm_ci = 0;         // consumer index of the last arm
    uint32_t last_arm_word = 0;  // arm word consumed by the last arm
    uint64_t arms = 0;           // arm doorbells taken
    uint64_t events = 0;         // completion events raised
};

// A queue pair (CREATE_QP): either a firmware QP (rq_type ZERO_LEN, no SQ,
// no CQ/UAR/umem: "managed by FW"), which a virtq names in
// event_qpn_or_msix, or the driver's RC QP whose receive queue it sends to.
struct QpObj {
    uint32_t ctx = 0;
    prm::QpAttr attr;
    prm::QpState state = prm::QpState::RST;
    uint32_t remote_qpn = 0;     // INIT2RTR
    bool firmware = false;       // rq_type ZERO_LEN
    std::byte* dbr = nullptr;    // driver QP: [0] receive counter (be32, low 16 bits)
    uint16_t rq_consumed = 0;    // driver QP: receive WQEs consumed by the device
    uint32_t refs = 0;           // firmware QP: virtqs naming it
};

// A send queue (CREATE_SQ) of the driver's own: a cyclic ring of 64-byte
// basic blocks in a umem that the driver writes WQEs into, a doorbell record
// ([1]: the send counter, in basic blocks) and CQEs into a CQ. A doorbell
// on its UAR page sends what the record says was posted, onto the port's
// wire (datapath/send_queue.hpp). Host pointers stay valid while the SQ
// pins its umems.
struct SqObj {
    uint32_t ctx = 0;
    prm::SqAttr attr;
    prm::SqState state = prm::SqState::RST;
    std::byte* ring = nullptr;  // 64 << log_wq_sz bytes
    std::byte* dbr = nullptr;   // kSqDbrBytes
    // Device side (under DeviceState::mu).
    uint16_t consumed = 0;      // basic blocks taken from the ring (16-bit, as the record)
    uint64_t sent = 0;          // frames put on the wire
    uint64_t completions = 0;   // CQEs written (errors included)
    std::string error;          // why it entered ERR: the malformed WQE, named
};

// Interrupts of one virtq (datapath/interrupts.hpp).
struct IrqCounters {
    uint64_t needed = 0;      // passes that moved the used index with interrupts on
    uint64_t suppressed = 0;  // ... with VRING_AVAIL_F_NO_INTERRUPT set
    uint64_t raised = 0;      // QP mode: CQEs written (one per interrupt delivered)
    uint64_t rnr = 0;         // QP mode: left pending for lack of a receive WQE
    uint64_t dropped = 0;     // MSIX mode: no MSI-X target in the emulator
    bool pending = false;     // owed, not yet delivered (coalesces)
    bool waiting_wqe = false; // pending and counted in rnr
};

// Doorbells of one virtq. While SUSPEND (or INIT) kicks are recorded and
// replayed on the transition to RDY (vdpa_sim's pending_kick), unless the
// profile forgets them (early_kicks=drop: a device the driver must kick
// again once the ring runs).
struct KickCounters {
    uint64_t total = 0;      // doorbells rung
    uint64_t pending = 0;    // recorded while not RDY, not yet replayed
    uint64_t replayed = 0;   // pending kicks replayed on entering RDY
    uint64_t delivered = 0;  // kicks the datapath saw (in RDY or replayed)
    uint64_t dropped = 0;    // not RDY, and the profile forgets them (early_kicks=drop)

    // One doorbell for a virtq in `state` (`replay`: the profile keeps kicks
    // that come before RDY).
    void rung(prm::VirtqState state, bool replay) {
        ++total;
        if (state == prm::VirtqState::RDY) ++delivered;
        else if (state == prm::VirtqState::ERR) return;
        else if (replay) ++pending;
        else ++dropped;
    }
};

// What the loopback saw of the frames a TX virtq sent (the emulator's own
// counters, not the PRM's: telemetry and the downtime ledger read them).
struct FrameCounters {
    uint64_t arp = 0;        // ethertype 0x0806, behind at most one VLAN tag
    uint64_t announces = 0;  // of those, gratuitous (sender address = target address)
    uint64_t oversize = 0;   // longer than the port's MTU allows: dropped as the port drops them
};

class VirtqObj {
public:
    uint32_t ctx = 0;
    prm::VirtqAttr attr;  // stored context; attr.state mirrors state() on query
    KickCounters kicks;
    IrqCounters irq;
    FrameCounters frames;

    prm::VirtqState state() const { return state_; }
    uint8_t error_type() const { return error_type_; }

private:
    // Only transition() (virtq_fsm.cpp) writes these.
    prm::VirtqState state_ = prm::VirtqState::INIT;
    uint8_t error_type_ = 0;
    friend struct VqFsmAccess;
};

}  // namespace mlx5async::emu
