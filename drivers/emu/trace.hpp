// Observability: a bounded ring of per-command records and counters.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

namespace mlx5async::emu {

struct TraceEntry {
    uint64_t seq = 0;
    uint16_t opcode = 0;
    uint16_t obj_type = 0;
    uint32_t obj_id = 0;
    bool async = false;
    int64_t submit_ns = 0;
    int64_t start_ns = 0;  // got its slot
    int64_t end_ns = 0;
    uint8_t status = 0;
    uint32_t syndrome = 0;
    int err = 0;  // errno the call returned besides the PRM status (EBUSY, ENXIO ...)
};

struct CmdCounters {
    std::map<uint16_t, uint64_t> by_opcode;  // submitted commands, by opcode
    uint64_t completed = 0;
    uint64_t busy_rejections = 0;  // async queries refused with EBUSY
    uint32_t peak_inflight = 0;    // throttled (general-object) commands
    uint32_t peak_slots = 0;       // command slots occupied
};

class Trace {
public:
    explicit Trace(size_t capacity = 4096) : cap_(capacity) {}
    void record(const TraceEntry& e);
    std::vector<TraceEntry> snapshot() const;
    void clear();

private:
    mutable std::mutex mu_;  // guards ring_ (records come from every command thread)
    size_t cap_;
    std::deque<TraceEntry> ring_;
};

}  // namespace mlx5async::emu
