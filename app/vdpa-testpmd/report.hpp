// vdpa-testpmd: testpmd-style tables and the JSON results file.
#pragma once

#include <string>
#include <vector>

#include "app.hpp"
#include "op_result.hpp"

namespace vdpa_testpmd {

void print_list(App& app);
void print_device(App& app, Port& p);
void print_stats(App& app, Port& p, int queue);  // queue < 0: all
void print_op(const std::vector<Port*>& ps, rte_pmd_mlx5async_op op, const OpResult& r);
void print_cycle_line(uint32_t i, uint32_t n, const OpResult& s, const OpResult& r);
void print_cycle_summary(const std::vector<Port*>& ps, const CycleRun& run);
struct StrategyColumn {
    std::string strategy;
    SummaryStats ops[2];
};
void print_strategy_table(const std::vector<StrategyColumn>& cols);
// The --json file: one object for the whole run (schema:
// app/vdpa-testpmd/results.schema.json).
int write_json(App& app, const std::string& file);

}  // namespace vdpa_testpmd
