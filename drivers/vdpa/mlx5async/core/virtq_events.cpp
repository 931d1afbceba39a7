// Device side of virtq error recovery: the event channel at open, and the
// handler that re-creates a virtq found in ERR (policy in error_recovery.hpp).
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
    auto r = ErrorRecovery::start(*api, events, [this](uint16_t ring) { on_virtq_event(ring); });
    MLX5A_CHECK(r);
    recovery = std::move(*r);
    return {};
}

void Device::Impl::on_virtq_event(uint16_t ring) {
    std::lock_guard lk(mu);
    if (ring >= vqs.size() || !vqs[ring].obj) return;
    Vq& vq = vqs[ring];
    devx::Batch b;
    b.add(devx::Command::query_virtq(vq.obj, ring));
    auto res = run(std::move(b), BatchKind::Recovery, nullptr);
    const auto& s = res.entries.at(0).steps.at(0);
    if (!s.ok() || !s.virtq || s.virtq->state != prm::VirtqState::ERR) return;  // stale event
    vq.error_type = s.virtq->error_type;
    vq.fw_state = uint8_t(prm::VirtqState::ERR);
    vq.saved_avail = s.virtq->hw_available_index;
    vq.saved_used = s.virtq->hw_used_index;
    vq.errors++;
    vqs.adopt(vq, VqPhase::Error);  // what the QUERY found
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
    auto saved = last;
    const uint16_t one[] = {ring};
    auto r = ensure_objects(one, vq.size);
    if (r) r = resume_rings(one, false);
    last = saved;
    if (!r) logf(LogLevel::Error, "%s: virtq %u: recovery failed: %s", name.c_str(), ring,
                 prm::describe(r.error()).c_str());
    else logf(LogLevel::Warning, "%s: virtq %u recovered (re-created, RDY)", name.c_str(), ring);
}

bool Device::wait_events_handled(uint64_t n, std::chrono::milliseconds timeout) {
    return impl_->recovery && impl_->recovery->wait_handled(n, timeout);
}

}  // namespace mlx5async::core
