// vdpa-testpmd: the PMD's command latency histograms and firmware errors
// (rte_pmd_mlx5async_get_cmd_latency, _get_fw_errors) as a table (`show
// latency`, after cycles) and in the --json results.
#pragma once

#include <vector>

#include "app.hpp"
#include "json.hpp"

namespace vdpa_testpmd {

void print_latency(Port& p);
// "latency": one object per device (results.schema.json).
Json json_latency(const std::vector<Port*>& ports);

}  // namespace vdpa_testpmd
