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

Result<void> VirtqTable::created(Vq& vq, devx::DevxObj obj, uint16_t size, const prm::VirtqAttr& attr) {
    vq.obj = std::move(obj);
    vq.size = size;
    vq.attr = attr;
    vq.fw_state_ = uint8_t(prm::VirtqState::INIT);
    return transition(vq, VqPhase::Init);
}

void VirtqTable::session_indexes(Vq& vq, uint16_t avail, uint16_t used) {
    if (vq.phase_ == VqPhase::Ready || vq.unsure_) return;  // the device's are the truth
    vq.saved_avail = avail;
    vq.saved_used = used;
}

Result<void> VirtqTable::started(Vq& vq, const prm::VirtqAttr& sent) {
    vq.attr = sent;
    vq.attr.modify_field_select = 0;
    vq.saved_avail = vq.attr.hw_available_index;
    vq.saved_used = vq.attr.hw_used_index;
    vq.fw_state_ = uint8_t(prm::VirtqState::RDY);
    return transition(vq, VqPhase::Ready);
}

Result<void> VirtqTable::suspended(Vq& vq) {
    vq.fw_state_ = uint8_t(prm::VirtqState::SUSPEND);
    return transition(vq, VqPhase::Suspended);
}

void VirtqTable::stopped_at(Vq& vq, const prm::VirtqAttr& q) {
    vq.saved_avail = q.hw_available_index;
    vq.saved_used = q.hw_used_index;
    vq.fw_state_ = uint8_t(q.state);
    vq.attr.hw_available_index = vq.saved_avail;
    vq.attr.hw_used_index = vq.saved_used;
    if (q.state == prm::VirtqState::ERR) {
        vq.error_type = q.error_type;
        adopt(vq, VqPhase::Error);
    }
}

void VirtqTable::learned(Vq& vq, const prm::VirtqAttr& q) {
    vq.attr = q;  // what the device holds, late commands' fields included
    vq.attr.modify_field_select = 0;
    vq.fw_state_ = uint8_t(q.state);
    switch (q.state) {
    case prm::VirtqState::INIT: adopt(vq, VqPhase::Init); break;
    case prm::VirtqState::RDY: adopt(vq, VqPhase::Ready); break;
    case prm::VirtqState::SUSPEND:
        vq.saved_avail = q.hw_available_index;  // where it really stopped
        vq.saved_used = q.hw_used_index;
        adopt(vq, VqPhase::Suspended);
        break;
    case prm::VirtqState::ERR:
        vq.error_type = q.error_type;
        adopt(vq, VqPhase::Error);
        break;
    }
    vq.unsure_ = false;
}

void VirtqTable::errored(Vq& vq, const prm::VirtqAttr& q) {
    vq.error_type = q.error_type;
    vq.fw_state_ = uint8_t(prm::VirtqState::ERR);
    vq.saved_avail = q.hw_available_index;
    vq.saved_used = q.hw_used_index;
    vq.errors++;
    adopt(vq, VqPhase::Error);
}

Result<void> VirtqTable::destroyed(Vq& vq) {
    vq.attr = {};
    vq.unsure_ = false;
    vq.fw_state_ = 0xff;
    return transition(vq, VqPhase::Absent);
}

void VirtqTable::failed(Vq& vq, bool never_issued) {
    vq.errors++;
    vq.unsure_ = !never_issued;
}

}  // namespace mlx5async::core
