#include "device.hpp"

#include <cerrno>
#include <cstring>

#include "common/prm/opcodes.hpp"
#include "dispatch.hpp"
#if __has_include("guest_memory.hpp")
#include "guest_memory.hpp"
#define MLX5EMU_HAVE_TRANSLATE 1
#endif
#include "virtq_fsm.hpp"

namespace mlx5async::emu {
namespace {

std::unique_ptr<Clock> make_clock(ClockKind k) {
    if (k == ClockKind::Manual) return std::make_unique<ManualClock>();
    return std::make_unique<SteadyClock>();
}

constexpr uint16_t kVirtqType = uint16_t(prm::ObjType::VIRTIO_NET_Q);

}  // namespace

Device::Device(std::string name, Profile p, uint32_t index, std::unique_ptr<dp::Wire> wire)
    : name_(std::move(name)),
      profile_(std::move(p)),
      clock_(make_clock(profile_.clock)),
      state_(profile_),
      wire_(wire ? std::move(wire) : std::make_unique<dp::Wire>()),
      datapath_(std::make_unique<dp::Datapath>(state_, index, profile_.virtio.freeze_to_rdy_supported,
                                               *wire_)),
      cmd_if_(profile_, *clock_, trace_, index) {
    handle_.magic = kDeviceMagic;
    handle_.dev = this;
    handle_.pub.node_type = IBV_NODE_CA;
    handle_.pub.transport_type = IBV_TRANSPORT_IB;
    std::snprintf(handle_.pub.name, sizeof handle_.pub.name, "%s", name_.c_str());
    std::snprintf(handle_.pub.dev_name, sizeof handle_.pub.dev_name, "uverbs-emu%u", index);
    if (auto* m = dynamic_cast<ManualClock*>(clock_.get()))
        m->set_listener([this] { cmd_if_.wake(); });
    state_.datapath = datapath_.get();
#ifdef MLX5EMU_HAVE_TRANSLATE
    // Guest memory only through mkey -> umem (guest_memory.cpp).
    datapath_->set_translator([this](uint32_t mkey, uint64_t addr, size_t len)
                                  -> Result<std::vector<dp::HostSpan>> {
        auto spans = translate(state_, mkey, addr, len);  // state_.mu held by the datapath
        if (!spans) return unexpected(spans.error());
        std::vector<dp::HostSpan> out;
        for (const GuestSpan& s : *spans) out.push_back({s.host, s.len});
        return out;
    });
#endif
}

Device::~Device() { close(); }

void Device::close() {
    closed_ = true;
    datapath_->stop();
    cmd_if_.shutdown();
}

void Device::advance_clock(std::chrono::nanoseconds d) {
    if (auto* m = dynamic_cast<ManualClock*>(clock_.get())) m->advance(d.count());
}

CmdOutcome Device::execute(const CmdDesc& d, SemanticsFn fn) {
    if (closed_) return {ENXIO, 0, 0};
    FaultDecision dec = faults_.decide(d.opcode, d.obj_type, d.obj_id);
    if (dec.busy) {
        cmd_if_.record_rejected(d, EBUSY);
        return {EBUSY, 0, 0};
    }
    return cmd_if_.run_blocking(d, {dec.extra_ns, dec.hang, dec.answer_late_ns},
                                [&fn, dec](bool aborted) { return fn(aborted, dec); });
}

int Device::execute_async(const CmdDesc& d, SemanticsFn fn) {
    if (closed_) return ENXIO;
    FaultDecision dec = faults_.decide(d.opcode, d.obj_type, d.obj_id);
    if (dec.busy) {
        cmd_if_.record_rejected(d, EBUSY);
        return EBUSY;
    }
    // An async command is answered when it executes: a late answer is a delay.
    return cmd_if_.submit_async(d, {dec.extra_ns + dec.answer_late_ns, dec.hang},
                                [fn = std::move(fn), dec](bool aborted) { return fn(aborted, dec); });
}

Result<void> Device::force_virtq_error(uint32_t obj_id, uint8_t error_type) {
    {
        std::lock_guard lk(state_.mu);
        auto vq = state_.virtqs.find(obj_id);
        if (!vq) return unexpected(vq.error());
        MLX5A_CHECK(transition(*vq, {prm::VirtqState::ERR, VqCause::DeviceError, error_type},
                               profile_.virtio.freeze_to_rdy_supported));
    }
    auto eqe = object_change_eqe(kVirtqType, obj_id);
    state_.events.raise(kVirtqType, obj_id, prm::kEventObjectChange, eqe);
    return {};
}

Result<VirtqInfo> Device::virtq_info(uint32_t obj_id) {
    std::lock_guard lk(state_.mu);
    auto vq = state_.virtqs.find(obj_id);
    if (!vq) return unexpected(vq.error());
    return VirtqInfo{vq->state(), vq->attr.hw_available_index, vq->attr.hw_used_index,
                     vq->error_type(), vq->kicks, vq->irq, vq->frames, vq->attr};
}

Result<void> Device::advance_virtq(uint32_t obj_id, uint16_t avail_delta, uint16_t used_delta) {
    std::lock_guard lk(state_.mu);
    auto vq = state_.virtqs.find(obj_id);
    if (!vq) return unexpected(vq.error());
    if (vq->state() != prm::VirtqState::RDY)
        return fail(Errc::State, "advance_virtq: indexes move only in RDY");
    vq->attr.hw_available_index = uint16_t(vq->attr.hw_available_index + avail_delta);
    vq->attr.hw_used_index = uint16_t(vq->attr.hw_used_index + used_delta);
    return {};
}

Result<void> Device::kick(uint32_t obj_id) {
    std::lock_guard lk(state_.mu);
    auto vq = state_.virtqs.find(obj_id);
    if (!vq) return unexpected(vq.error());
    vq->kicks.rung(vq->state(), profile_.replay_early_kicks);
    if (vq->state() == prm::VirtqState::RDY) datapath_->notify();
    return {};
}

Result<UmemInfo> Device::umem_info(uint32_t umem_id) {
    std::lock_guard lk(state_.mu);
    auto u = state_.umems.find(umem_id);
    if (!u) return unexpected(u.error());
    return UmemInfo{u->addr, u->size, u->refs, u->host(0), u->pin.own_view()};
}

Result<CqInfo> Device::cq_info(uint32_t cqn) {
    std::lock_guard lk(state_.mu);
    auto c = state_.cqs.find(cqn);
    if (!c) return unexpected(c.error());
    return CqInfo{c->produced, c->armed, c->arm_ci, c->arms, c->events, c->refs};
}

Result<QpInfo> Device::qp_info(uint32_t qpn) {
    std::lock_guard lk(state_.mu);
    auto q = state_.qps.find(qpn);
    if (!q) return unexpected(q.error());
    return QpInfo{q->state, q->remote_qpn, q->firmware, q->rq_consumed, q->refs};
}

Result<SqInfo> Device::sq_info(uint32_t sqn) {
    std::lock_guard lk(state_.mu);
    auto q = state_.sqs.find(sqn);
    if (!q) return unexpected(q.error());
    return SqInfo{q->state, q->consumed, q->sent, q->completions, q->error};
}

Result<void> Device::set_virtq_counters(uint32_t counters_id, const prm::VirtqCounters& v) {
    std::lock_guard lk(state_.mu);
    auto c = state_.counters.find(counters_id);
    if (!c) return unexpected(c.error());
    c->values = v;
    return {};
}

size_t Device::virtq_count() {
    std::lock_guard lk(state_.mu);
    return state_.virtqs.size();
}

ObjectCounts Device::object_counts() {
    std::lock_guard lk(state_.mu);
    return {state_.pds.size(),      state_.umems.size(),  state_.mkeys.size(),
            state_.counters.size(), state_.virtqs.size(), state_.cqs.size(),
            state_.qps.size(),      state_.uars.size(),   state_.sqs.size()};
}

std::vector<uint32_t> Device::virtqs_of_queue(uint16_t queue_index) {
    std::lock_guard lk(state_.mu);
    std::vector<uint32_t> ids;
    state_.virtqs.for_each([&](uint32_t id, VirtqObj& v) {
        if (v.attr.queue_index == queue_index) ids.push_back(id);
    });
    return ids;
}

void Device::drop_context_objects(uint32_t ctx) {
    datapath_->drop_context(ctx);
    std::lock_guard lk(state_.mu);
    std::vector<uint32_t> ids;
    state_.virtqs.for_each([&](uint32_t id, VirtqObj& v) { if (v.ctx == ctx) ids.push_back(id); });
    for (uint32_t id : ids) remove_virtq(state_, id);
    // QPs and SQs pin CQs, all pin umems and UARs; SQs pin TISes.
    std::vector<uint32_t> sqs, qps, cqs;
    state_.sqs.for_each([&](uint32_t id, SqObj& q) { if (q.ctx == ctx) sqs.push_back(id); });
    for (uint32_t id : sqs) remove_sq(state_, id);
    state_.qps.for_each([&](uint32_t id, QpObj& q) { if (q.ctx == ctx) qps.push_back(id); });
    for (uint32_t id : qps) remove_qp(state_, id);
    state_.cqs.for_each([&](uint32_t id, CqObj& c) { if (c.ctx == ctx) cqs.push_back(id); });
    for (uint32_t id : cqs) remove_cq(state_, id);
    // Indirect mkeys first: they pin direct ones, which pin umems.
    for (bool indirect : {true, false}) {
        std::vector<uint32_t> mk;
        state_.mkeys.for_each([&](uint32_t id, MkeyObj& m) {
            if (m.ctx == ctx && m.indirect == indirect) mk.push_back(id);
        });
        for (uint32_t id : mk) remove_mkey(state_, id);
    }
    auto drop = [ctx](auto& table) {
        std::vector<uint32_t> v;
        table.for_each([&](uint32_t id, auto& o) { if (o.ctx == ctx) v.push_back(id); });
        for (uint32_t id : v) table.erase(id);
    };
    drop(state_.counters);
    drop(state_.tises);  // before their transport domains
    drop(state_.tds);
    drop(state_.umems);
    drop(state_.pds);
    drop(state_.uars);
    drop(state_.vars);
}

}  // namespace mlx5async::emu
