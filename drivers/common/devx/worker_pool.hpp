// Named worker threads ("mlx5a-wk<N>") for the blocking DevX commands
// (MODIFY/CREATE/DESTROY have no async form in rdma-core). Created once with
// the engine, never per batch; joined by stop(). Each finished job goes to
// the `done` callback, on the worker.
// Idle workers sleep on one futex word: waking any number of them is one
// FUTEX_WAKE call, where a condition variable takes a call per worker short
// of waking them all.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "job.hpp"

namespace mlx5async::devx {

class WorkerPool {
public:
    using RunFn = std::function<void(std::unique_ptr<Job>)>;  // runs and hands the job on

    WorkerPool(unsigned threads, const std::string& name_prefix, RunFn run);
    ~WorkerPool() { (void)stop(); }
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    void post(std::unique_ptr<Job> job);
    // Queues them all under one lock, then wakes at most one idle worker per
    // job and at most `max_wake` (at least one): a batch's jobs posted one by
    // one woke a worker per post, which preempted the poster before it could
    // queue the next. Nor more than make `max_awake` workers awake (running
    // or woken): an awake worker takes the queued jobs when it finishes.
    void post_all(std::vector<std::unique_ptr<Job>>& jobs, size_t max_wake = SIZE_MAX,
                  size_t max_awake = SIZE_MAX);
    // Wakes one more idle worker if jobs wait, no wake-up is on its way and
    // fewer than `max_awake` workers are awake: lets the pool grow one worker
    // at a time when few were woken.
    void wake_one_if_queued(unsigned max_awake = UINT32_MAX);
    // Wakes one more idle worker if jobs wait and every awake worker has been
    // in its current job for at least `ns` (they block: the device is slow
    // after all), whatever the number awake.
    void wake_one_if_stalled(int64_t ns);
    // Moves every worker to these CPUs (a job in progress goes on there);
    // 0 or the first errno.
    int set_affinity(const cpu_set_t& cpus) noexcept;
    // Lets running jobs finish, joins every thread, returns the jobs never started.
    std::vector<std::unique_ptr<Job>> stop() noexcept;
    unsigned size() const noexcept { return static_cast<unsigned>(threads_.size()); }
    // Workers asleep with no wake-up on its way to them.
    unsigned asleep() const noexcept;

private:
    void loop(size_t self);
    // Under mu_: marks up to n sleeping workers woken and moves wake_seq_ on
    // if any; returns how many notify() wakes after the unlock.
    unsigned plan_wakes(size_t n);
    void notify(unsigned wakes);

    RunFn run_;
    mutable std::mutex mu_;  // protects queue_, stopping_, idle_, woken_, busy_since_
    // Written under mu_ (a wake-up or the stop), read by a worker under mu_
    // before it sleeps on it: a change after that read fails its wait.
    std::atomic<uint32_t> wake_seq_{0};
    bool stopping_ = false;  // under mu_
    unsigned idle_ = 0;      // under mu_: workers waiting on wake_seq_
    unsigned woken_ = 0;     // under mu_: of those, notified and not yet running
    std::vector<int64_t> busy_since_;  // under mu_: per worker, steady ns its job began; 0 idle
    std::deque<std::unique_ptr<Job>> queue_;
    std::vector<std::jthread> threads_;
};

}  // namespace mlx5async::devx
