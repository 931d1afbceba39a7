// The PMD's log type pmd.vdpa.mlx5async; the DPDK-free layers reach it
// through the LogSink installed at load time (log.cpp).
#pragma once

#include <rte_log.h>

namespace mlx5async::pmd {
extern int g_logtype;

// DPDK's log lines carry no level: warnings and errors say what they are,
// so that an operator (or a test) can find them ("mlx5async: error: ...").
constexpr const char* level_tag(uint32_t rte_level) {
    return rte_level <= RTE_LOG_ERR ? "error: " : rte_level == RTE_LOG_WARNING ? "warning: " : "";
}
}  // namespace mlx5async::pmd

#define MLX5A_LOG(level, fmt, ...)                                                         \
    rte_log(RTE_LOG_##level, ::mlx5async::pmd::g_logtype, "mlx5async: %s" fmt "\n",        \
            ::mlx5async::pmd::level_tag(RTE_LOG_##level), ##__VA_ARGS__)
