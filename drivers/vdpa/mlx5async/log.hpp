// The PMD's log type pmd.vdpa.mlx5async; the DPDK-free layers reach it
// through the LogSink installed at load time (log.cpp).
#pragma once

#include <rte_log.h>

namespace mlx5async::pmd {
extern int g_logtype;
}

#define MLX5A_LOG(level, fmt, ...)                                              \
    rte_log(RTE_LOG_##level, ::mlx5async::pmd::g_logtype, "mlx5async: " fmt "\n", \
            ##__VA_ARGS__)
