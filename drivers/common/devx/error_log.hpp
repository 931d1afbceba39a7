// The one place a failed engine command is logged: opcode name, object id,
// queue index, status name and syndrome (prm::describe), once per command,
// where the queue index is known (STYLE 2.2).
#pragma once

#include <string>

#include "command.hpp"

namespace mlx5async::devx {

// Logs `r` when it is Failed (Error level) or TimedOut (Warning); no-op otherwise.
void log_step_failure(const StepResult& r);

// Whether `e` is a command's failure log_step_failure has logged (a failed
// or timed-out step's error, wrapped or not: it names the opcode), so the
// layers above report the operation without repeating the command's text.
bool logged_at_step(const Error& e) noexcept;
// prm::describe(e), or, for an error logged_at_step, a pointer to that line.
std::string describe_once(const Error& e);

}  // namespace mlx5async::devx
