#include "worker_pool.hpp"

#include <pthread.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "common/base/futex.hpp"
#include "common/base/named_thread.hpp"
#include "common/base/steady_clock.hpp"

namespace mlx5async::devx {

WorkerPool::WorkerPool(unsigned threads, const std::string& name_prefix, RunFn run)
    : run_(std::move(run)), busy_since_(threads, 0) {
    threads_.reserve(threads);
    for (unsigned i = 0; i < threads; ++i)
        threads_.push_back(make_named_thread(name_prefix + std::to_string(i),
                                             [this, i] { loop(i); }));
}

unsigned WorkerPool::plan_wakes(size_t n) {
    const unsigned sleeping = idle_ - woken_;
    const unsigned k = unsigned(std::min<size_t>(n, sleeping));
    woken_ += k;
    if (k > 0) wake_seq_.fetch_add(1, std::memory_order_relaxed);
    return k;
}

void WorkerPool::notify(unsigned wakes) {
    if (wakes > 0) futex_wake(wake_seq_, wakes);
}

unsigned WorkerPool::asleep() const noexcept {
    std::lock_guard lk(mu_);
    return idle_ - woken_;
}

void WorkerPool::post(std::unique_ptr<Job> job) {
    unsigned w = 0;
    {
        std::lock_guard lk(mu_);
        queue_.push_back(std::move(job));
        w = plan_wakes(1);
    }
    notify(w);
}

void WorkerPool::post_all(std::vector<std::unique_ptr<Job>>& jobs, size_t max_wake,
                          size_t max_awake) {
    if (jobs.empty()) return;
    unsigned w = 0;
    {
        std::lock_guard lk(mu_);
        for (auto& j : jobs) queue_.push_back(std::move(j));
        const size_t sleeping = idle_ - woken_, awake = busy_since_.size() - sleeping;
        // At least one, unless a worker is awake: it comes back for the queue.
        const size_t room = awake < max_awake ? max_awake - awake : 0;
        w = plan_wakes(std::min({jobs.size(), sleeping, std::max<size_t>(max_wake, 1),
                                 awake == 0 ? std::max<size_t>(room, 1) : room}));
    }
    jobs.clear();
    notify(w);
}

void WorkerPool::wake_one_if_queued(unsigned max_awake) {
    unsigned w = 0;
    {
        std::lock_guard lk(mu_);
        if (queue_.empty() || woken_ > 0 || idle_ == 0) return;
        if (busy_since_.size() - (idle_ - woken_) >= max_awake) return;
        w = plan_wakes(1);
    }
    notify(w);
}

void WorkerPool::wake_one_if_stalled(int64_t ns) {
    unsigned w = 0;
    {
        std::lock_guard lk(mu_);
        if (queue_.empty() || idle_ == woken_) return;
        const int64_t since = steady_now_ns() - ns;
        for (int64_t t : busy_since_)
            if (t > since) return;  // a worker started a job recently: it is moving
        w = plan_wakes(1);
    }
    notify(w);
}

void WorkerPool::loop(size_t self) {
    for (;;) {
        std::unique_ptr<Job> job;
        {
            std::unique_lock lk(mu_);
            busy_since_[self] = 0;
            ++idle_;
            while (queue_.empty() && !stopping_) {
                futex_wait_unlocked(lk, wake_seq_);
                if (woken_ > 0) --woken_;  // this wake-up arrived (or a spurious return)
            }
            --idle_;
            if (queue_.empty()) return;  // stopping, nothing left to run
            job = std::move(queue_.front());
            queue_.pop_front();
            busy_since_[self] = steady_now_ns();
        }
        run_(std::move(job));
    }
}

int WorkerPool::set_affinity(const cpu_set_t& cpus) noexcept {
    int first = 0;
    for (auto& t : threads_) {
        int r = pthread_setaffinity_np(t.native_handle(), sizeof cpus, &cpus);
        if (r != 0 && first == 0) first = r;
    }
    return first;
}

std::vector<std::unique_ptr<Job>> WorkerPool::stop() noexcept {
    {
        std::lock_guard lk(mu_);
        stopping_ = true;
        wake_seq_.fetch_add(1, std::memory_order_relaxed);
    }
    futex_wake(wake_seq_, UINT_MAX);
    threads_.clear();  // jthread joins
    std::vector<std::unique_ptr<Job>> left;
    std::lock_guard lk(mu_);
    for (auto& j : queue_) left.push_back(std::move(j));
    queue_.clear();
    return left;
}

}  // namespace mlx5async::devx
