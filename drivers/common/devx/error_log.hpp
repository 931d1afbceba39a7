// The one place a failed engine command is logged: opcode name, object id,
// queue index, status name and syndrome (prm::describe), once per command,
// where the queue index is known (STYLE 2.2).
#pragma once

#include "command.hpp"

namespace mlx5async::devx {

// Logs `r` when it is Failed (Error level) or TimedOut (Warning); no-op otherwise.
void log_step_failure(const StepResult& r);

}  // namespace mlx5async::devx
