#include "vring_coalescer.hpp"

#include <rte_vhost.h>

#include "common/base/named_thread.hpp"
#include "common/devx/error_log.hpp"
#include "common/prm/status.hpp"
#include "log.hpp"
#include "pmd_device.hpp"
#include "vhost_guest.hpp"

namespace mlx5async::pmd {

VringStateCoalescer::VringStateCoalescer(PmdDevice& dev) : dev_(dev) {
    thread_ = make_named_thread("mlx5a-vring", [this](std::stop_token st) { run(st); });
}

VringStateCoalescer::~VringStateCoalescer() {
    thread_.request_stop();
    cv_.notify_all();
    thread_ = {};  // join before members go
}

void VringStateCoalescer::record(int vid, uint16_t ring, bool enable) {
    std::lock_guard lk(mu_);
    dev_.core->set_vring_state(ring, enable);
    if (enable) {  // what the frontend set since dev_conf: call fd, addresses, base
        rte_vhost_vring vr{};
        if (rte_vhost_get_vhost_vring(vid, ring, &vr) == 0) {
            dev_.core->set_callfd(ring, vr.callfd);
            dev_.core->set_kickfd(ring, vr.kickfd);
        }
        if (auto c = read_vring_config(vid, ring)) dev_.core->update_vring(*c);
    }
    if (!dev_.configured) return;  // before dev_conf: only remembered
    pending_ = true;
    vid_ = vid;
    deadline_ = std::chrono::steady_clock::now() + kQuiet;
    cv_.notify_all();
}

void VringStateCoalescer::flush_now() {
    std::unique_lock lk(mu_);
    flush_locked(lk);
}

// The batch waits on the device's strand (behind a start, say) without the
// lock: record() from the vhost thread never waits for it.
void VringStateCoalescer::flush_locked(std::unique_lock<std::mutex>& lk) {
    if (!pending_) return;
    pending_ = false;
    const int vid = vid_;
    lk.unlock();
    std::vector<core::RingIndexes> disabled;
    auto r = dev_.core->flush_vring_states(disabled);
    if (!r) MLX5A_LOG(ERR, "%s: ring enable/disable batch: %s", dev_.core->name().c_str(),
                      devx::describe_once(r.error()).c_str());
    // Disabled rings hand their indexes to vhost now, as dev_close would.
    if (hand_back_rings(vid, disabled, dev_.core->dirty_logging()).log_unbacked)
        MLX5A_LOG(ERR, "vid %d: the vhost log's file is shorter than its mapping (the frontend cut it): "
                  "used rings of the disabled rings not logged", vid);
    lk.lock();
}

void VringStateCoalescer::run(std::stop_token st) {
    std::unique_lock lk(mu_);
    while (!st.stop_requested()) {
        if (!pending_) {
            cv_.wait(lk, st, [&] { return pending_; });
            continue;
        }
        // Wait out the burst: every record() pushes the deadline.
        if (cv_.wait_until(lk, st, deadline_, [&] { return !pending_; })) continue;
        if (std::chrono::steady_clock::now() >= deadline_) flush_locked(lk);
    }
}

}  // namespace mlx5async::pmd
