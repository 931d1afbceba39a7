// Logging for the DPDK-free layers: they call a sink the embedder provides
// (the PMD routes it to rte_log, tests capture it, tools print to stderr).
#pragma once

#include <cstdarg>
#include <functional>
#include <string_view>

namespace mlx5async {

enum class LogLevel : uint8_t { Error = 0, Warning, Info, Debug };

using LogSink = std::function<void(LogLevel, std::string_view)>;

// Process-wide default sink; stderr at Warning and above unless replaced.
void set_log_sink(LogSink sink);
void set_log_level(LogLevel max_level);
bool log_enabled(LogLevel level) noexcept;
void log_line(LogLevel level, std::string_view line);
void logf(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace mlx5async
