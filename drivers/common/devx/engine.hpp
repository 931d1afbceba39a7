// The DevX command engine: runs a Batch of typed commands against one device
// with at most `max_inflight` general-object commands and `cmd_slots`
// commands of any kind outstanding, and returns one result per step.
//
// What the PMD calls:
//
//   auto eng = Engine::create(*ctx.api(), ctx.get(), {.max_inflight = 16});
//   Batch b;
//   for (q ...) b.add_suspend(vq[q], q);         // MODIFY->SUSPEND, then QUERY
//   BatchResult r = (*eng)->run(std::move(b), Clock::now() + 100ms);
//   r.entries[q].steps[1].virtq->hw_available_index ...
//   (*eng)->shutdown();                          // or let the destructor do it
//
// Strategies (chosen at create, e.g. from a devarg):
// - Async (default): one epoll loop, on the calling thread, over the cmd_comp
//   fd (QUERY through mlx5dv_devx_obj_query_async), a work eventfd (blocking
//   commands finished by the named worker pool) and a timerfd (the deadline).
//   Step k+1 of an entry is issued as soon as step k completes (by the
//   worker that ran step k, when it was blocking: no loop round trip). An
//   async QUERY refused with EBUSY/EAGAIN is requeued after the next
//   completion (or run on a worker when nothing of ours is in flight).
// - Sequential: one blocking command at a time, QUERY blocking too (DPDK 22.11,
//   Linux before 6.12).
// - Threads: DPDK's max_conf_threads model: `workers` threads each running a
//   whole entry with blocking calls; the caller notices completion by polling
//   every 2 ms.
//
// Deadline: steps not completed in time are TimedOut (the rest of their chain
// Cancelled) and run() returns. A step that still waited for a command slot
// (or a worker) is never issued afterwards (StepResult::never_issued). Late completions carry an older batch
// generation (in the async wr_id / the job) and are discarded when they
// arrive, releasing their throttle slot; a late CREATE's object is destroyed.
// Every Failed or TimedOut step is logged once (log_step_failure).
//
// Thread-safety: run() calls are serialised (one batch at a time per engine);
// shutdown() may be called from any thread and makes a running batch return
// with its unfinished steps Cancelled. The engine must be destroyed before the
// Context it was created on.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <iterator>
#include <string_view>

#include "command.hpp"
#include "common/base/result.hpp"
#include "devx_api.hpp"
#include "throttle.hpp"

namespace mlx5async::devx {

enum class Strategy : uint8_t { Async, Sequential, Threads };
// The strategies' names, index = Strategy: the one list devargs, the public
// API and every help text take them from.
inline constexpr std::string_view kStrategyNames[] = {"async", "sequential", "threads"};
const char* strategy_name(Strategy s) noexcept;
std::optional<Strategy> parse_strategy(std::string_view s) noexcept;
// "async|sequential|threads" (with `sep`).
std::string strategy_choices(std::string_view sep = "|");
// The same as a literal, for strings that must be one (the PMD's
// RTE_PMD_REGISTER_PARAM_STRING); checked against kStrategyNames.
#define MLX5A_STRATEGY_CHOICES "async|sequential|threads"
namespace detail {
constexpr bool is_strategy_choices(std::string_view s) {
    for (size_t i = 0; i < std::size(kStrategyNames); ++i) {
        if (i) {
            if (!s.starts_with('|')) return false;
            s.remove_prefix(1);
        }
        if (!s.starts_with(kStrategyNames[i])) return false;
        s.remove_prefix(kStrategyNames[i].size());
    }
    return s.empty();
}
static_assert(is_strategy_choices(MLX5A_STRATEGY_CHOICES), "MLX5A_STRATEGY_CHOICES drifted from kStrategyNames");
}  // namespace detail

// What a tracer sees of the engine, as it happens: called on the thread
// where it happens (the caller's, a worker's), so it must be thread-safe and
// must not block.
struct CommandObserver {
    virtual ~CommandObserver() = default;
    virtual void batch_submitted(uint8_t label, size_t entries, size_t steps) noexcept = 0;
    virtual void batch_returned(uint8_t label, const BatchResult& r) noexcept = 0;
    // Just before the command reaches the device.
    virtual void command_issued(const Command& c) noexcept = 0;
    // Its answer: PRM status and syndrome (0 for commands whose output has
    // none), the call's errno, the time since it was issued.
    virtual void command_completed(const Command& c, uint8_t status, uint32_t syndrome, int err,
                                   std::chrono::nanoseconds latency) noexcept = 0;
};

struct EngineOptions {
    Strategy strategy = Strategy::Async;
    unsigned max_inflight = 16;  // mlx5_core: ceil(max_reg_cmds / 2) general-object commands
    // Command slots (mlx5_core max_reg_cmds): every command holds one, so
    // the commands outside the throttle (CREATE_MKEY, umem registration, QP
    // and CQ commands) have this many in flight. 0 = 2 x max_inflight.
    unsigned cmd_slots = 0;
    unsigned workers = 0;        // blocking-command threads; 0 = cmd_slots
    // The workers run on the CPUs of the thread that calls run(): each run()
    // compares the caller's affinity with the workers' and moves them when it
    // differs. Batches may come from threads on other CPUs than the
    // creator's (in a DPDK application: vhost-user's control thread, or an
    // lcore calling the PMD's API); a batch hands work between the caller and
    // the workers dozens of times, and each hand-off across CPUs is a
    // cross-CPU wake-up (doc/engine.md, "Where the threads run").
    // false: the workers keep the creator's CPUs.
    bool workers_follow_caller = true;
    // The heuristics doc/engine.md ("Heuristics") measures; each false turns
    // one off (./run bench, out/bench/heuristics.json).
    // Fast commands (average blocking latency under fast_command_ns) wake one
    // worker per batch and grow the pool one at a time; false: always as
    // slow ones.
    bool sense_fast_commands = true;
    // A command is fast when it returns within a few thread hand-offs (each
    // some microseconds: doc/engine.md, "Heuristics"); 50 us firmware
    // commands (CREATE_CQ, CREATE_QP, CREATE_MKEY) are not, and gain from a
    // worker each. Under 1 ms (the average starts there).
    std::chrono::nanoseconds fast_command_ns{20'000};
    // Fast commands: the loop wakes once per millisecond to add a worker when
    // every awake one is stuck; false: it sleeps until an event.
    bool stall_check = true;
    // A step that needs a throttle token that is not free (a batch's first
    // or a chain's next) goes back to the loop, which queues it behind the
    // jobs waiting for a worker, while some of those need no token, instead
    // of holding its worker until a token frees; false: it waits on its
    // worker.
    bool hand_back_token_waits = true;
    // Per command type latency histograms and firmware error counts
    // (command_stats()), recorded once per batch on the caller's thread;
    // false: none (./run bench measures the difference).
    bool command_stats = true;
    std::string thread_prefix = "mlx5a-wk";
    // Told of every batch and command (tracing); none: nothing is told.
    std::shared_ptr<CommandObserver> observer;
    // Called on a worker once it has an answer to a blocking command of a
    // batch that already returned (late): for a caller that keeps what such
    // a command may name (a direct mkey its umem) until then. What the late
    // command created goes at the next late_commands(), drain() or run().
    // Runs on the worker: it must not block.
    std::function<void()> on_late_answer;
};

struct EngineStats {
    uint64_t batches = 0;
    uint64_t steps_issued = 0;      // commands handed to the device (retries not counted)
    uint64_t async_queries = 0;     // accepted by obj_query_async
    uint64_t busy_retries = 0;      // EBUSY/EAGAIN from obj_query_async
    uint64_t blocking_fallbacks = 0;  // EBUSY with nothing in flight: run on a worker
    uint64_t stale_completions = 0;   // completions of steps whose batch had returned
    uint64_t timed_out = 0;
    uint64_t failed = 0;
};

class Engine {
public:
    using Clock = std::chrono::steady_clock;

    // Opens the completion channel, fds and worker threads on `ctx`.
    static Result<std::unique_ptr<Engine>> create(const DevxApi& api, ibv_context* ctx,
                                                  EngineOptions opt = {});
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Runs every entry; returns when all finished or at `deadline`.
    BatchResult run(Batch&& batch, Clock::time_point deadline);
    BatchResult run(Batch&& batch, std::chrono::nanoseconds timeout) {
        return run(std::move(batch), Clock::now() + timeout);
    }

    // Waits until every command of earlier (timed-out) batches has completed
    // and been discarded: call it before destroying objects a timed-out batch
    // addressed. False if `deadline` passed first.
    bool drain(Clock::time_point deadline);
    // Commands of batches that already returned and the device has not
    // answered yet (each holds a throttle slot), or whose answer is not
    // discarded yet (what it created still exists); completions that
    // arrived are discarded first. Waits for a running batch.
    unsigned late_commands();

    // Closes the gate (later run() calls return everything Cancelled), makes a
    // running batch return, joins the workers, drains what has completed and
    // releases the completion channel and fds. Idempotent.
    void shutdown() noexcept;
    // While on, nothing more is issued: the running batch's steps that wait
    // for admission or a worker end Cancelled (never_issued), its steps in
    // flight complete as they would, and run() returns once they did; a
    // run() meanwhile returns every step Cancelled. For work its caller
    // abandons (a start the frontend stopped): the wait is bounded by the
    // commands already in flight. Any thread.
    void cut_short(bool on) noexcept;

    Strategy strategy() const noexcept;
    const EngineOptions& options() const noexcept;
    const Throttle& throttle() const noexcept;  // general-object commands
    const Throttle& slots() const noexcept;     // every command
    EngineStats stats() const noexcept;
    // Every step of the batches that returned, by command type (empty when
    // EngineOptions::command_stats is off). Late answers are not in it.
    CommandStats command_stats() const;
    unsigned worker_count() const noexcept;
    // Workers asleep, none woken for them: all of them once a batch's
    // workers went back to wait (how many the next batch wakes is then the
    // engine's choice alone).
    unsigned workers_asleep() const noexcept;

    struct Impl;

private:
    explicit Engine(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace mlx5async::devx
