// The virtqs' firmware objects: their umems and counters, their event QPs,
// the CREATE, and their destruction. Each step adds its commands to a batch
// the caller may share (device_start.cpp runs them beside the memory's) and
// then takes its results; the virtq table records what the firmware did.
#include <algorithm>

#include "common/base/log_sink.hpp"
#include "common/prm/counters.hpp"
#include "common/prm/general_obj.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"
#include "device_impl.hpp"

namespace mlx5async::core {
namespace {

// Step k of a chain was not issued because a step before it failed (or
// went unanswered): the error to report is that step's.
bool cancelled_for_an_earlier_step(const std::vector<devx::StepResult>& steps, size_t k) {
    if (steps.at(k).state != devx::StepState::Cancelled) return false;
    for (size_t j = 0; j < k; j++)
        if (!steps[j].ok()) return true;
    return false;
}

}  // namespace

prm::VirtqAttr Device::Impl::base_attr(const Vq& vq, uint16_t size) const {
    prm::VirtqAttr a;
    a.queue_index = vq.index;
    a.queue_size = size;
    a.virtio_q_type = ring_type();
    a.event_mode = prm::EventMode::NO_MSIX;
    if (uint32_t qpn = irqs.fw_qpn(vq.index)) {  // the device messages this QP, we write the callfd
        a.event_mode = prm::EventMode::QP;
        a.event_qpn_or_msix = qpn;
    }
    a.pd = transport.pdn();
    a.offload_type = vcaps.eth_frame_offload_type ? 0 : 1;
    for (int n = 0; n < 3; n++)
        a.umem[n] = {vq.umem[n].id(), uint32_t(vq.umem[n].size()), 0};
    a.counter_set_id = vq.counters.obj_id();
    if (vq.index & 1) a.tisn_or_qpn = transport.tisn();  // TX queues send through the TIS
    return a;
}

// Creates the objects of `rings` that do not exist (or exist with another
// ring size): one batch of their umems, counter objects and event QPs,
// each ring's CREATE after its own. Objects end in INIT.
Result<void> Device::Impl::ensure_objects(std::span<const uint16_t> rings, uint16_t size) {
    auto o = plan_objects(rings, size);
    MLX5A_CHECK(o);
    if (o->rings.empty()) return {};
    std::vector<ObjectBuild> objs;
    objs.push_back(std::move(*o));
    Result<void> no_memory = {};
    devx::BatchResult res;
    return first_error(make_objects(objs, nullptr, no_memory, res), no_memory);
}

// The rings of `rings` that need an object of this size; objects of
// another size, or in ERR, are destroyed first (one batch).
Result<ObjectBuild> Device::Impl::plan_objects(std::span<const uint16_t> rings, uint16_t size) {
    ObjectBuild o;
    o.size = size;
    devx::Batch destroys;
    for (uint16_t r : rings) {
        Vq& vq = vqs.at(r);
        // An object in ERR can only be destroyed (recovery re-creates it).
        if (vq.phase() != VqPhase::Absent && vq.size == size && vq.phase() != VqPhase::Error &&
            !vq.needs_recreation())
            continue;
        if (vq.obj) {
            vqs.mark_for_recreation(vq);  // until its destroy succeeded
            destroys.add(devx::Command::destroy(std::move(vq.obj), r));
        }
        o.rings.push_back(r);
    }
    MLX5A_CHECK(destroy_virtqs(std::move(destroys)));
    return o;
}

// One batch of virtq DESTROYs; a virtq whose destroy failed keeps its object
// (and its re-creation marker: it is destroyed again next time).
Result<void> Device::Impl::destroy_virtqs(devx::Batch&& destroys) {
    if (destroys.empty()) return {};
    // A late command may still address these objects: it is waited for first
    // (bounded by timeout_ms). A destroy that still races one fails as the
    // kernel's object lock makes it (EBUSY) and is kept.
    if (cmds->late_commands() > 0) (void)cmds->drain();
    auto res = cmds->run(std::move(destroys), BatchKind::Setup, nullptr);
    Result<void> first = {};
    for (auto& e : res.entries) {
        Vq& vq = vqs[e.queue];
        if (e.ok()) {
            first = first_error(first, vqs.destroyed(vq));
            continue;
        }
        vq.obj = std::move(e.steps[0].obj);
        first = first_error(first, unexpected(e.steps[0].error()));
    }
    return first;
}

// Objects a frontend made beyond the probe's (rings the probe did not
// pre-create, or another ring size) go when it leaves: their umems grow
// with the ring size (several MiB at 32768 entries), and the next frontend
// may never use those rings. The probe's pre-created virtqs stay. A virtq
// whose state is unknown is left to unregister_memory(), which destroys it.
void Device::Impl::release_frontend_objects() {
    const uint32_t probe_rings = cfg.queues * 2;
    std::vector<uint16_t> rings;
    devx::Batch destroys;
    for (Vq& vq : vqs) {
        const bool probes = vq.index < probe_rings && vq.size == cfg.queue_size && vq.obj;
        const bool holds = vq.obj || vq.counters || vq.umem[0] || vq.umem[1] || vq.umem[2];
        if (probes || !holds || vq.unsure()) continue;
        if (vq.obj) {
            vqs.mark_for_recreation(vq);  // until its destroy succeeded
            destroys.add(devx::Command::destroy(std::move(vq.obj), vq.index));
        }
        rings.push_back(vq.index);
    }
    if (rings.empty()) return;
    Result<void> r = destroy_virtqs(std::move(destroys));  // a refused one keeps its object
    devx::Batch counters;
    for (uint16_t i : rings)
        if (!vqs[i].obj && vqs[i].counters) counters.add(devx::Command::destroy(std::move(vqs[i].counters), i));
    auto res = cmds->run(std::move(counters), BatchKind::Teardown, nullptr);
    for (auto& e : res.entries) {
        if (e.ok()) continue;
        vqs[e.queue].counters = std::move(e.steps[0].obj);
        r = first_error(r, unexpected(e.steps[0].error()));
    }
    size_t released = 0;
    for (uint16_t i : rings) {
        Vq& vq = vqs[i];
        if (vq.obj) continue;
        for (int n = 0; n < 3; n++) {
            vq.umem[n].reset();  // deregistered before its memory goes
            vq.umem_mem[n] = {};
        }
        released++;
    }
    if (!r)
        logf(LogLevel::Warning, "%s: releasing the objects the frontend made: %s (kept, tried at the next "
             "release)", name.c_str(), prm::describe(r.error()).c_str());
    logf(LogLevel::Info, "%s: released the virtq objects of %zu rings beyond the probe's", name.c_str(),
         released);
}

// What a virtq object names at CREATE: its three umems and its counters
// object, one chain per ring, with its event QP's umem (interrupts on: the
// QP's own chain, after this one, makes the rest; take_virtq_resources
// takes it). In one chain the counters (a general-object command) follow
// the ring's small umems at once; as entries of their own they queue
// behind the chunks' registrations (doc/engine.md, "Known gaps").
Result<void> Device::Impl::add_virtq_resources(ObjectBuild& o, devx::Batch& b) {
    const bool with_counters = gcaps.has_obj_type(uint16_t(prm::ObjType::VIRTIO_Q_COUNTERS));
    o.resources.clear();
    // The buffers the rings lack, from one mapping.
    std::vector<size_t> sizes;
    for (uint16_t r : o.rings)
        for (int n = 0; n < 3; n++)
            if (needs_umem(vqs[r], n, o.size)) sizes.push_back(umem_bytes(n, o.size));
    auto bufs = devx::PageBuffer::alloc_many(sizes);
    MLX5A_CHECK(bufs);
    size_t next_buf = 0;
    for (uint16_t r : o.rings) {
        Vq& vq = vqs[r];
        RingResources rr{.ring = r};
        devx::Entry e;
        e.queue = r;
        for (int n = 0; n < 3; n++) {
            if (!needs_umem(vq, n, o.size)) continue;
            const uint64_t sz = umem_bytes(n, o.size);
            vq.umem[n].reset();  // too small: deregistered before its memory goes
            vq.umem_mem[n] = std::move((*bufs)[next_buf++]);
            rr.umem_step[n] = int(e.steps.size());
            e.steps.push_back(devx::Command::reg_umem(ctx, vq.umem_mem[n].data(), sz, IBV_ACCESS_LOCAL_WRITE, r));
        }
        const auto eqp = o.eqps.index_of(r);
        if (eqp) {
            o.eqps.umem_at[*eqp] = EventQp::Build::At{b.size(), uint16_t(e.steps.size())};
            e.steps.push_back(o.eqps.reg_umem(ctx, *eqp));
        }
        if (with_counters && !vq.counters) {
            std::vector<std::byte> in(prm::kCountersCreateInBytes);
            prm::encode_create_counters(in);
            rr.counters_step = int(e.steps.size());
            e.steps.push_back(devx::Command::create_obj(ctx, std::move(in), prm::kGeneralObjOutHdrBytes, r));
        }
        if (e.steps.empty()) continue;
        rr.entry = b.add(std::move(e));
        o.resources.push_back(rr);
    }
    return {};
}

uint64_t Device::Impl::umem_bytes(int n, uint16_t size) const {
    return std::max<uint64_t>(vcaps.umem_size(n, size), 1);
}

bool Device::Impl::needs_umem(const Vq& vq, int n, uint16_t size) const {
    return vq.umem[n].size() < umem_bytes(n, size) || !vq.umem[n].id();
}

Result<void> Device::Impl::take_virtq_resources(ObjectBuild& o, devx::BatchResult& res) {
    Result<void> first = {};
    for (const RingResources& rr : o.resources) {
        auto& steps = res.entries.at(rr.entry).steps;
        Vq& vq = vqs[rr.ring];
        for (int n = 0; n < 3; n++) {
            if (rr.umem_step[n] < 0) continue;
            auto& s = steps.at(size_t(rr.umem_step[n]));
            if (s.ok()) {
                vq.umem[n] = std::move(s.umem);
                continue;
            }
            // Unanswered: the registration may still complete over it.
            if (s.state != devx::StepState::Failed) late_umem_mem.push_back(std::move(vq.umem_mem[n]));
            if (first) {
                Error e = s.error();
                e.what = "virtq " + std::to_string(rr.ring) + " umem " + std::to_string(n + 1) + ": " +
                         prm::describe(e);
                first = unexpected(std::move(e));
            }
        }
        if (rr.counters_step < 0) continue;
        auto& s = steps.at(size_t(rr.counters_step));
        if (s.ok()) vq.counters = std::move(s.obj);
        else if (!cancelled_for_an_earlier_step(steps, size_t(rr.counters_step)))  // else that one's error
            first = first_error(first, unexpected(s.error()));
    }
    return first_error(first, irqs.take_event_qps(o.eqps, res, late_umem_mem));
}

Result<void> Device::Impl::add_virtq_creates(ObjectBuild& o, devx::Batch& b) {
    const prm::VirtqCreateIdFields& f = prm::virtq_create_id_fields();
    o.creates_at = b.size();
    for (uint16_t r : o.rings) {
        prm::VirtqAttr a = base_attr(vqs[r], o.size);
        std::vector<devx::Command::IdFrom> ids;
        for (const RingResources& rr : o.resources) {
            if (rr.ring != r) continue;
            for (int n = 0; n < 3; n++) {
                if (rr.umem_step[n] < 0) continue;
                a.umem[n] = {0, uint32_t(umem_bytes(n, o.size)), 0};
                ids.push_back({f.umem_id[n], uint16_t(rr.umem_step[n]), int32_t(rr.entry)});
            }
            if (rr.counters_step >= 0)
                ids.push_back({f.counter_set_id, uint16_t(rr.counters_step), int32_t(rr.entry)});
        }
        if (auto qp = o.eqps.fw_qpn_from(r, f.event_qpn)) {
            a.event_mode = prm::EventMode::QP;
            ids.push_back(*qp);
        }
        auto c = devx::Command::create_virtq(ctx, a, r);
        MLX5A_CHECK(c);
        c->ids_from = std::move(ids);
        b.add(std::move(*c));
    }
    return {};
}

// The objects end in INIT, subscribed to their error events.
Result<void> Device::Impl::take_virtq_creates(ObjectBuild& o, devx::BatchResult& res) {
    Result<void> first = {};
    for (size_t i = 0; i < o.rings.size(); i++) {
        auto& e = res.entries.at(o.creates_at + i);
        Vq& vq = vqs[e.queue];
        if (!e.ok()) {
            if (first) first = unexpected(e.steps.back().error());
            continue;
        }
        first = first_error(first, vqs.created(vq, std::move(e.steps[0].obj), o.size, base_attr(vq, o.size)));
        if (events.get()) {
            const uint16_t ev[] = {prm::kEventObjectChange};
            auto sub = events.subscribe(vq.obj, ev, vq.index);
            if (!sub) logf(LogLevel::Warning, "%s: virtq %u: no error events: %s", name.c_str(),
                           vq.index, prm::describe(sub.error()).c_str());
        }
    }
    return first;
}

}  // namespace mlx5async::core
