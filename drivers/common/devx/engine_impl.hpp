// Internal state of Engine, shared by the three strategies
// (engine.cpp: set-up, shutdown, helpers; engine_async.cpp: the epoll loop;
// engine_baselines.cpp: sequential and threads).
#pragma once

#include <sched.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "common/base/eventfd_signal.hpp"
#include "common/base/unique_fd.hpp"
#include "engine.hpp"
#include "job.hpp"
#include "raii.hpp"
#include "throttle.hpp"
#include "worker_pool.hpp"

namespace mlx5async::devx {

struct Engine::Impl {
    Impl(const DevxApi& a, ibv_context* c, EngineOptions o)
        : api(a), ctx(c), opt(with_slots(std::move(o))), throttle(opt.max_inflight),
          slots(opt.cmd_slots) {}
    static EngineOptions with_slots(EngineOptions o) noexcept {
        if (o.cmd_slots == 0) o.cmd_slots = 2 * o.max_inflight;
        return o;
    }

    const DevxApi& api;
    ibv_context* ctx;
    const EngineOptions opt;
    Throttle throttle;  // general-object commands in flight
    Throttle slots;     // commands of any kind in flight

    // mlx5_core's admission: a general-object command takes a throttle
    // token, then a command slot; any other command a slot only. Nobody
    // waits for a token while holding a slot, so the two never deadlock.
    void admit(bool throttled) noexcept {
        if (throttled) throttle.acquire();
        slots.acquire();
    }
    bool try_admit(bool throttled) noexcept {
        if (throttled && !throttle.try_acquire()) return false;
        if (slots.try_acquire()) return true;
        if (throttled) throttle.release();
        return false;
    }
    void leave(bool throttled) noexcept {
        slots.release();
        if (throttled) throttle.release();
    }
    void leave_quiet(bool throttled) noexcept {  // Throttle::release_quiet
        slots.release_quiet();
        if (throttled) throttle.release_quiet();
    }
    void wake_admission_waiters(unsigned n) noexcept {
        slots.wake_waiters(n);
        throttle.wake_waiters(n);
    }
    // A command of this kind would be admitted now (a worker woken for it
    // would not just wait).
    bool has_room(bool throttled) const noexcept {
        return slots.in_flight() < slots.limit() &&
               (!throttled || throttle.in_flight() < throttle.limit());
    }
    // Async jobs posted whose first step needs no token, not yet taken by a
    // worker (an estimate: read without a lock).
    std::atomic<unsigned> queued_without_token{0};
    // hand_back_token_waits: a step that found no free token goes back to
    // the loop, which queues it again behind the jobs waiting for a worker,
    // rather than wait on its worker, while some of those need no token
    // (the wait would keep a worker from them; with none, it holds nothing
    // back).
    bool give_way_for_token() const noexcept {
        return opt.hand_back_token_waits && queued_without_token.load(std::memory_order_relaxed) > 0;
    }

    // Owned resources, released by shutdown() in reverse order of set-up.
    CmdComp comp;      // Async: completions of obj_query_async
    UniqueFd epoll;    // Async: comp fd, work_fd, timer_fd
    UniqueFd work_fd;  // eventfd: a worker finished a job
    UniqueFd timer_fd; // timerfd: the batch deadline
    std::unique_ptr<WorkerPool> pool;

    // Worker -> loop hand-off. A worker wakes the loop (work_fd) only when it
    // has something to do: its batch returned (drain), the job left a step
    // for the loop, it was the batch's last job, or the loop waits for a slot,
    // an EBUSY retry or an early completion's job. Otherwise the job waits in
    // `done` for the loop's next wake-up (a QUERY completion, another job).
    std::mutex done_mu;  // protects done, work_signal, loop_waiting, live_jobs, live_gen writes
    std::vector<std::unique_ptr<Job>> done;
    // work_fd's readiness: armed under done_mu, written after the unlock (a
    // loop woken under the lock would, on the same CPU, preempt the worker
    // only to block on it), disarmed under done_mu when the loop takes `done`.
    EventfdSignal work_signal;
    bool loop_waiting = false;  // the loop sleeps on something a finished job may give it
    unsigned live_jobs = 0;     // jobs of the live batch posted and not finished
    std::atomic<unsigned> jobs_out{0};  // posted to the pool, not yet taken from `done`
    // Jobs whose worker released their slot and that are not yet taken from
    // `done`: what a late command created is destroyed only once taken.
    std::atomic<unsigned> answered_not_taken{0};
    // Average latency of blocking commands (EWMA, 1/8). Firmware commands
    // that take ~0.5 ms need one worker each, woken together; commands that
    // return in microseconds (a fast or idle device) are drained by a couple
    // of workers, and waking all of them costs more than the commands (a
    // thread wake-up is several microseconds on a VM). Starts slow.
    std::atomic<int64_t> blocking_ns{kSlowCommandNs};
    static constexpr int64_t kSlowCommandNs = 1'000'000;
    static void ewma(std::atomic<int64_t>& avg, int64_t sample, int shift) noexcept {
        int64_t a = avg.load(std::memory_order_relaxed);
        // Racy (load, then store): an estimate.
        avg.store(a + (sample - a) / (int64_t(1) << shift), std::memory_order_relaxed);
    }
    bool fast_commands() const noexcept {
        return opt.sense_fast_commands && blocking_ns.load(std::memory_order_relaxed) < opt.fast_command_ns.count();
    }
    // Fast commands keep at most this many workers awake: the CPUs the
    // workers may run on (worker_cpus). A batch of them that hangs grows the
    // pool by the loop's stall check (wake_one_if_stalled).
    std::atomic<unsigned> fast_workers{1};  // read by workers, written by run()
    // The CPUs the workers may run on (inherited from the creator, then the
    // caller's when workers_follow_caller); under run_mu.
    cpu_set_t worker_cpus{};
    bool affinity_warned = false;  // under run_mu: a failed move is logged once
    void follow_caller_cpus() noexcept;

    std::mutex run_mu;  // one batch at a time; held by run() and by shutdown()
    std::atomic<bool> closed{false};  // the gate: no new batch, running one returns
    std::atomic<bool> cut{false};     // cut_short(): nothing more is issued
    bool released = false;            // under run_mu: resources gone
    uint32_t gen = 0;                 // under run_mu: batch generation
    std::atomic<uint32_t> live_gen{0};  // the batch running now (0: none); workers skip
                                        // queued async jobs of a batch that returned, and
                                        // a job of no live batch is late; written under done_mu
    std::vector<std::byte> comp_buf;  // under run_mu: mlx5dv_devx_async_cmd_hdr + out

    mutable std::mutex stats_mu;  // protects stats, cmd_stats
    EngineStats stats;
    CommandStats cmd_stats;

    // The observer (EngineOptions::observer), when there is one.
    void observe_issue(const Command& c) const noexcept {
        if (opt.observer) opt.observer->command_issued(c);
    }
    void observe_completion(const Command& c, const Outcome& o) const noexcept {
        if (opt.observer) observe_completion_slow(c, o);
    }
    void observe_completion_slow(const Command& c, const Outcome& o) const noexcept;

    Result<void> setup();
    void release_all() noexcept;

    // Worker side: run the job's command(s), hand it to `done`, wake the loop
    // when it needs to act.
    void worker_run(std::unique_ptr<Job> job) noexcept;
    void run_steps(Job& job) noexcept;
    void issue_continuation_query(Job& job, size_t i, bool held_throttled) noexcept;
    void hand_back(std::unique_ptr<Job> job, bool quiet) noexcept;
    void wake_loop() noexcept;
    void post(std::unique_ptr<Job> job);
    void post_live(std::vector<std::unique_ptr<Job>>& jobs);  // async batch jobs, in one go
    std::vector<std::unique_ptr<Job>> take_done();  // also drains work_fd
    // A job or async completion of an earlier batch: free and count it.
    void discard_stale(Job& job) noexcept;
    void drain_stale_completions() noexcept;
    void add_stats(const EngineStats& d) noexcept;

    BatchResult run_async(Batch&& b, Clock::time_point deadline);
    BatchResult run_sequential(Batch&& b, Clock::time_point deadline);
    BatchResult run_threads(Batch&& b, Clock::time_point deadline);
};

// Async QUERY wr_id: batch generation and entry, so a late completion is
// recognised as stale.
constexpr int kGenShift = 32;
inline uint64_t make_wr_id(uint32_t gen, uint32_t entry) {
    return (uint64_t(gen) << kGenShift) | entry;
}

// Results skeleton: every step Queued with its command's identity.
BatchResult make_result_skeleton(const Batch& b);
StepResult step_identity(const Command& c);
// Marks entry `e`'s steps from `from` on: `from` through `through` (at
// least `from`) `first`, the rest Cancelled; hands destroy objects back.
void close_chain(std::vector<Command>& steps, std::vector<StepResult>& results, size_t from,
                 StepState first, size_t through = 0);
// The last step of a job's chain a worker has begun (the job's first when
// none), for a deadline that closes the chain while the worker runs it.
size_t last_begun_step(const Job& job) noexcept;
// close_chain(Cancelled) of steps never handed to the device (cut_short).
void cancel_unissued(std::vector<Command>& steps, std::vector<StepResult>& results, size_t from);
// Counts states into done/failed/..., logs each Failed/TimedOut step once.
void tally(BatchResult& r);

}  // namespace mlx5async::devx
