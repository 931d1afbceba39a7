#pragma once

#include "common/base/result.hpp"
#include "vdpa/mlx5async/core/config.hpp"

namespace mlx5async::pmd {

// "emu=cx7,queues=16" -> a validated DeviceConfig, or an Error naming the key.
Result<core::DeviceConfig> parse_devargs(const char* args);

}  // namespace mlx5async::pmd
