// vdpa-testpmd: what a suspend / resume call and a run of cycles measured
// (cycles.cpp measures them, report.cpp prints them).
#pragma once

#include <vector>

#include "app.hpp"

namespace vdpa_testpmd {

// What one rte_pmd_mlx5async_suspend/resume call over its ports did.
struct OpResult {
    int rc = 0;
    double ms = 0;      // wall clock around the call
    std::vector<rte_pmd_mlx5async_timing> timings;  // per port, the PMD's view
    std::vector<uint64_t> ideal_ns;  // per port, the emulator's model (0: not emulated)
    uint32_t queues = 0, commands = 0, failed = 0;
    double ideal_ms = 0;  // largest per-device ideal: a lower bound for the batch
    bool ok() const { return rc == 0 && failed == 0 && queues > 0; }
};

// The result of `cycle` / --cycles: both ops' samples.
struct CycleRun {
    ResultKey key;
    SampleSet ops[2];
    uint32_t cycles = 0, failed_cycles = 0;
};

}  // namespace vdpa_testpmd
