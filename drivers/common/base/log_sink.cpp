#include "log_sink.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

namespace mlx5async {
namespace {

std::mutex g_mu;  // protects sink()
std::atomic<int> g_level{static_cast<int>(LogLevel::Warning)};

// Built at first use: a sink installed from another file's load-time
// constructor (the PMD's RTE_INIT) must not be reset by this file's own
// static initialisation, whichever runs first.
LogSink& sink() {
    static LogSink s;
    return s;
}

const char* level_tag(LogLevel l) {
    switch (l) {
    case LogLevel::Error: return "ERR";
    case LogLevel::Warning: return "WARN";
    case LogLevel::Info: return "INFO";
    case LogLevel::Debug: return "DEBUG";
    }
    return "?";
}

}  // namespace

void set_log_sink(LogSink sink) {
    std::lock_guard lk(g_mu);
    mlx5async::sink() = std::move(sink);
}

void set_log_level(LogLevel max_level) { g_level = static_cast<int>(max_level); }

bool log_enabled(LogLevel level) noexcept { return static_cast<int>(level) <= g_level.load(); }

void log_line(LogLevel level, std::string_view line) {
    if (!log_enabled(level)) return;
    std::lock_guard lk(g_mu);
    if (LogSink& s = sink()) {
        s(level, line);
        return;
    }
    std::fprintf(stderr, "mlx5async %s: %.*s\n", level_tag(level), static_cast<int>(line.size()),
                 line.data());
}

void logf(LogLevel level, const char* fmt, ...) {
    if (!log_enabled(level)) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    log_line(level, buf);
}

}  // namespace mlx5async
