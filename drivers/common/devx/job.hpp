// Internal: a unit of blocking work for the worker pool, and the conversion
// of a raw outcome into a StepResult. Jobs carry their own command, input and
// output buffers, so a job that outlives its batch (timed out) touches only
// memory it owns; `gen` tells the engine whether its batch is still running.
#pragma once

#include <atomic>
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
    mlx5dv_devx_umem* umem = nullptr;  // RegUmem
    Clock::time_point issued{}, completed{};
};

struct Job {
    uint32_t gen = 0;    // batch generation
    uint32_t entry = 0;  // entry index within that batch
    bool chain = false;  // run every step in order until one fails (threads strategy)
    bool holds_slot = false;  // the loop admitted steps[0] (Impl::admit) for it
    bool answered_not_taken = false;  // counted in Impl::answered_not_taken
    bool skip_if_stale = false;  // not run when its batch returned before a worker took it
    // Who decides the first step's fate, once: the worker that is about to
    // issue it, or the loop of a batch whose deadline passed while the job
    // still waited (for a worker or a command slot): an abandoned step is
    // never issued, so it is known not to have changed the device.
    static constexpr uint8_t kWaiting = 0, kIssued = 1, kAbandoned = 2;
    std::atomic<uint8_t> claim{kWaiting};
    // Steps the worker has begun (each counted before it is issued): a
    // deadline that closes the chain meanwhile reports the step in flight,
    // and those before it, as timed out, not the job's first alone.
    std::atomic<unsigned> steps_begun{0};
    // Async strategy: after a step succeeds, the worker goes on with the next
    // one itself, keeping its admission: a blocking step in place, a QUERY
    // through obj_query_async (then the job ends). The epoll loop is not
    // woken in between: one thread wake-up fewer per chain.
    bool continue_async = false;
    bool more_after = false;  // the entry has steps after `steps` (left in the batch)
    // Its first step may give way for a token (Impl::give_way_for_token):
    // not when that step gave way once already (no job goes round forever).
    bool first_may_give_way = false;
    bool gave_way = false;  // it stopped before a step that found no token
    // Entries of the batch wait for this one's end: its hand-back wakes the
    // loop, which releases them (Dependencies).
    bool others_wait = false;
    size_t first_step = 0;    // the entry's index of steps[0]
    // The continuation QUERY (continue_async): not reached, issued (its
    // completion comes to the loop), or refused by obj_query_async with
    // query_errno (EBUSY: retried by the loop).
    enum class Continuation : uint8_t { NotReached, Issued, Refused };
    Continuation query = Continuation::NotReached;
    int query_errno = 0;
    Clock::time_point query_issued{};
    std::vector<Command> steps;
    std::vector<Outcome> outcomes;
    // What the entry's steps before first_step made (Command::bind).
    std::vector<Made> made_before;
    // Its first step is a general-object command (admission takes a token).
    bool first_throttled() const noexcept { return !steps.empty() && steps[0].throttled(); }  // one per step that ran, in order
    // Async strategy: outcomes[i] already turned into results on the worker
    // (decode off the loop's critical path), all but a refused (EBUSY) QUERY
    // the loop requeues; their steps are consumed.
    std::vector<StepResult> results;
};

// A blocking QUERY refused with EBUSY/EAGAIN (only fault injection does that
// to a blocking call): requeued like an async refusal, not a result.
bool outcome_busy_query(const Command& c, const Outcome& o) noexcept;

// Runs one command with rdma-core's blocking call (QUERY too).
void execute_blocking(Command& c, Outcome& o) noexcept;
// The PRM status byte of the output (0 when it has none).
uint8_t outcome_status(const Command& c, const Outcome& o) noexcept;
// Status (when the output has one) OK and the call returned 0.
bool outcome_ok(const Command& c, const Outcome& o) noexcept;
// Done or Failed, with status, syndrome, errno, latency and the decoded
// output; wraps a created object, hands a failed destroy's object back.
StepResult finish_step(Command&& c, Outcome&& o);
// What a step that ran made (StepResult::made), before its result.
Made outcome_made(const Command& c, const Outcome& o) noexcept;
// A step that never completed (TimedOut or Cancelled).
StepResult unfinished_step(Command&& c, StepState state);
// Frees what a late (stale) outcome created, so nothing leaks.
void discard_outcome(const Command& c, Outcome& o) noexcept;

}  // namespace mlx5async::devx
