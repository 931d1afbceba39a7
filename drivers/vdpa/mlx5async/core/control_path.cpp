// The batched control path: every multi-queue operation is one engine batch
// (suspend: MODIFY->SUSPEND then QUERY per queue, pipelined; resume/start: one
// MODIFY per queue), with a result per queue and nothing lost on failure.
#include <algorithm>

#include "common/base/log_sink.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"
#include "device_impl.hpp"

namespace mlx5async::core {

// MODIFY fields to bring an INIT/SUSPEND object to RDY: the state, plus every
// field whose value differs from what the object holds (all of them from
// INIT). `vr` is vhost's ring when known. Its indexes are authoritative only
// at dev_conf (`vhost_indexes`); after a suspend of ours the saved ones are.
prm::VirtqAttr Device::Impl::start_attr(const Vq& vq, const VringConfig* vr,
                                        bool vhost_indexes) const {
    namespace mb = prm::modify_bits;
    prm::VirtqAttr a = vq.attr;
    a.modify_field_select = mb::STATE;
    a.state = prm::VirtqState::RDY;
    const bool fresh = vq.phase() == VqPhase::Init;
    if (vr) {
        if (fresh || a.desc_addr != vr->desc_gpa || a.available_addr != vr->avail_gpa ||
            a.used_addr != vr->used_gpa) {
            a.desc_addr = vr->desc_gpa;
            a.available_addr = vr->avail_gpa;
            a.used_addr = vr->used_gpa;
            a.modify_field_select |= mb::VIRTIO_Q_ADDRS;
        }
        uint16_t avail = vhost_indexes ? vr->last_avail_idx : vq.saved_avail;
        uint16_t used = vhost_indexes ? vr->last_used_idx : vq.saved_used;
        // vq.attr's indexes are the object's (programmed, or queried at its stop).
        if (fresh || avail != vq.attr.hw_available_index) {
            a.hw_available_index = avail;
            a.modify_field_select |= mb::VIRTIO_Q_AVAIL_IDX;
        }
        if (fresh || used != vq.attr.hw_used_index) {
            a.hw_used_index = used;
            a.modify_field_select |= mb::VIRTIO_Q_USED_IDX;
        }
        // An object made before the features were known (queues=) is split.
        if (a.virtio_q_type != ring_type()) {
            a.virtio_q_type = ring_type();
            a.modify_field_select |= mb::Q_TYPE;
        }
        bool v1 = (guest.features & vfeat::VERSION_1) != 0;
        if (fresh || a.virtio_version_1_0 != v1) {
            a.virtio_version_1_0 = v1;
            a.modify_field_select |= mb::QUEUE_VIRTIO_VERSION;
        }
        // The negotiated offloads (csum, TSO ...), in the PRM's numbering.
        uint16_t qf = prm::queue_feature_mask(guest.features);
        if (fresh || prm::queue_feature_mask_12_3(qf) != a.queue_feature_bit_mask_12_3 ||
            prm::queue_feature_mask_2_0(qf) != a.queue_feature_bit_mask_2_0) {
            a.queue_feature_bit_mask_12_3 = prm::queue_feature_mask_12_3(qf);
            a.queue_feature_bit_mask_2_0 = prm::queue_feature_mask_2_0(qf);
            a.modify_field_select |= mb::QUEUE_FEATURES;
        }
    } else if (fresh) {
        // Re-created after a failed resume path: put the saved indexes back.
        a.hw_available_index = vq.saved_avail;
        a.hw_used_index = vq.saved_used;
        a.modify_field_select |= mb::VIRTIO_Q_AVAIL_IDX | mb::VIRTIO_Q_USED_IDX;
    }
    // The guest-memory mkey, in the same MODIFY (guest_memory.hpp).
    if (mem->mkey() && (fresh || a.virtio_q_mkey != mem->mkey())) {
        a.virtio_q_mkey = mem->mkey();
        a.modify_field_select |= mb::VIRTIO_Q_MKEY;
    }
    if (dirty->on() && (fresh || !a.dirty_bitmap_dump_enable || a.dirty_bitmap_mkey != dirty->mkey())) {
        a.dirty_bitmap_mkey = dirty->mkey();
        a.dirty_bitmap_addr = dirty->log().host_addr;
        a.dirty_bitmap_size = uint32_t(dirty->log().size);
        a.vhost_log_page = dirty->log().log_page;
        a.dirty_bitmap_dump_enable = true;
        a.modify_field_select |= mb::DIRTY_BITMAP_PARAMS | mb::DIRTY_BITMAP_DUMP_ENABLE;
    } else if (!dirty->on() && (a.dirty_bitmap_dump_enable || a.dirty_bitmap_mkey)) {
        // Logging ended (LOG_ALL off): the virtq stops naming a log vhost
        // may have unmapped.
        name_no_log(a);
    }
    return a;
}

Result<void> Device::Impl::suspend_rings(std::span<const uint16_t> rings) {
    OpTiming t;
    t.op = Op::Suspend;
    uint64_t t0 = steady_ns();
    devx::Batch b;
    for (uint16_t r : rings)
        if (vqs[r].phase() == VqPhase::Ready) b.add_suspend(vqs[r].obj, r);
    t.queues = uint32_t(b.size());
    t.prepare_ns = steady_ns() - t0;
    auto res = cmds->run(std::move(b), BatchKind::Suspend, &t);
    Result<void> first = {};
    for (auto& e : res.entries) {
        Vq& vq = vqs[e.queue];
        const auto& mod = e.steps[0];
        const auto& qry = e.steps[1];
        if (mod.ok()) first = first_error(first, vqs.suspended(vq));
        if (qry.ok() && qry.virtq) {
            vqs.stopped_at(vq, *qry.virtq);
            continue;
        }
        // Indexes stay the last known-good ones; the engine logged the step.
        // A MODIFY never issued changed nothing; any other failure may have.
        vqs.failed(vq, !mod.ok() && mod.never_issued);
        if (first) first = unexpected((mod.ok() ? qry : mod).error());
    }
    t.total_ns = steady_ns() - t0;
    record_timing(t);
    return first;
}

Result<void> Device::Impl::resume_rings(std::span<const uint16_t> rings, bool vhost_indexes) {
    OpTiming t;
    t.op = Op::Resume;
    uint64_t t0 = steady_ns();
    // Without freeze_to_rdy a SUSPENDed object cannot go back to RDY:
    // re-create it (INIT) and start it from the saved indexes.
    std::vector<uint16_t> recreate;
    for (uint16_t r : rings) {
        if (!vcaps.freeze_to_rdy_supported && vqs[r].phase() == VqPhase::Suspended)
            vqs.mark_for_recreation(vqs[r]);
        if (vqs[r].needs_recreation() && vqs[r].phase() != VqPhase::Absent) recreate.push_back(r);
    }
    if (!recreate.empty()) MLX5A_CHECK(ensure_objects(recreate, vqs[recreate[0]].size));
    auto vring_of = [&](uint16_t r) { return guest_valid ? guest.vring(r) : nullptr; };
    devx::Batch b;
    std::vector<prm::VirtqAttr> sent;  // per entry, what the MODIFY sets
    for (uint16_t r : rings) {
        Vq& vq = vqs[r];
        if (vq.phase() != VqPhase::Init && vq.phase() != VqPhase::Suspended) continue;
        sent.push_back(start_attr(vq, vring_of(r), vhost_indexes));
        auto c = devx::Command::modify_virtq(vq.obj, sent.back(), r);
        MLX5A_CHECK(c);
        b.add(std::move(*c));
    }
    t.queues = uint32_t(b.size());
    const size_t starts = b.size();
    add_mkey_repoints(b, sent, rings);  // idle virtqs naming an old mkey
    t.prepare_ns = steady_ns() - t0;
    auto res = cmds->run(std::move(b), BatchKind::Resume, &t);
    Result<void> first = {};
    for (size_t i = 0; i < res.entries.size(); i++) {
        auto& e = res.entries[i];
        Vq& vq = vqs[e.queue];
        if (i >= starts) {
            if (e.ok()) vq.attr.virtio_q_mkey = sent[i].virtio_q_mkey;
            else if (!e.steps[0].never_issued) vqs.may_have_changed(vq);  // it may still land
            continue;
        }
        if (!e.ok()) {
            // Abandoned (Commands::abandon) before it was issued: not a failure.
            const bool abandoned = e.steps[0].state == devx::StepState::Cancelled && e.steps[0].never_issued;
            if (!abandoned) vqs.failed(vq, e.steps[0].never_issued);
            if (first) first = unexpected(e.steps[0].error());
            continue;
        }
        first = first_error(first, vqs.started(vq, sent[i]));
    }
    t.total_ns = steady_ns() - t0;
    record_timing(t);
    return first;
}

// The virtqs whose last command failed or timed out. A command that timed
// out is still the firmware's: it may complete (and take effect) later, so
// every late command is waited for first (Engine::drain, bounded by
// timeout_ms), then the virtqs are queried in one batch and the driver's
// mirror takes the device's state, indexes and fields. A virtq whose
// command is still unanswered stays unsure.
Result<void> Device::Impl::reconcile() {
    std::vector<uint16_t> todo;
    for (Vq& vq : vqs) {
        vqs.settle(vq);
        if (vq.unsure()) todo.push_back(vq.index);
    }
    if (todo.empty()) return {};
    if (!cmds->drain()) return still_unsure("the last command is still unanswered");
    learn(todo);
    return still_unsure("the query of the state failed");
}

// The state, indexes and fields of `rings` (with objects), queried in one
// batch whatever is still unanswered: the caller knows what a late answer
// could still change.
void Device::Impl::learn(std::span<const uint16_t> rings) {
    devx::Batch b;
    for (uint16_t r : rings)
        if (vqs[r].obj) b.add(devx::Command::query_virtq(vqs[r].obj, r));
    if (b.empty()) return;
    auto res = cmds->run(std::move(b), BatchKind::Recovery, nullptr);
    for (auto& e : res.entries) {
        const auto& step = e.steps.at(0);
        if (!step.ok() || !step.virtq) continue;
        vqs.learned(vqs[e.queue], *step.virtq);
        logf(LogLevel::Info, "%s: virtq %u: state learned from the device: %s, avail %u used %u",
             name.c_str(), e.queue, prm::virtq_state_name(step.virtq->state),
             step.virtq->hw_available_index, step.virtq->hw_used_index);
    }
}

// A stop's suspend of the RDY `rings`: vhost starts them elsewhere from
// the indexes this hands back, so a ring the batch did not stop for
// certain (its SUSPEND refused, hung or late, or its QUERY) gets a second
// round: queried, and suspended again where still RDY. What may still be
// unanswered is this stop's own SUSPEND or QUERY, which cannot move a
// suspended ring when it lands, so the round does not wait for it. Fails
// only for rings still not known stopped.
Result<void> Device::Impl::stop_rings(std::span<const uint16_t> rings) {
    Result<void> first = suspend_rings(rings);
    if (first) return first;
    auto uncertain = [&] {
        std::vector<uint16_t> v;
        for (uint16_t r : rings)
            if (vqs[r].phase() != VqPhase::Suspended || vqs[r].unsure()) v.push_back(r);
        return v;
    };
    auto again = uncertain();
    learn(again);
    std::vector<uint16_t> ready;
    for (uint16_t r : again)
        if (vqs[r].phase() == VqPhase::Ready && !vqs[r].unsure()) ready.push_back(r);
    if (!ready.empty()) (void)suspend_rings(ready);
    learn(uncertain());  // a second QUERY that failed: one more
    const auto left = uncertain();
    logf(left.empty() ? LogLevel::Warning : LogLevel::Error,
         "%s: stop: %zu of %zu virtqs not stopped by the first suspend (%s); %zu of them stopped "
         "on the second round",
         name.c_str(), again.size(), rings.size(), prm::describe(first.error()).c_str(),
         again.size() - left.size());
    return left.empty() ? Result<void>{} : first;
}

// An error naming the virtqs still unsure (none: success): the device may
// run them whatever the driver last told it.
Result<void> Device::Impl::still_unsure(const char* why) const {
    std::string list;
    unsigned n = 0;
    for (const Vq& vq : vqs)
        if (vq.unsure()) list += (n++ ? ", " : "") + std::to_string(vq.index);
    if (!n) return {};
    return fail(Errc::State, (n == 1 ? "virtq " : "virtqs ") + list + ": state unknown, " + why +
                                 (n == 1 ? "; it may still run" : "; they may still run"));
}

// Idle virtqs (INIT/SUSPEND) that a start batch does not bring up but that
// still name an old mkey: a MODIFY of virtio_q_mkey alone, in that batch.
void Device::Impl::add_mkey_repoints(devx::Batch& b, std::vector<prm::VirtqAttr>& sent,
                                     std::span<const uint16_t> starting) {
    for (Vq& vq : vqs) {
        if (vq.phase() != VqPhase::Init && vq.phase() != VqPhase::Suspended) continue;
        if (!vq.attr.virtio_q_mkey || vq.attr.virtio_q_mkey == mem->mkey()) continue;
        if (std::find(starting.begin(), starting.end(), vq.index) != starting.end()) continue;
        prm::VirtqAttr a = vq.attr;
        a.modify_field_select = prm::modify_bits::VIRTIO_Q_MKEY;
        a.virtio_q_mkey = mem->mkey();
        auto c = devx::Command::modify_virtq(vq.obj, a, vq.index);
        if (!c) continue;  // cannot happen for a stored attr; the old mkey stays retired
        b.add(std::move(*c));
        sent.push_back(a);
    }
}

// Every RDY (or unsure) virtq's state and indexes, queried in one batch; a
// virtq that does not answer keeps its saved values (live false).
std::vector<VqInfo> Device::Impl::query_live() {
    devx::Batch b;
    for (const Vq& q : vqs)  // an unsure one shows what the device holds
        if (q.obj && (q.phase() == VqPhase::Ready || q.unsure()))
            b.add(devx::Command::query_virtq(q.obj, q.index));
    std::vector<VqInfo> v;
    for (const Vq& q : vqs) v.push_back(saved_info(q));
    if (b.empty()) return v;
    auto res = cmds->run(std::move(b), BatchKind::Query, nullptr);
    for (const auto& e : res.entries) {
        const auto& s = e.steps.at(0);
        if (!s.ok() || !s.virtq) continue;  // the engine logged it; saved values stand
        VqInfo& i = v[size_t(e.queue)];
        i.fw_state = uint8_t(s.virtq->state);
        i.error_type = s.virtq->error_type;
        i.hw_available_index = s.virtq->hw_available_index;
        i.hw_used_index = s.virtq->hw_used_index;
        i.live = true;
    }
    return v;
}

}  // namespace mlx5async::core
