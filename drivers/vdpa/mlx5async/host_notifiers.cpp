#include "host_notifiers.hpp"

#include <rte_vhost.h>
#include <vdpa_driver.h>

#include <chrono>

#include "common/base/named_thread.hpp"
#include "log.hpp"
#include "pmd_device.hpp"

namespace mlx5async::pmd {

HostNotifiers::HostNotifiers(PmdDevice& dev) : dev_(dev) {
    thread_ = make_named_thread("mlx5a-notify", [this](std::stop_token st) { run(st); });
}

HostNotifiers::~HostNotifiers() {
    thread_.request_stop();
    cv_.notify_all();
    thread_ = {};  // join before members go
}

void HostNotifiers::request(int vid, uint64_t start_seq) {
    std::lock_guard lk(mu_);
    pending_ = Request{vid, start_seq};
    cv_.notify_all();
}

void HostNotifiers::cancel() {
    std::lock_guard lk(mu_);
    pending_.reset();
}

void HostNotifiers::wait_idle() {
    std::unique_lock lk(mu_);
    pending_.reset();
    // DPDK gives no way to abandon the wait for the frontend's reply, and
    // the device it uses is freed after dev_cleanup: wait, saying why.
    auto waited = std::chrono::seconds(0);
    while (running_) {
        if (cv_.wait_for(lk, std::chrono::seconds(5), [&] { return !running_; })) break;
        waited += std::chrono::seconds(5);
        MLX5A_LOG(WARNING, "%s: vhost device closing: still waiting (%llds) for the frontend's "
                  "reply to the host-notifier message", dev_.core->name().c_str(),
                  static_cast<long long>(waited.count()));
    }
}

uint64_t HostNotifiers::calls() const {
    std::lock_guard lk(mu_);
    return calls_;
}

void HostNotifiers::run(std::stop_token st) {
    std::unique_lock lk(mu_);
    while (!st.stop_requested()) {
        if (!cv_.wait(lk, st, [&] { return pending_.has_value(); })) break;
        Request r = *pending_;
        pending_.reset();
        if (dev_.vid.load() != r.vid) continue;  // its frontend left meanwhile
        running_ = true;
        lk.unlock();
        // Frontends that take host notifiers kick the device directly;
        // others (virtio_user, QEMU without page-per-vq) refuse and keep
        // kicking through vhost, which the kick relay serves.
        int rc = rte_vhost_host_notifier_ctrl(r.vid, RTE_VHOST_QUEUE_ALL, true);
        dev_.core->ledger().notifiers_done(r.start_seq, rc);
        MLX5A_LOG(INFO, "vid %d: host notifiers %s (%d)", r.vid, rc == 0 ? "on" : "refused", rc);
        lk.lock();
        running_ = false;
        calls_++;
        cv_.notify_all();
    }
}

}  // namespace mlx5async::pmd
