#include "strand.hpp"

#include "common/base/named_thread.hpp"

namespace mlx5async::core {

Strand::Strand(std::string thread_name) {
    thread_ = make_named_thread(std::move(thread_name), [this](std::stop_token st) { loop(st); });
}

Strand::~Strand() { stop(); }

void Strand::enqueue(Job j) {
    {
        std::lock_guard lk(mu_);
        if (!stopped_) {
            jobs_.push_back(std::move(j));
            cv_.notify_all();
            return;
        }
    }
    j.cancel();
}

void Strand::stop() {
    std::deque<Job> dropped;
    {
        std::lock_guard lk(mu_);
        stopped_ = true;
        dropped.swap(jobs_);
    }
    for (Job& j : dropped) j.cancel();
    thread_.request_stop();
    cv_.notify_all();
    if (thread_.joinable() && !on_strand()) thread_.join();
}

bool Strand::on_strand() const { return std::this_thread::get_id() == thread_.get_id(); }

size_t Strand::backlog() const {
    std::lock_guard lk(mu_);
    return jobs_.size() + (running_ ? 1 : 0);
}

void Strand::loop(std::stop_token st) {
    std::unique_lock lk(mu_);
    while (cv_.wait(lk, st, [&] { return !jobs_.empty(); })) {
        Job j = std::move(jobs_.front());
        jobs_.pop_front();
        running_ = true;
        lk.unlock();
        j.run();
        j = {};  // what the job holds (fds, the guest's snapshot) goes before the next one
        lk.lock();
        running_ = false;
    }
}

}  // namespace mlx5async::core
