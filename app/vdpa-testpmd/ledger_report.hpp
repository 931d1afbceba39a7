// vdpa-testpmd: the PMD's downtime ledger (rte_pmd_mlx5async_get_ledger) as
// a table (`show ledger`), in the --json results and in the trace.
#pragma once

#include <vector>

#include "app.hpp"
#include "json.hpp"

namespace vdpa_testpmd {

void print_ledger(Port& p);
// "ledger": one object per device (results.schema.json).
Json json_ledger(const std::vector<Port*>& ports);

}  // namespace vdpa_testpmd
