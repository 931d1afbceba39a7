// The emulated device's objects. Each records the context that created it
// (a context close removes them) and how many others pin it.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "common/prm/counters.hpp"
#include "common/prm/mkey.hpp"
#include "common/prm/virtq.hpp"

namespace mlx5async::emu {

struct PdObj {
    uint32_t ctx = 0;
    uint32_t refs = 0;  // virtqs using it
};

struct PageObj {  // UAR and VAR: one page of the context's doorbell memfd
    uint32_t ctx = 0;
    uint32_t page = 0;
};

struct UmemObj {
    uint32_t ctx = 0;
    uint64_t addr = 0;  // registered host range
    uint64_t size = 0;
    uint32_t access = 0;
    uint32_t refs = 0;  // virtqs using it
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

// Doorbells of one virtq. While SUSPEND (or INIT) kicks are recorded and
// replayed on the transition to RDY (vdpa_sim's pending_kick).
struct KickCounters {
    uint64_t total = 0;      // doorbells rung
    uint64_t pending = 0;    // recorded while not RDY, not yet replayed
    uint64_t replayed = 0;   // pending kicks replayed on entering RDY
    uint64_t delivered = 0;  // kicks the datapath saw (in RDY or replayed)
};

class VirtqObj {
public:
    uint32_t ctx = 0;
    prm::VirtqAttr attr;  // stored context; attr.state mirrors state() on query
    KickCounters kicks;

    prm::VirtqState state() const { return state_; }
    uint8_t error_type() const { return error_type_; }

private:
    // Only transition() (virtq_fsm.cpp) writes these.
    prm::VirtqState state_ = prm::VirtqState::INIT;
    uint8_t error_type_ = 0;
    friend struct VqFsmAccess;
};

}  // namespace mlx5async::emu
