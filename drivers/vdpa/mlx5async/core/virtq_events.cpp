// Device side of virtq error recovery: the event channel at open, and the
// job that re-creates a virtq found in ERR (policy in error_recovery.hpp).
// The event thread only posts: the recovery runs on the strand, in order
// with every other operation of the device.
#include "common/base/log_sink.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"
#include "device_impl.hpp"

namespace mlx5async::core {

Result<void> Device::Impl::start_events() {
    auto ch = devx::EventChannel::create(ctx);
    if (!ch) {
        // Recovery is an extra: a device without event channels still works.
        logf(LogLevel::Warning, "%s: no DevX event channel (%s): virtq errors will not be "
             "recovered automatically", name.c_str(), prm::describe(ch.error()).c_str());
        return {};
    }
    events = std::move(*ch);
    auto r = ErrorRecovery::start(*api, events, [this](uint16_t ring) {
        strand->post([this, ring] {
            on_virtq_event(ring);
            publish();
            std::lock_guard lk(pub.mu);
            pub.recovery_done++;
            pub.cv.notify_all();
            return Result<void>{};
        });
    });
    MLX5A_CHECK(r);
    recovery = std::move(*r);
    return {};
}

void Device::Impl::on_virtq_event(uint16_t ring) {
    if (ring >= vqs.size() || !vqs[ring].obj) return;
    Vq& vq = vqs[ring];
    devx::Batch b;
    b.add(devx::Command::query_virtq(vq.obj, ring));
    auto res = cmds->run(std::move(b), BatchKind::Recovery, nullptr);
    const auto& s = res.entries.at(0).steps.at(0);
    if (!s.ok() || !s.virtq || s.virtq->state != prm::VirtqState::ERR) return;  // stale event
    vqs.errored(vq, *s.virtq);  // what the QUERY found
    auto now = std::chrono::steady_clock::now();
    vq.error_times.push_back(now);
    const auto window = std::chrono::milliseconds(cfg.error_window_ms);
    while (!vq.error_times.empty() && now - vq.error_times.front() > window)
        vq.error_times.pop_front();
    logf(LogLevel::Error, "%s: virtq %u in ERR (error_type %u) at avail %u used %u", name.c_str(),
         ring, vq.error_type, vq.saved_avail, vq.saved_used);
    if (vq.error_times.size() > size_t(ErrorRecovery::kMaxErrors)) {
        logf(LogLevel::Error, "%s: virtq %u: %d errors within %u ms, left in ERR", name.c_str(),
             ring, ErrorRecovery::kMaxErrors + 1, cfg.error_window_ms);
        return;
    }
    if (!guest_valid || !vq.enabled) return;  // the next dev_conf restarts it
    // Re-create from the hardware's last indexes and start again; the app's
    // view of the last suspend/resume timing is left as it was.
    OpTiming saved[2];
    {
        std::lock_guard lk(pub.mu);
        saved[0] = pub.last[0];
        saved[1] = pub.last[1];
    }
    const uint16_t one[] = {ring};
    auto r = ensure_objects(one, vq.size);
    if (r) r = resume_rings(one, false);
    record_timing(saved[0]);
    record_timing(saved[1]);
    if (!r) logf(LogLevel::Error, "%s: virtq %u: recovery failed: %s", name.c_str(), ring,
                 prm::describe(r.error()).c_str());
    else logf(LogLevel::Warning, "%s: virtq %u recovered (re-created, RDY)", name.c_str(), ring);
}

}  // namespace mlx5async::core
