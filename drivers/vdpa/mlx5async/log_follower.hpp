// Keeps the device's dirty-log registration on vhost's current log while
// LOG_ALL is on. vhost maps the log anew at every SET_LOG_BASE (QEMU sends
// one per queue pair at migration start, and another when it resizes the
// log) and unmaps the previous mapping, but DPDK 22.11 tells a vDPA driver
// nothing: its set_features runs only when the features change, so only
// the first SET_LOG_BASE is followed by a call. The follower therefore
// re-reads the log base every kPoll while logging is on (`mlx5a-log`) and
// re-registers when it moved.
//
// Until then the device logs into the previous registration, whose pages
// stay pinned (as a umem's do): the very pages of the new log when the
// frontend re-sent the same file, as QEMU does at migration start. When the
// frontend switched to another file (a resize), bits set after it read the
// old log for the last time are lost: doc/open-questions.md.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "common/base/result.hpp"
#include "vdpa/mlx5async/core/device.hpp"

namespace mlx5async::pmd {

struct PmdDevice;

// vhost's current log of `vid` (LOG_ALL on), read until two reads agree:
// the vhost thread may be storing a new one.
Result<core::DirtyLog> vhost_dirty_log(int vid);

class LogFollower {
public:
    static constexpr std::chrono::milliseconds kPoll{2};
    static constexpr unsigned kFailedLooks = 25;  // a log failing this long is reported

    explicit LogFollower(PmdDevice& dev);
    ~LogFollower();
    LogFollower(const LogFollower&) = delete;
    LogFollower& operator=(const LogFollower&) = delete;

    // Follows vid's log (LOG_ALL turned on); `current` is what the device
    // has now.
    void start(int vid, const core::DirtyLog& current);
    // Stops following; returns once no re-registration runs (vhost may free
    // the device after dev_cleanup).
    void stop();
    uint64_t moves() const;  // re-registrations made (tests, logs)

private:
    struct Step {
        bool moved = false, ok = false;
        core::DirtyLog log;
        std::string error;
    };
    Step follow(int vid, const core::DirtyLog& known);
    void run(std::stop_token st);

    PmdDevice& dev_;
    mutable std::mutex mu_;  // protects vid_, known_, busy_, moves_
    std::condition_variable_any cv_;
    int vid_ = -1;  // -1: not following
    core::DirtyLog known_;
    bool busy_ = false;
    uint64_t moves_ = 0;
    uint64_t failed_addr_ = 0;  // the log that failed to register at the last looks
    unsigned failed_looks_ = 0;
    std::jthread thread_;
};

}  // namespace mlx5async::pmd
