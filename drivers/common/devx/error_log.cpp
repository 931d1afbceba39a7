#include "error_log.hpp"

#include <string>

#include "common/base/log_sink.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"

namespace mlx5async::devx {

void log_step_failure(const StepResult& r) {
    if (r.state != StepState::Failed && r.state != StepState::TimedOut) return;
    LogLevel level = r.state == StepState::Failed ? LogLevel::Error : LogLevel::Warning;
    if (!log_enabled(level)) return;
    log_line(level, "devx: " + prm::describe(r.error()));
}

bool logged_at_step(const Error& e) noexcept {
    return e.opcode != 0 && (e.code == Errc::Firmware || e.code == Errc::System || e.code == Errc::Timeout);
}

std::string describe_once(const Error& e) {
    if (!logged_at_step(e)) return prm::describe(e);
    return std::string(prm::opcode_name(e.opcode)) + (e.queue >= 0 ? " of queue " + std::to_string(e.queue) : "") +
           " failed (the devx line above says how)";
}

}  // namespace mlx5async::devx
