// Internal: a unit of blocking work for the worker pool, and the conversion
// of a raw outcome into a StepResult. Jobs carry their own command, input and
// output buffers, so a job that outlives its batch (timed out) touches only
// memory it owns; `gen` tells the engine whether its batch is still running.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "command.hpp"

namespace mlx5async::devx {

using Clock = std::chrono::steady_clock;

struct Outcome {
    bool ran = false;
    int ret = 0;  // 0 or positive errno of the call
    std::vector<std::byte> out;
    mlx5dv_devx_obj* created = nullptr;
    Clock::time_point issued{}, completed{};
};

struct Job {
    uint32_t gen = 0;    // batch generation
    uint32_t entry = 0;  // entry index within that batch
    bool chain = false;  // run every step in order until one fails (threads strategy)
    bool holds_slot = false;  // a throttle slot was taken for it by the loop
    bool skip_if_stale = false;  // not run when its batch returned before a worker took it
    std::vector<Command> steps;
    std::vector<Outcome> outcomes;  // one per step that ran
};

// Runs one command with rdma-core's blocking call (QUERY too).
void execute_blocking(Command& c, Outcome& o) noexcept;
// The PRM status byte of the output (0 when it has none).
uint8_t outcome_status(const Command& c, const Outcome& o) noexcept;
// Status (when the output has one) OK and the call returned 0.
bool outcome_ok(const Command& c, const Outcome& o) noexcept;
// Done or Failed, with status, syndrome, errno, latency and the decoded
// output; wraps a created object, hands a failed destroy's object back.
StepResult finish_step(Command&& c, Outcome&& o);
// A step that never completed (TimedOut or Cancelled).
StepResult unfinished_step(Command&& c, StepState state);
// Frees what a late (stale) outcome created, so nothing leaks.
void discard_outcome(const Command& c, Outcome& o) noexcept;

}  // namespace mlx5async::devx
