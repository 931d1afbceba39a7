#include "error_log.hpp"

#include <string>

#include "common/base/log_sink.hpp"
#include "common/prm/status.hpp"

namespace mlx5async::devx {

void log_step_failure(const StepResult& r) {
    if (r.state != StepState::Failed && r.state != StepState::TimedOut) return;
    LogLevel level = r.state == StepState::Failed ? LogLevel::Error : LogLevel::Warning;
    if (!log_enabled(level)) return;
    std::string line = "devx: " + prm::describe(r.error());
    if (r.state == StepState::TimedOut) line += " (timed out)";
    log_line(level, line);
}

}  // namespace mlx5async::devx
