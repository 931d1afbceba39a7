#include "error_log.hpp"

#include <string>

#include "common/base/log_sink.hpp"
#include "common/prm/status.hpp"

namespace mlx5async::devx {

void log_step_failure(const StepResult& r) {
    if (r.state != StepState::Failed && r.state != StepState::TimedOut) return;
    LogLevel level = r.state == StepState::Failed ? LogLevel::Error : LogLevel::Warning;
    if (!log_enabled(level)) return;
    log_line(level, "devx: " + prm::describe(r.error()));
}

}  // namespace mlx5async::devx
