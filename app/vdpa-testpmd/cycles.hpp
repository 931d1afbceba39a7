// vdpa-testpmd: suspend / resume calls and cycles over them.
#pragma once

#include <vector>

#include "app.hpp"

namespace vdpa_testpmd {

// One rte_pmd_mlx5async_suspend/resume call over ps.
struct OpResult {
    int rc = 0;
    double ms = 0;      // wall clock around the call
    std::vector<rte_pmd_mlx5async_timing> timings;  // per port, the PMD's view
    std::vector<uint64_t> ideal_ns;  // per port, the emulator's model (0: not emulated)
    uint32_t queues = 0, commands = 0, failed = 0;
    double ideal_ms = 0;  // largest per-device ideal: a lower bound for the batch
    bool ok() const { return rc == 0 && failed == 0 && queues > 0; }
};

OpResult run_op(App& app, const std::vector<Port*>& ps, rte_pmd_mlx5async_op op);

// The result of `cycle` / --cycles: both ops' samples.
struct CycleRun {
    ResultKey key;
    SampleSet ops[2];
    uint32_t cycles = 0, failed_cycles = 0;
};

// count suspend+resume cycles over ps (one batch over every listed device
// per call). Samples also go into app.results for --json. Stops early on
// SIGINT / SIGTERM.
CycleRun run_cycles(App& app, const std::vector<Port*>& ps, uint32_t count,
                    uint32_t interval_ms);

// --strategies: count cycles per strategy, then the comparison table.
// Returns false when a strategy could not be set or a cycle failed.
bool run_strategies(App& app, const std::vector<Port*>& ps, uint32_t count,
                    uint32_t interval_ms);

}  // namespace vdpa_testpmd
