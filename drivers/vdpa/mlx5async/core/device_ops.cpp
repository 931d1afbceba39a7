// Device operations driven by vhost (dev_conf, dev_close, ring enable,
// LOG_ALL) and by applications (suspend/resume all, counters, faults).
#include <algorithm>

#include "common/base/log_sink.hpp"
#include "common/prm/counters.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"
#include "device_impl.hpp"

namespace mlx5async::core {
namespace {

// An unsure virtq (reconcile() could not learn it) is left alone: a command
// built on a phase it may not be in would fail, or undo what a late
// command did.
std::vector<uint16_t> rings_in_phase(const VirtqTable& vqs, VqPhase p) {
    std::vector<uint16_t> v;
    for (const Vq& q : vqs)
        if (q.phase() == p && !q.unsure) v.push_back(q.index);
    return v;
}

}  // namespace

Result<void> Device::configure(const GuestConfig& g) {
    Impl& d = *impl_;
    std::lock_guard lk(d.mu);
    for (const auto& vr : g.vrings)
        if (vr.index >= d.vqs.size())
            return fail(Errc::InvalidArgument, "vring " + std::to_string(vr.index) +
                                                   " beyond the device's " +
                                                   std::to_string(d.vqs.size()) + " virtqs");
    Result<void> known = d.reconcile();
    const uint64_t registrations = d.mem.registrations;
    if (g.mtu && d.port_mtu && g.mtu > d.port_mtu)
        logf(LogLevel::Warning,
             "%s: the frontend's MTU %u exceeds the port's %u: the port drops longer packets",
             d.name.c_str(), g.mtu, d.port_mtu);
    // Rings vhost has not enabled stay as they are (set_vring_state brings
    // them). A ring is checked against the table this dev_conf registers.
    const std::vector<MemRegion> table = sorted_regions(g.mem);
    std::vector<uint16_t> start;
    Result<void> bad_ring = {};
    for (const auto& vr : g.vrings) {
        Vq& vq = d.vqs[vr.index];
        // Enabled later (set_vring_state): it starts from this session's
        // vhost indexes, not from a previous session's suspend.
        vq.start_from_vhost = !vq.enabled;
        if (!vq.enabled || vq.unsure) continue;
        if (auto ok = validate_vring(vr, table); !ok) {  // never started
            bad_ring = first_error(bad_ring, ok);
            continue;
        }
        start.push_back(vr.index);
        // A different ring size needs a new object (queue_size is not modifiable).
        if (vq.phase() != VqPhase::Absent && vq.size != vr.size) d.vqs.mark_for_recreation(vq);
    }
    // Grouped by ring size: objects are created per size.
    Device::Impl::RingGroups groups;
    for (uint16_t r : start) {
        const uint16_t sz = g.vring(r)->size;  // `start` holds rings of g
        auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == sz; });
        if (it == groups.end()) it = groups.insert(groups.end(), {sz, {}});
        it->second.push_back(r);
    }
    // The memory registration (none while the table is unchanged) and the
    // missing virtq objects, in shared batches; a refused or failed table
    // leaves no guest for later ring enables to start.
    bool memory_ok = false;
    auto prepared = d.prepare_start(g.mem, groups, memory_ok);
    if (!memory_ok) {
        d.guest_valid = false;
        return prepared;
    }
    d.guest = g;
    d.guest_valid = true;
    MLX5A_CHECK(prepared);
    d.ledger.mark(LedgerPhase::VirtqsCreated);
    if (d.irq_relay) {  // this dev_conf's callfds, before a ring can raise an interrupt
        std::vector<std::pair<uint16_t, int>> calls;
        for (const auto& vr : g.vrings) calls.emplace_back(vr.index, vr.callfd);
        if (auto c = d.irq_relay->set_callfds(calls); !c)
            logf(LogLevel::Warning, "%s: interrupts: %s", d.name.c_str(), to_string(c.error()).c_str());
    }
    auto r = d.resume_rings(start, /*vhost_indexes=*/true);
    d.ledger.mark(LedgerPhase::AllReady);
    const auto ready = std::count_if(start.begin(), start.end(),
                                     [&](uint16_t i) { return d.vqs[i].phase() == VqPhase::Ready; });
    d.ledger.set_start(uint32_t(ready),
                       d.mem.registrations != registrations ? uint32_t(d.mem.current.regions.size()) : 0);
    // An old table or log goes once no virtq names it, after this returns:
    // its destroys are not the guest's downtime.
    if (!d.mem.retired.empty() || !d.dirty.retired.empty()) d.releaser->request();
    if (d.kick_relay) {  // this dev_conf's kickfds; held kicks replay now
        std::vector<std::pair<uint16_t, int>> kicks;
        for (const auto& vr : g.vrings) kicks.emplace_back(vr.index, vr.kickfd);
        if (auto k = d.kick_relay->set_rings(kicks); !k)
            logf(LogLevel::Warning, "%s: kick relay: %s", d.name.c_str(), to_string(k.error()).c_str());
        d.kick_relay->set_open(true);
    }
    return first_error(known, first_error(bad_ring, r));
}

Result<void> Device::close(std::vector<RingIndexes>& out) {
    Impl& d = *impl_;
    std::lock_guard lk(d.mu);
    if (d.kick_relay) d.kick_relay->set_open(false);  // gated, kept registered
    d.ledger.mark(LedgerPhase::SuspendIssued);
    Result<void> known = d.reconcile();
    auto ready = rings_in_phase(d.vqs, VqPhase::Ready);
    // A virtq that may still run is never reported stopped.
    Result<void> r = first_error(known, d.suspend_rings(ready));
    d.ledger.mark(LedgerPhase::SuspendDone);
    out.clear();
    for (const auto& vr : d.guest.vrings) {
        const Vq& vq = d.vqs[vr.index];
        RingIndexes ri;
        ri.ring = vr.index;
        if (vq.phase() == VqPhase::Absent) {
            // Never started on the device: vhost's own indexes stand.
            ri.last_avail_idx = vr.last_avail_idx;
            ri.last_used_idx = vr.last_used_idx;
        } else {
            ri.last_avail_idx = vq.saved_avail;
            ri.last_used_idx = vq.saved_used;
            ri.from_device = vq.phase() == VqPhase::Suspended && !vq.unsure;
        }
        out.push_back(ri);
    }
    return r;
}

void Device::cleanup() {
    Impl& d = *impl_;
    std::lock_guard lk(d.mu);
    // vhost connection gone: the rings and memory belong to nobody now.
    d.guest_valid = false;
    for (Vq& vq : d.vqs) vq.enabled = false;
    if (d.irq_relay) d.irq_relay->clear_callfds();
    d.unregister_memory();  // vhost unmaps the regions after this
    // And its log: the next start clears the virtqs' bitmap fields
    // (start_attr), then the registration goes.
    d.dirty.on = false;
    if (!d.dirty.mem.empty()) d.dirty.retired.push_back(std::move(d.dirty.mem));
    d.release_retired_memory();
}

void Device::set_vring_state(uint16_t ring, bool enable) {
    std::lock_guard lk(impl_->mu);
    if (ring < impl_->vqs.size()) impl_->vqs[ring].enabled = enable;
}

void Device::update_vring(const VringConfig& v) {
    Impl& d = *impl_;
    std::lock_guard lk(d.mu);
    if (!d.guest_valid || v.index >= d.vqs.size()) return;
    Vq& vq = d.vqs[v.index];
    if (vq.phase() == VqPhase::Ready) return;
    if (VringConfig* known = d.guest.vring(v.index)) *known = v;
    else d.guest.vrings.push_back(v);
    if (vq.phase() != VqPhase::Absent && vq.size != v.size) d.vqs.mark_for_recreation(vq);
    if (vq.phase() != VqPhase::Absent &&
        (v.last_avail_idx != vq.saved_avail || v.last_used_idx != vq.saved_used))
        vq.start_from_vhost = true;
}

void Device::set_callfd(uint16_t ring, int fd) {
    if (!impl_->irq_relay) return;
    if (auto r = impl_->irq_relay->set_callfd(ring, fd); !r)
        logf(LogLevel::Warning, "%s: interrupts: %s", impl_->name.c_str(), to_string(r.error()).c_str());
}

Device::IrqStats Device::irq_stats() const {
    IrqStats s;
    if (!impl_->irq_relay) return s;
    auto r = impl_->irq_relay->stats();
    return {true, r.events, r.completions, r.calls, r.no_callfd};
}

uint64_t Device::irq_calls(uint16_t ring) const {
    return impl_->irq_relay ? impl_->irq_relay->calls(ring) : 0;
}

Result<void> Device::flush_vring_states(std::vector<RingIndexes>& disabled) {
    Impl& d = *impl_;
    std::lock_guard lk(d.mu);
    Result<void> r = d.reconcile();
    std::vector<uint16_t> stop, start;
    for (const Vq& vq : d.vqs) {
        if (vq.unsure) continue;
        if (!vq.enabled && vq.phase() == VqPhase::Ready) stop.push_back(vq.index);
        const VringConfig* vr = d.guest.vring(vq.index);
        if (!vq.enabled || !vr || !d.guest_valid || vq.phase() == VqPhase::Ready) continue;
        if (auto ok = validate_vring(*vr, d.mem.current.regions); !ok) {  // never started
            r = first_error(r, ok);
            continue;
        }
        start.push_back(vq.index);
    }
    if (!stop.empty()) r = first_error(r, d.suspend_rings(stop));  // stops go first whatever failed
    for (uint16_t s : stop)
        disabled.push_back({s, d.vqs[s].saved_avail, d.vqs[s].saved_used,
                            d.vqs[s].phase() == VqPhase::Suspended});
    if (!start.empty()) {
        // A newly enabled ring without a usable object (none, ERR, another
        // ring size) gets one first.
        std::vector<uint16_t> absent;
        for (uint16_t s : start)
            if (d.vqs[s].phase() == VqPhase::Absent || d.vqs[s].phase() == VqPhase::Error ||
                d.vqs[s].needs_recreation())
                absent.push_back(s);
        for (uint16_t s : absent) {
            const uint16_t one[] = {s};
            MLX5A_CHECK(d.ensure_objects(one, d.guest.vring(s)->size));  // started rings have one
        }
        std::vector<uint16_t> fresh, again;  // first start this session / restart
        for (uint16_t s : start) (d.vqs[s].start_from_vhost ? fresh : again).push_back(s);
        for (uint16_t s : fresh) d.vqs[s].start_from_vhost = false;
        for (auto* set : {&fresh, &again}) {
            if (set->empty()) continue;
            auto rr = d.resume_rings(*set, /*vhost_indexes=*/set == &fresh);
            if (r && !rr) r = rr;
        }
    }
    return r;
}

// The vhost log registered for the device (DPDK mlx5_vdpa_dirty_bitmap_set):
// a umem over it and a direct mkey addressed by its host address.
static Result<MemRegistration> register_log(Device::Impl& d, const DirtyLog& log) {
    MemRegistration reg;
    reg.regions = {MemRegion{log.host_addr, log.size, log.host_addr}};
    auto u = devx::Umem::reg_existing(d.ctx, reinterpret_cast<void*>(uintptr_t(log.host_addr)), log.size);
    MLX5A_CHECK(u);
    reg.umems.push_back(std::move(*u));
    devx::DevxObj obj;
    auto mk = d.create_mkey(
        prm::direct_mkey_attr(reg.umems.back().id(), 0, log.host_addr, log.size, d.pd.pdn()), obj,
        BatchKind::DirtyLog);
    MLX5A_CHECK(mk);
    reg.direct.push_back(std::move(obj));
    reg.mkey = *mk;
    return reg;
}

static bool same_log(const Device::Impl& d, const DirtyLog& log) {
    const auto& lr = d.dirty.mem.regions;
    return !lr.empty() && lr[0].host_addr == log.host_addr && lr[0].size == log.size &&
           d.dirty.log.log_page == log.log_page;
}

// vhost maps the log anew at every SET_LOG_BASE (QEMU sends one per queue
// pair) and unmaps the previous mapping, so a changed base or size means a
// new registration: the virtqs are re-pointed in one batch, then the old
// log goes once no virtq names it.
Result<void> Device::set_dirty_logging(bool on, const DirtyLog& log) {
    namespace mb = prm::modify_bits;
    Impl& d = *impl_;
    std::lock_guard lk(d.mu);
    if (on == d.dirty.on && (!on || same_log(d, log))) return {};
    if (on && !same_log(d, log)) {
        auto reg = register_log(d, log);
        MLX5A_CHECK(reg);
        if (!d.dirty.mem.empty()) d.dirty.retired.push_back(std::move(d.dirty.mem));
        d.dirty.mem = std::move(*reg);
    }
    d.dirty.on = on;
    if (on) d.dirty.log = log;
    devx::Batch b;
    std::vector<prm::VirtqAttr> sent;
    for (Vq& vq : d.vqs) {
        if (vq.phase() == VqPhase::Absent || vq.phase() == VqPhase::Error) continue;
        prm::VirtqAttr a = vq.attr;
        a.modify_field_select = mb::DIRTY_BITMAP_DUMP_ENABLE;
        a.dirty_bitmap_dump_enable = on;
        if (on) {
            a.modify_field_select |= mb::DIRTY_BITMAP_PARAMS;
            a.dirty_bitmap_mkey = d.dirty.mem.mkey;
            a.dirty_bitmap_addr = log.host_addr;
            a.dirty_bitmap_size = uint32_t(log.size);
            a.vhost_log_page = log.log_page;
        }
        auto c = devx::Command::modify_virtq(vq.obj, a, vq.index);
        MLX5A_CHECK(c);
        b.add(std::move(*c));
        sent.push_back(a);
    }
    auto res = d.run(std::move(b), BatchKind::DirtyLog, nullptr);
    Result<void> first = {};
    for (size_t i = 0; i < res.entries.size(); i++) {
        auto& e = res.entries[i];
        if (e.ok()) {
            d.vqs[e.queue].attr = sent[i];
            d.vqs[e.queue].attr.modify_field_select = 0;
        } else if (first) {
            first = unexpected(e.steps[0].error());
        }
    }
    d.release_retired_memory();
    if (on)
        logf(LogLevel::Info, "%s: dirty logging on: log 0x%llx +%llu, %zu virtqs%s", d.name.c_str(),
             static_cast<unsigned long long>(log.host_addr), static_cast<unsigned long long>(log.size),
             sent.size(), first ? "" : " (some failed)");
    else
        logf(LogLevel::Info, "%s: dirty logging off, %zu virtqs%s", d.name.c_str(), sent.size(),
             first ? "" : " (some failed)");
    return first;
}

bool Device::dirty_logging() const {
    std::lock_guard lk(impl_->mu);
    return impl_->dirty.on;
}

Result<void> Device::suspend_all() {
    Impl& d = *impl_;
    std::lock_guard lk(d.mu);
    Result<void> known = d.reconcile();
    auto ready = rings_in_phase(d.vqs, VqPhase::Ready);
    if (!known && ready.empty()) return known;
    if (ready.empty())
        return fail(Errc::State, "no RDY virtq to suspend (is a frontend connected and started?)");
    return first_error(known, d.suspend_rings(ready));
}

Result<void> Device::resume_all() {
    Impl& d = *impl_;
    std::lock_guard lk(d.mu);
    // Its rings and memory left with the frontend (dev_cleanup): a virtq
    // started now would run on nobody's memory.
    if (!d.guest_valid)
        return fail(Errc::State, "no frontend: nothing to resume (virtqs wait for the next dev_conf)");
    Result<void> known = d.reconcile();
    auto sus = rings_in_phase(d.vqs, VqPhase::Suspended);
    if (!known && sus.empty()) return known;
    if (sus.empty()) return fail(Errc::State, "no SUSPENDed virtq to resume");
    return first_error(known, d.resume_rings(sus, false));
}

Result<prm::VirtqCounters> Device::counters(uint16_t ring) {
    Impl& d = *impl_;
    std::lock_guard lk(d.mu);
    if (ring >= d.vqs.size()) return fail(Errc::InvalidArgument, "no virtq " + std::to_string(ring));
    const Vq& vq = d.vqs[ring];
    if (!vq.counters)
        return fail(Errc::NotSupported, "virtq " + std::to_string(ring) + " has no counters object");
    std::vector<std::byte> in(prm::kGeneralObjInHdrBytes);
    prm::encode_query_counters(vq.counters.obj_id(), in);
    devx::Batch b;
    b.add(devx::Command::query_obj(vq.counters, std::move(in), prm::kCountersQueryOutBytes, ring));
    auto res = d.run(std::move(b), BatchKind::Counters, nullptr);
    const auto& s = res.entries.at(0).steps.at(0);
    if (!s.ok()) return unexpected(s.error());
    return prm::decode_query_counters_out(s.out, vq.counters.obj_id());
}

}  // namespace mlx5async::core
