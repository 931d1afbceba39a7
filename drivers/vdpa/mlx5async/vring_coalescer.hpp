// Coalesces set_vring_state calls: vhost delivers one per ring (a guest
// changing its queue-pair count, virtio_user disabling every ring before it
// quits), each from the single vhost control thread. They are recorded and
// applied as one batch once the burst is over (no change for kQuiet), or
// immediately before dev_conf/dev_close, which then carry them in their own
// batch.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace mlx5async::pmd {

struct PmdDevice;

class VringStateCoalescer {
public:
    static constexpr std::chrono::milliseconds kQuiet{2};

    explicit VringStateCoalescer(PmdDevice& dev);
    ~VringStateCoalescer();

    // vhost thread: record a change and arm the quiet timer.
    void record(int vid, uint16_t ring, bool enable);
    // Apply what is pending now (dev_conf/dev_close call it first).
    void flush_now();

private:
    void run(std::stop_token st);
    void flush_locked(std::unique_lock<std::mutex>& lk);

    PmdDevice& dev_;
    std::mutex mu_;  // protects pending_, deadline_, vid_ (not held across a batch)
    std::condition_variable_any cv_;
    bool pending_ = false;
    int vid_ = -1;
    std::chrono::steady_clock::time_point deadline_{};
    std::jthread thread_;
};

}  // namespace mlx5async::pmd
