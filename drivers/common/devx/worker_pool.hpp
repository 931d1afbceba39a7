// Named worker threads ("mlx5a-wk<N>") for the blocking DevX commands
// (MODIFY/CREATE/DESTROY have no async form in rdma-core). Created once with
// the engine, never per batch; woken through a condition variable; joined by
// stop(). Each finished job goes to the `done` callback, on the worker.
// Waking every sleeping worker is one notify_all; fewer, a notify_one each.
#pragma once

#include <sched.h>

#include <condition_variable>
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

private:
    void loop(size_t self);
    // Under mu_: marks up to n sleeping workers woken; returns how many
    // notifications notify() sends after the unlock (kAll: notify_all).
    static constexpr unsigned kAll = UINT32_MAX;
    unsigned plan_wakes(size_t n);
    void notify(unsigned wakes);

    RunFn run_;
    std::mutex mu_;  // protects queue_, stopping_, idle_, woken_, busy_since_
    std::condition_variable cv_;  // idle workers wait here, under mu_
    bool stopping_ = false;  // under mu_
    unsigned idle_ = 0;      // under mu_: workers waiting on cv_
    unsigned woken_ = 0;     // under mu_: of those, notified and not yet running
    std::vector<int64_t> busy_since_;  // under mu_: per worker, steady ns its job began; 0 idle
    std::deque<std::unique_ptr<Job>> queue_;
    std::vector<std::jthread> threads_;
};

}  // namespace mlx5async::devx
