// Reading the guest's configuration out of rte_vhost into core::GuestConfig.
#pragma once

#include "common/base/result.hpp"
#include "core/guest.hpp"

namespace mlx5async::pmd {

// Features, memory regions and every vring (addresses translated to guest
// physical through the memory table). `enabled` flags come from the core.
Result<core::GuestConfig> read_guest_config(int vid);

}  // namespace mlx5async::pmd
