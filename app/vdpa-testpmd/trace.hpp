// vdpa-testpmd: firmware command and driver phase trace, written as Chrome
// trace events (loads in Perfetto and chrome://tracing).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <rte_pmd_mlx5async.h>

#include "json.hpp"

namespace vdpa_testpmd {

struct Port;

class Trace {
public:
    // Tracks: one process (pid) per device, tid 0 for the driver phases,
    // tid 1 + q for virtq q, kOtherTid for commands without a virtq,
    // kLedgerTid and kLedgerTid + 1 for the downtime ledger.
    static constexpr int kOtherTid = 100000;
    static constexpr int kLedgerTid = 100001;  // the ledger's stop; + 1 its start

    bool active() const { return active_; }
    // Enables command tracing on every device and drops older events.
    void start(const std::vector<Port*>& ports);
    // Reads what is left and disables tracing.
    void stop(const std::vector<Port*>& ports);
    // After one suspend or resume call over ps: its command spans and the
    // phase breakdown from each device's timing.
    void record_op(const std::vector<Port*>& ps, rte_pmd_mlx5async_op op, uint64_t call_begin,
                   uint64_t call_end, const std::vector<rte_pmd_mlx5async_timing>& timings,
                   const std::vector<uint64_t>& ideal_ns);
    // Writes every event since start; prints what was written.
    int save(const std::string& file, const std::vector<Port*>& ports);

private:
    struct Event {
        std::string name, cat;
        Json args;  // an object
        unsigned pid;
        int tid;
        uint64_t ts_ns, dur_ns;
    };
    void enable(Port& p);
    void drain(Port& p);
    void add_track_names(Json& events, const std::vector<Port*>& ports) const;
    void add_span(const Port& p, const rte_pmd_mlx5async_cmd_span& s);
    void add_ledger(const Port& p);
    bool active_ = false;
    uint64_t t0_ns_ = 0;
    std::vector<Event> events_;
    std::vector<std::vector<int>> tids_;  // per pid: tids used, for names
    uint64_t commands_issued_ = 0;        // sum of timing.commands while active
    uint64_t op_spans_ = 0;               // spans of suspend / resume batches
    uint64_t other_spans_ = 0;            // spans of other commands
    uint64_t app_spans_ = 0;              // spans inside the app's calls
};

}  // namespace vdpa_testpmd
