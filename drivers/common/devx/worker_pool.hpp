// Named worker threads ("mlx5a-wk<N>") for the blocking DevX commands
// (MODIFY/CREATE/DESTROY have no async form in rdma-core). Created once with
// the engine, never per batch; woken through a condition variable; joined by
// stop(). Each finished job goes to the `done` callback, on the worker.
//
// Workers sleep in tiers of `tier` threads, one condition variable each:
// waking a whole tier is one notify_all (one futex call), where waking the
// same workers of a larger pool one by one costs the poster a call each.
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

    WorkerPool(unsigned threads, const std::string& name_prefix, RunFn run, unsigned tier = 0);
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
    unsigned tiers() const noexcept { return static_cast<unsigned>(tiers_.size()); }

private:
    struct Tier {
        std::condition_variable cv;
        unsigned idle = 0;   // under mu_: its workers waiting on cv
        unsigned woken = 0;  // under mu_: of those, notified and not yet running
    };
    void loop(size_t self);
    // Under mu_: marks up to n sleeping workers woken, first tiers first;
    // their notifications go out with notify() after the unlock.
    struct Wakes {
        std::vector<std::pair<Tier*, unsigned>> tiers;  // (tier, workers; UINT32_MAX: all)
    };
    Wakes plan_wakes(size_t n);
    static void notify(const Wakes& w);

    RunFn run_;
    std::mutex mu_;  // protects queue_
    const unsigned tier_size_;
    std::vector<std::unique_ptr<Tier>> tiers_;
    bool stopping_ = false;  // under mu_
    unsigned idle_ = 0;      // under mu_: workers waiting, all tiers
    unsigned woken_ = 0;     // under mu_: of those, notified and not yet running
    std::vector<int64_t> busy_since_;  // under mu_: per worker, steady ns its job began; 0 idle
    std::deque<std::unique_ptr<Job>> queue_;
    std::vector<std::jthread> threads_;
};

}  // namespace mlx5async::devx
