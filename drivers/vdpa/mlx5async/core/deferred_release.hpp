// Destroying what a control operation replaced, after that operation
// returned: a dev_conf over a new memory table leaves the old registration
// (umems, mkeys) and an old vhost log to destroy, and destroying 256 GiB of
// umems costs as much as unpinning their pages. The downtime ends when the
// virtqs run; the old objects go afterwards, on this thread ("mlx5a-rel"),
// as Linux's vdpa/mlx5 defers its old mkeys' deletion.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace mlx5async::core {

class DeferredRelease {
public:
    // `release` runs on the thread after each request (several requests
    // made while it runs give one more run); it takes the locks it needs.
    explicit DeferredRelease(std::function<void()> release);
    // stop(): requests not yet run are dropped (the owner destroys what is
    // left itself).
    ~DeferredRelease();
    DeferredRelease(const DeferredRelease&) = delete;
    DeferredRelease& operator=(const DeferredRelease&) = delete;

    void request();
    // Lets a run in progress finish and stops the thread; later requests
    // are not run. Idempotent.
    void stop();

private:
    void loop(std::stop_token st);

    std::function<void()> release_;
    std::mutex mu_;  // protects pending_
    std::condition_variable_any cv_;
    bool pending_ = false;
    std::jthread thread_;  // last: joined before the members go
};

}  // namespace mlx5async::core
