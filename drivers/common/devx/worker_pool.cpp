#include "worker_pool.hpp"

#include "common/base/named_thread.hpp"

namespace mlx5async::devx {

WorkerPool::WorkerPool(unsigned threads, const std::string& name_prefix, RunFn run)
    : run_(std::move(run)) {
    threads_.reserve(threads);
    for (unsigned i = 0; i < threads; ++i)
        threads_.push_back(make_named_thread(name_prefix + std::to_string(i),
                                             [this] { loop(); }));
}

void WorkerPool::post(std::unique_ptr<Job> job) {
    {
        std::lock_guard lk(mu_);
        queue_.push_back(std::move(job));
    }
    cv_.notify_one();
}

void WorkerPool::loop() {
    for (;;) {
        std::unique_ptr<Job> job;
        {
            std::unique_lock lk(mu_);
            cv_.wait(lk, [&] { return !queue_.empty() || stopping_; });
            if (queue_.empty()) return;  // stopping, nothing left to run
            job = std::move(queue_.front());
            queue_.pop_front();
        }
        run_(std::move(job));
    }
}

std::vector<std::unique_ptr<Job>> WorkerPool::stop() noexcept {
    {
        std::lock_guard lk(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
    threads_.clear();  // jthread joins
    std::vector<std::unique_ptr<Job>> left;
    std::lock_guard lk(mu_);
    for (auto& j : queue_) left.push_back(std::move(j));
    queue_.clear();
    return left;
}

}  // namespace mlx5async::devx
