#include "virtq_table.hpp"

#include "common/base/log_sink.hpp"

namespace mlx5async::core {

void VirtqTable::create(size_t n, std::string device_name) {
    name_ = std::move(device_name);
    vqs_ = std::vector<Vq>(n);
    for (size_t i = 0; i < n; i++) vqs_[i].index = uint16_t(i);
}

Result<void> VirtqTable::transition(Vq& vq, VqPhase to) {
    if (!vq_phase_allowed(vq.phase_, to)) {
        auto e = fail(Errc::State, name_ + ": virtq " + std::to_string(vq.index) + ": " +
                                       vq_phase_name(vq.phase_) + " -> " + vq_phase_name(to) +
                                       " is not a step of the virtq lifecycle");
        logf(LogLevel::Error, "%s", e.error.what.c_str());
        return e;
    }
    vq.phase_ = to;
    if (to == VqPhase::Absent) vq.recreate_ = false;  // the object it marked is gone
    return {};
}

void VirtqTable::adopt(Vq& vq, VqPhase on_device) { vq.phase_ = on_device; }

}  // namespace mlx5async::core
