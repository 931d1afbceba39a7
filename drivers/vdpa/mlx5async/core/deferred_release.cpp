#include "deferred_release.hpp"

#include "common/base/named_thread.hpp"

namespace mlx5async::core {

DeferredRelease::DeferredRelease(std::function<void()> release) : release_(std::move(release)) {
    thread_ = make_named_thread("mlx5a-rel", [this](std::stop_token st) { loop(st); });
}

DeferredRelease::~DeferredRelease() { stop(); }

void DeferredRelease::stop() {
    thread_.request_stop();
    cv_.notify_all();
    thread_ = {};
}

void DeferredRelease::request() {
    {
        std::lock_guard lk(mu_);
        pending_ = true;
    }
    cv_.notify_all();
}

void DeferredRelease::loop(std::stop_token st) {
    std::unique_lock lk(mu_);
    while (cv_.wait(lk, st, [&] { return pending_; })) {
        pending_ = false;
        lk.unlock();
        release_();
        lk.lock();
    }
}

}  // namespace mlx5async::core
