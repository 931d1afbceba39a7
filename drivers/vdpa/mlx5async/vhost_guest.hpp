// The guest as rte_vhost sees it, both ways: its configuration read into
// core::GuestConfig, and ring indexes handed back after a suspend.
#pragma once

#include <cstdint>
#include <span>

#include "common/base/result.hpp"
#include "vdpa/mlx5async/core/guest.hpp"

namespace mlx5async::pmd {

// Features, memory regions and every vring (addresses translated to guest
// physical through the memory table). `enabled` flags come from the core.
Result<core::GuestConfig> read_guest_config(int vid);
// One ring as vhost holds it now (enabled after dev_conf).
Result<core::VringConfig> read_vring_config(int vid, uint16_t ring);

// Gives each ring's indexes to vhost (rte_vhost_set_vring_base: what the
// frontend's GET_VRING_BASE returns) and, when `log_used` (LOG_ALL on), logs
// each ring's whole used ring dirty: the device wrote it, and the frontend
// must send those pages again (vhost: the order of DPDK's ifc stop). The one
// implementation of the hand-back, for dev_close and for disabled rings. A
// log whose file the frontend cut short is not written (SIGBUS here):
// `log_unbacked` says so, for the caller to report.
struct HandBack {
    uint32_t rings = 0;   // indexes handed back
    uint32_t logged = 0;  // used rings logged dirty
    bool log_unbacked = false;  // LOG_ALL on, but the log's file was cut short: nothing logged
    uint64_t bases_ns = 0, log_ns = 0;  // time in each step
};
HandBack hand_back_rings(int vid, std::span<const core::RingIndexes> rings, bool log_used);

}  // namespace mlx5async::pmd
