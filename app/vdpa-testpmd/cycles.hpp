// vdpa-testpmd: suspend / resume calls and cycles over them.
#pragma once

#include <vector>

#include "app.hpp"
#include "op_result.hpp"

namespace vdpa_testpmd {

// One rte_pmd_mlx5async_suspend/resume call over ps.
OpResult run_op(App& app, const std::vector<Port*>& ps, rte_pmd_mlx5async_op op);

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
