#include "log.hpp"

#include <string>

#include "common/base/log_sink.hpp"

namespace mlx5async::pmd {

int g_logtype = -1;

namespace {

uint32_t to_rte_level(LogLevel l) {
    switch (l) {
    case LogLevel::Error: return RTE_LOG_ERR;
    case LogLevel::Warning: return RTE_LOG_WARNING;
    case LogLevel::Info: return RTE_LOG_INFO;
    case LogLevel::Debug: return RTE_LOG_DEBUG;
    }
    return RTE_LOG_INFO;
}

}  // namespace

// Registered at load (a -d plugin included): the log type first, then the
// sink that routes the DPDK-free layers' lines into it.
RTE_INIT(mlx5async_log_init) {
    g_logtype = rte_log_register_type_and_pick_level("pmd.vdpa.mlx5async", RTE_LOG_NOTICE);
    set_log_level(LogLevel::Debug);  // rte_log filters by its own level
    set_log_sink([](LogLevel l, std::string_view line) {
        uint32_t level = to_rte_level(l);
        rte_log(level, g_logtype, "mlx5async: %s%.*s\n", level_tag(level), int(line.size()), line.data());
    });
}

}  // namespace mlx5async::pmd
