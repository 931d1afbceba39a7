#include "log_follower.hpp"

#include <rte_vhost.h>

#include "common/base/named_thread.hpp"
#include "common/prm/status.hpp"
#include "log.hpp"
#include "pmd_device.hpp"

namespace mlx5async::pmd {

Result<core::DirtyLog> vhost_dirty_log(int vid) {
    for (int attempt = 0; attempt < 8; attempt++) {
        uint64_t b1 = 0, s1 = 0, b2 = 0, s2 = 0;
        if (rte_vhost_get_log_base(vid, &b1, &s1) != 0 || rte_vhost_get_log_base(vid, &b2, &s2) != 0)
            return fail(Errc::NotFound, "vhost device " + std::to_string(vid) + " is gone");
        if (b1 != b2 || s1 != s2) continue;  // SET_LOG_BASE in progress
        if (!b1 || !s1)
            return fail(Errc::State, "LOG_ALL without a log (no SET_LOG_BASE from the frontend)");
        return core::DirtyLog{b1, s1, 12};  // vhost logs in 4 KiB pages
    }
    return fail(Errc::Busy, "the vhost log keeps changing");
}

LogFollower::LogFollower(PmdDevice& dev) : dev_(dev) {
    thread_ = make_named_thread("mlx5a-log", [this](std::stop_token st) { run(st); });
}

LogFollower::~LogFollower() {
    thread_.request_stop();
    cv_.notify_all();
    thread_ = {};  // join before members go
}

void LogFollower::start(int vid, const core::DirtyLog& current) {
    std::lock_guard lk(mu_);
    vid_ = vid;
    known_ = current;
    cv_.notify_all();
}

void LogFollower::stop() {
    std::unique_lock lk(mu_);
    vid_ = -1;
    cv_.notify_all();
    cv_.wait(lk, [&] { return !busy_; });
}

uint64_t LogFollower::moves() const {
    std::lock_guard lk(mu_);
    return moves_;
}

// One look: registers vhost's log when it moved from `known`. A log that
// vhost replaced while it was being registered (QEMU sends SET_LOG_BASE in
// bursts) fails to pin: the newer one is tried at once.
LogFollower::Step LogFollower::follow(int vid, const core::DirtyLog& known) {
    Step step;
    for (int attempt = 0; attempt < 8; attempt++) {
        auto log = vhost_dirty_log(vid);
        if (!log || (log->host_addr == known.host_addr && log->size == known.size)) return step;
        step.moved = true;
        step.log = *log;
        auto r = dev_.core->set_dirty_logging(true, *log);
        if (r) {
            step.ok = true;
            return step;
        }
        step.error = prm::describe(r.error());
        auto now = vhost_dirty_log(vid);
        if (!now || (now->host_addr == log->host_addr && now->size == log->size)) return step;
    }
    return step;
}

void LogFollower::run(std::stop_token st) {
    std::unique_lock lk(mu_);
    while (!st.stop_requested()) {
        if (vid_ < 0) {
            cv_.wait(lk, st, [&] { return vid_ >= 0; });
            continue;
        }
        // Nothing signals a new log (log_follower.hpp): look again after kPoll.
        if (cv_.wait_for(lk, st, kPoll, [&] { return vid_ < 0; })) continue;
        if (st.stop_requested()) break;
        const int vid = vid_;
        const core::DirtyLog known = known_;
        busy_ = true;
        lk.unlock();
        Step step = follow(vid, known);
        lk.lock();
        busy_ = false;
        if (step.moved && step.ok) {
            if (vid_ == vid) known_ = step.log;
            moves_++;
            failed_addr_ = 0;
        } else if (step.moved) {
            // Retried at every look; said once, when it lasts: vhost unmaps
            // the old log just before it publishes the new one.
            if (failed_addr_ != step.log.host_addr) failed_addr_ = step.log.host_addr, failed_looks_ = 0;
            if (++failed_looks_ == kFailedLooks)
                MLX5A_LOG(WARNING, "vid %d: following the vhost log: %s", vid, step.error.c_str());
        }
        cv_.notify_all();
    }
}

}  // namespace mlx5async::pmd
