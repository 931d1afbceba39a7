// Device operations driven by vhost (dev_conf, dev_close, ring enable,
// LOG_ALL) and by applications (suspend/resume all, counters): the public
// call posts the job to the strand (waiting when it needs the answer); the
// Impl method is the job.
#include <fcntl.h>

#include <algorithm>

#include "common/base/log_sink.hpp"
#include "common/base/unique_fd.hpp"
#include "common/prm/counters.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"
#include "device_impl.hpp"
#include "vfeatures.hpp"

namespace mlx5async::core {
namespace {

// An unsure virtq (reconcile() could not learn it) is left alone: a command
// built on a phase it may not be in would fail, or undo what a late
// command did.
std::vector<uint16_t> rings_in_phase(const VirtqTable& vqs, VqPhase p) {
    std::vector<uint16_t> v;
    for (const Vq& q : vqs)
        if (q.phase() == p && !q.unsure()) v.push_back(q.index);
    return v;
}

// The caller's fd, duplicated (the job runs later; the caller may close its
// own by then), kept in `owned` until the job is done; -1 stays -1.
int dup_into(int fd, std::vector<UniqueFd>& owned) {
    if (fd < 0) return -1;
    UniqueFd d(fcntl(fd, F_DUPFD_CLOEXEC, 0));
    const int n = d.get();
    if (n >= 0) owned.push_back(std::move(d));
    return n;
}

}  // namespace

// What dev_conf refuses at once, starting nothing: a ring beyond the
// device, a memory table the device cannot register, features it never
// offered.
Result<void> Device::Impl::refuse(const GuestConfig& g) const {
    for (const auto& vr : g.vrings)
        if (vr.index >= vqs.size())
            return fail(Errc::InvalidArgument, "vring " + std::to_string(vr.index) +
                                                   " beyond the device's " +
                                                   std::to_string(vqs.size()) + " virtqs");
    MLX5A_CHECK(validate_table(sorted_regions(g.mem)));
    if (uint64_t extra = g.features & ~device_features(vcaps, uint32_t(vqs.size()), port_mtu)) {
        char b[64];
        std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(extra));
        return fail(Errc::InvalidArgument, std::string("negotiated features the device does not offer: ") + b);
    }
    return {};
}

namespace {

// A stop's view of a start: it abandons what the start has not issued yet.
struct AbandonableStart {
    explicit AbandonableStart(Commands& c) : cmds(c) { cmds.begin_abandonable(); }
    ~AbandonableStart() { cmds.end_abandonable(); }
    Commands& cmds;
};

// The start job: the guest's snapshot (its fds owned by the job), run on
// the strand; its result to `done` and, when it failed, to the ledger.
auto post_start(Device::Impl& d, const GuestConfig& g, Device::StartDone done) {
    auto owned = std::make_shared<std::vector<UniqueFd>>();
    GuestConfig snap = g;
    for (VringConfig& v : snap.vrings) {
        v.kickfd = dup_into(v.kickfd, *owned);
        v.callfd = dup_into(v.callfd, *owned);
    }
    const uint64_t seq = d.ledger.snapshot().start_seq;
    const uint64_t stops = d.stops.load();
    return d.strand->post([&d, snap = std::move(snap), owned, done = std::move(done), seq, stops]() {
        // A stop posted since (dev_close, dev_cleanup) supersedes the start:
        // its rings hand back vhost's indexes, as never started. Abandonable
        // before the check: a stop requested after the check abandons it.
        Result<void> r = [&] {
            AbandonableStart abandonable(*d.cmds);
            return d.stops.load() == stops
                       ? d.start(snap, seq)
                       : d.skip_start(snap, "start superseded: the frontend stopped the device "
                                            "before it ran");
        }();
        if (!r) d.ledger.start_failed(seq, to_errno(r.error()), prm::describe(r.error()));
        d.publish();
        if (done) done(r);
        return r;
    });
}

}  // namespace

Result<void> Device::start(const GuestConfig& g, StartDone done) {
    MLX5A_CHECK(impl_->refuse(g));
    post_start(*impl_, g, std::move(done));
    return {};
}

Result<void> Device::configure(const GuestConfig& g) {
    MLX5A_CHECK(impl_->refuse(g));
    if (impl_->strand->on_strand()) {
        AbandonableStart abandonable(*impl_->cmds);
        return impl_->start(g, impl_->ledger.snapshot().start_seq);
    }
    return post_start(*impl_, g, {}).wait();
}

// The rings vhost enabled start, each checked against the table this start
// registers: a ring the device cannot use is refused by name (in the
// result) and the others start. Then the memory and the missing
// objects, in shared batches; the relays' fds; one batch to RDY; a kick per
// started ring.
// This session's rings: until one starts, vhost's indexes are its own
// (dev_close hands them back). The guest is valid once its memory is.
void Device::Impl::begin_session(const GuestConfig& g) {
    guest = g;
    guest_valid = false;
    for (const auto& vr : g.vrings)
        if (vr.index < vqs.size()) vqs.session_indexes(vqs[vr.index], vr.last_avail_idx, vr.last_used_idx);
}

Result<void> Device::Impl::skip_start(const GuestConfig& g, const char* why) {
    begin_session(g);
    return fail(Errc::Cancelled, why);
}

Result<void> Device::Impl::configure(const GuestConfig& g, uint64_t seq) {
    Result<void> known = reconcile();
    begin_session(g);
    // A device that logs must log every page it may write.
    if (dirty->on()) MLX5A_CHECK(check_log_covers(dirty->log(), g.mem));
    const uint64_t registrations = mem->registrations();
    if (g.mtu && port_mtu && g.mtu > port_mtu)
        logf(LogLevel::Warning,
             "%s: the frontend's MTU %u exceeds the port's %u: the port drops longer packets",
             name.c_str(), g.mtu, port_mtu);
    const std::vector<MemRegion> table = sorted_regions(g.mem);
    std::vector<uint16_t> start;
    Result<void> bad_ring = {};
    // A ring set up or enabled later (set_vring_state) starts from this
    // session's vhost indexes, not from a previous session's suspend.
    for (Vq& vq : vqs) vq.start_from_vhost = true;
    for (const auto& vr : g.vrings) {
        Vq& vq = vqs[vr.index];
        vq.start_from_vhost = !vq.enabled;
        // One rule for a ring the device cannot use, enabled or not (vhost
        // never enables a ring it could not map): refused by name, never
        // started, the others go on.
        if (vr.unusable.empty() && (!vq.enabled || vq.unsure())) continue;
        if (auto ok = validate_vring(vr, table); !ok) {
            logf(LogLevel::Error, "%s: %s", name.c_str(), ok.error().what.c_str());
            bad_ring = first_error(bad_ring, ok);
            continue;
        }
        if (!vq.enabled || vq.unsure()) continue;
        start.push_back(vr.index);
        // A different ring size needs a new object (queue_size is not modifiable).
        if (vq.phase() != VqPhase::Absent && vq.size != vr.size) vqs.mark_for_recreation(vq);
    }
    // Grouped by ring size: objects are created per size.
    RingGroups groups;
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
    auto prepared = prepare_start(g.mem, groups, memory_ok, seq);
    if (cmds->abandoned()) return abandoned_start(start);
    if (!memory_ok) return prepared;
    guest_valid = true;
    MLX5A_CHECK(prepared);
    ledger.mark_start(LedgerPhase::VirtqsCreated, seq);
    // This start's callfds, before a ring can raise an interrupt.
    std::vector<std::pair<uint16_t, int>> calls;
    for (const auto& vr : g.vrings) calls.emplace_back(vr.index, vr.callfd);
    irqs.set_callfds(calls, name);
    auto r = resume_rings(start, /*vhost_indexes=*/true);
    if (cmds->abandoned()) return abandoned_start(start);
    const auto ready = std::count_if(start.begin(), start.end(),
                                     [&](uint16_t i) { return vqs[i].phase() == VqPhase::Ready; });
    // A ring that did not start leaves it unstamped (another attempt may).
    if (size_t(ready) == start.size()) ledger.mark_start(LedgerPhase::AllReady, seq);
    ledger.set_start(seq, uint32_t(ready),
                     mem->registrations() != registrations ? uint32_t(mem->current().regions.size()) : 0);
    // The network learns where the VM is now that its rings run.
    if (announcer && r && bad_ring && !start.empty() && size_t(ready) == start.size()) announcer->begin(seq);
    // An old table or log goes once no virtq names it, after this returns:
    // its destroys are not the guest's downtime.
    if (mem->has_retired() || dirty->has_retired() || !unreleased.empty()) releaser->request();
    if (kick_relay) {  // this start's kickfds; held kicks replay now
        std::vector<std::pair<uint16_t, int>> kicks;
        for (const auto& vr : g.vrings) kicks.emplace_back(vr.index, vr.kickfd);
        kick_relay->set_rings(kicks);
        kick_relay->set_open(true);
    }
    kick_started(start);
    return first_error(known, first_error(bad_ring, r));
}

// The stop that abandoned the start suspends the rings it started; the
// others hand back vhost's indexes.
Result<void> Device::Impl::abandoned_start(std::span<const uint16_t> rings) const {
    const auto ready = std::count_if(rings.begin(), rings.end(),
                                     [&](uint16_t i) { return vqs[i].phase() == VqPhase::Ready; });
    return fail(Errc::Cancelled, "start abandoned: the frontend stopped the device (" +
                                     std::to_string(ready) + " of " + std::to_string(rings.size()) +
                                     " rings started)");
}

// A ring that turned RDY after its guest kicked gets that kick now: the
// device may have dropped a doorbell for a virtq that was not running, and
// the guest will not kick again for buffers it already made available.
void Device::Impl::kick_started(std::span<const uint16_t> rings) {
    if (!kick_relay) return;
    for (uint16_t r : rings)
        if (vqs[r].phase() == VqPhase::Ready) kick_relay->kick(r);
}

void Device::Impl::stop_requested() {
    stops.fetch_add(1);
    cmds->abandon();
}

Result<void> Device::close(std::vector<RingIndexes>& out) {
    Impl& d = *impl_;
    if (!d.strand->on_strand()) d.stop_requested();
    return d.strand->run([&] {
        auto r = d.close(out);
        d.publish();
        return r;
    });
}

Result<void> Device::Impl::close(std::vector<RingIndexes>& out) {
    if (kick_relay) kick_relay->set_open(false);  // gated, kept registered
    if (announcer) announcer->stop();  // the VM leaves this port
    ledger.mark(LedgerPhase::SuspendIssued);
    Result<void> known = reconcile();
    auto ready = rings_in_phase(vqs, VqPhase::Ready);
    // A virtq that may still run is never reported stopped.
    Result<void> r = first_error(known, stop_rings(ready));
    ledger.mark(LedgerPhase::SuspendDone);
    out.clear();
    for (const auto& vr : guest.vrings) {
        const Vq& vq = vqs[vr.index];
        RingIndexes ri;
        ri.ring = vr.index;
        if (vq.phase() == VqPhase::Absent) {
            // Never started on the device: vhost's own indexes stand.
            ri.last_avail_idx = vr.last_avail_idx;
            ri.last_used_idx = vr.last_used_idx;
        } else {
            ri.last_avail_idx = vq.saved_avail;
            ri.last_used_idx = vq.saved_used;
            ri.from_device = vq.phase() == VqPhase::Suspended && !vq.unsure();
        }
        out.push_back(ri);
    }
    return r;
}

void Device::cleanup() {
    Impl& d = *impl_;
    if (!d.strand->on_strand()) d.stop_requested();
    (void)d.strand->run([&] {
        d.cleanup();
        d.publish();
        return Result<void>{};
    });
}

void Device::Impl::cleanup() {
    // vhost connection gone: the rings and memory belong to nobody now.
    guest_valid = false;
    for (Vq& vq : vqs) vq.enabled = false;
    irqs.clear_callfds();
    if (announcer) announcer->frontend_left();
    if (kick_relay) kick_relay->set_rings({});  // a hung-up fd of the frontend wakes nothing
    // Its log too: the virtqs stop naming it in the same MODIFY that takes
    // the memory mkey away, and the registration, which holds vhost's
    // mapping of the frontend's file, goes with the memory's.
    dirty->forget();
    unregister_memory();  // vhost unmaps the regions after this
    release_frontend_objects();
    release_unreferenced();
    // A release still running hands back what the device refuses: one more
    // run takes it.
    releaser->request();
}

void Device::set_vring_state(uint16_t ring, bool enable) {
    Impl& d = *impl_;
    d.strand->post([&d, ring, enable] {
        if (ring < d.vqs.size()) d.vqs[ring].enabled = enable;
        return Result<void>{};
    });
}

void Device::update_vring(const VringConfig& v) {
    Impl& d = *impl_;
    d.strand->post([&d, v] {
        d.update_vring(v);
        return Result<void>{};
    });
}

void Device::Impl::update_vring(const VringConfig& v) {
    if (!guest_valid || v.index >= vqs.size()) return;
    Vq& vq = vqs[v.index];
    if (vq.phase() == VqPhase::Ready) return;
    if (VringConfig* known = guest.vring(v.index)) *known = v;
    else guest.vrings.push_back(v);
    if (vq.phase() != VqPhase::Absent && vq.size != v.size) vqs.mark_for_recreation(vq);
}

void Device::frontend_set_base(uint16_t ring) {
    Impl& d = *impl_;
    d.strand->post([&d, ring] {
        if (ring < d.vqs.size()) d.vqs[ring].start_from_vhost = true;
        return Result<void>{};
    });
}

void Device::set_callfd(uint16_t ring, int fd) {
    Impl& d = *impl_;
    if (!d.irqs.on()) return;
    auto owned = std::make_shared<std::vector<UniqueFd>>();
    const int dup = dup_into(fd, *owned);
    d.strand->post([&d, ring, dup, owned] {
        d.irqs.set_callfd(ring, dup, d.name);
        return Result<void>{};
    });
}

void Device::set_kickfd(uint16_t ring, int fd) {
    Impl& d = *impl_;
    if (!d.kick_relay) return;
    auto owned = std::make_shared<std::vector<UniqueFd>>();
    const int dup = dup_into(fd, *owned);
    d.strand->post([&d, ring, dup, owned] {
        // Before the first start there is nothing to follow: the start
        // watches every ring's fd.
        if (d.guest_valid) d.kick_relay->set_ring(ring, dup);
        return Result<void>{};
    });
}

Device::IrqStats Device::irq_stats() const {
    IrqStats s;
    if (!impl_->irqs.on()) return s;
    auto r = impl_->irqs.stats();
    return {true, r.events, r.completions, r.calls, r.no_callfd, r.callfd_full};
}

uint64_t Device::irq_calls(uint16_t ring) const { return impl_->irqs.calls(ring); }

Result<void> Device::flush_vring_states(std::vector<RingIndexes>& disabled) {
    Impl& d = *impl_;
    return d.strand->run([&] {
        auto r = d.flush_vring_states(disabled);
        d.publish();
        return r;
    });
}

Result<void> Device::Impl::flush_vring_states(std::vector<RingIndexes>& disabled) {
    Result<void> r = reconcile();
    std::vector<uint16_t> stop, start;
    for (const Vq& vq : vqs) {
        if (vq.unsure()) continue;
        if (!vq.enabled && vq.phase() == VqPhase::Ready) stop.push_back(vq.index);
        const VringConfig* vr = guest.vring(vq.index);
        if (!vq.enabled || !vr || !guest_valid || vq.phase() == VqPhase::Ready) continue;
        if (auto ok = validate_vring(*vr, mem->current().regions); !ok) {  // never started
            r = first_error(r, ok);
            continue;
        }
        start.push_back(vq.index);
    }
    if (!stop.empty()) r = first_error(r, suspend_rings(stop));  // stops go first whatever failed
    for (uint16_t s : stop)
        disabled.push_back({s, vqs[s].saved_avail, vqs[s].saved_used,
                            vqs[s].phase() == VqPhase::Suspended});
    if (!start.empty()) {
        // A newly enabled ring without a usable object (none, ERR, another
        // ring size) gets one first.
        std::vector<uint16_t> absent;
        for (uint16_t s : start)
            if (vqs[s].phase() == VqPhase::Absent || vqs[s].phase() == VqPhase::Error ||
                vqs[s].needs_recreation())
                absent.push_back(s);
        for (uint16_t s : absent) {
            const uint16_t one[] = {s};
            MLX5A_CHECK(ensure_objects(one, guest.vring(s)->size));  // started rings have one
        }
        std::vector<uint16_t> fresh, again;  // first start this session / restart
        for (uint16_t s : start) (vqs[s].start_from_vhost ? fresh : again).push_back(s);
        for (uint16_t s : fresh) vqs[s].start_from_vhost = false;
        for (auto* set : {&fresh, &again}) {
            if (set->empty()) continue;
            auto rr = resume_rings(*set, /*vhost_indexes=*/set == &fresh);
            if (r && !rr) r = rr;
        }
        kick_started(start);
    }
    return r;
}

Result<void> Device::set_dirty_logging(bool on, const DirtyLog& log) {
    Impl& d = *impl_;
    return d.strand->run([&] {
        auto r = d.set_dirty_logging(on, log);
        d.publish();
        return r;
    });
}

// vhost maps the log anew at every SET_LOG_BASE (QEMU sends one per queue
// pair) and unmaps the previous mapping, so a changed base or size means a
// new registration: the virtqs are re-pointed in one batch, then the old
// log goes once no virtq names it.
Result<void> Device::Impl::set_dirty_logging(bool on, const DirtyLog& log) {
    namespace mb = prm::modify_bits;
    if (on == dirty->on() && (!on || dirty->registered(log))) return {};
    if (on) MLX5A_CHECK(check_log_covers(log, mem->current().regions));
    if (on) {
        MemRegistration failed;
        auto r = dirty->turn_on(log, failed);
        release_failed(std::move(failed));
        MLX5A_CHECK(r);
    } else {
        dirty->turn_off();
    }
    devx::Batch b;
    std::vector<prm::VirtqAttr> sent;
    for (Vq& vq : vqs) {
        if (vq.phase() == VqPhase::Absent || vq.phase() == VqPhase::Error) continue;
        prm::VirtqAttr a = vq.attr;
        a.modify_field_select = mb::DIRTY_BITMAP_DUMP_ENABLE;
        a.dirty_bitmap_dump_enable = on;
        if (on) {
            a.modify_field_select |= mb::DIRTY_BITMAP_PARAMS;
            a.dirty_bitmap_mkey = dirty->mkey();
            a.dirty_bitmap_addr = log.host_addr;
            a.dirty_bitmap_size = uint32_t(log.size);
            a.vhost_log_page = log.log_page;
        }
        auto c = devx::Command::modify_virtq(vq.obj, a, vq.index);
        MLX5A_CHECK(c);
        b.add(std::move(*c));
        sent.push_back(a);
    }
    auto res = cmds->run(std::move(b), BatchKind::DirtyLog, nullptr);
    Result<void> first = {};
    for (size_t i = 0; i < res.entries.size(); i++) {
        auto& e = res.entries[i];
        if (e.ok()) {
            vqs[e.queue].attr = sent[i];
            vqs[e.queue].attr.modify_field_select = 0;
        } else if (first) {
            first = unexpected(e.steps[0].error());
        }
    }
    release_unreferenced();
    if (on)
        logf(LogLevel::Info, "%s: dirty logging on: log 0x%llx +%llu, %zu virtqs%s", name.c_str(),
             static_cast<unsigned long long>(log.host_addr), static_cast<unsigned long long>(log.size),
             sent.size(), first ? "" : " (some failed)");
    else
        logf(LogLevel::Info, "%s: dirty logging off, %zu virtqs%s", name.c_str(), sent.size(),
             first ? "" : " (some failed)");
    return first;
}

bool Device::dirty_logging() const {
    std::lock_guard lk(impl_->pub.mu);
    return impl_->pub.dirty_logging;
}

Result<void> Device::suspend_all() {
    Impl& d = *impl_;
    return d.strand->run([&] {
        auto r = d.suspend_all();
        d.publish();
        return r;
    });
}

Result<void> Device::Impl::suspend_all() {
    Result<void> known = reconcile();
    auto ready = rings_in_phase(vqs, VqPhase::Ready);
    if (!known && ready.empty()) return known;
    if (ready.empty())
        return fail(Errc::State, "no RDY virtq to suspend (is a frontend connected and started?)");
    return first_error(known, suspend_rings(ready));
}

Result<void> Device::resume_all() {
    Impl& d = *impl_;
    return d.strand->run([&] {
        auto r = d.resume_all();
        d.publish();
        return r;
    });
}

Result<void> Device::Impl::resume_all() {
    // Its rings and memory left with the frontend (dev_cleanup): a virtq
    // started now would run on nobody's memory.
    if (!guest_valid)
        return fail(Errc::State, "no frontend: nothing to resume (virtqs wait for the next dev_conf)");
    Result<void> known = reconcile();
    auto sus = rings_in_phase(vqs, VqPhase::Suspended);
    if (!known && sus.empty()) return known;
    if (sus.empty()) return fail(Errc::State, "no SUSPENDed virtq to resume");
    auto r = resume_rings(sus, false);
    kick_started(sus);
    return first_error(known, r);
}

Result<prm::VirtqCounters> Device::counters(uint16_t ring) {
    Impl& d = *impl_;
    return d.strand->run([&] { return d.counters(ring); });
}

Result<prm::VirtqCounters> Device::Impl::counters(uint16_t ring) {
    if (ring >= vqs.size()) return fail(Errc::InvalidArgument, "no virtq " + std::to_string(ring));
    const Vq& vq = vqs[ring];
    if (!vq.counters)
        return fail(Errc::NotSupported, "virtq " + std::to_string(ring) + " has no counters object");
    std::vector<std::byte> in(prm::kGeneralObjInHdrBytes);
    prm::encode_query_counters(vq.counters.obj_id(), in);
    devx::Batch b;
    b.add(devx::Command::query_obj(vq.counters, std::move(in), prm::kCountersQueryOutBytes, ring));
    auto res = cmds->run(std::move(b), BatchKind::Counters, nullptr);
    const auto& s = res.entries.at(0).steps.at(0);
    if (!s.ok()) return unexpected(s.error());
    return prm::decode_query_counters_out(s.out, vq.counters.obj_id());
}

// A retired registration goes once no virtq object names its mkey
// (indirect first, then direct mkeys, then umems: MemRegistration order).
std::vector<MemRegistration> Device::Impl::take_unreferenced() {
    auto named_by = [&](uint32_t prm::VirtqAttr::*field) {
        return [this, field](uint32_t mkey) {
            for (const Vq& vq : vqs)
                if (vq.obj && vq.attr.*field == mkey) return true;
            return false;
        };
    };
    auto out = mem->take_unnamed(named_by(&prm::VirtqAttr::virtio_q_mkey));
    for (MemRegistration& r : dirty->take_unnamed(named_by(&prm::VirtqAttr::dirty_bitmap_mkey)))
        out.push_back(std::move(r));
    for (MemRegistration& r : unreleased) out.push_back(std::move(r));
    unreleased.clear();
    return out;
}

void Device::Impl::release_unreferenced() {
    for (MemRegistration& r : take_unreferenced())
        if (!r.release()) unreleased.push_back(std::move(r));
    if (!unreleased.empty())
        logf(LogLevel::Warning, "%s: %zu memory registrations keep objects the device did not "
             "destroy: tried again at the next release", name.c_str(), unreleased.size());
}

void Device::Impl::release_failed(MemRegistration made) {
    if (cmds->late_commands() == 0 && made.release()) return;
    unreleased.push_back(std::move(made));
}

namespace {

// A virtq names frontend memory: the guest's (its mkey) or a log's.
bool names_frontend_memory(const prm::VirtqAttr& a) {
    return a.virtio_q_mkey || a.dirty_bitmap_mkey || a.dirty_bitmap_dump_enable;
}

// The MODIFY after which the virtq names neither.
prm::VirtqAttr without_frontend_memory(prm::VirtqAttr a) {
    namespace mb = prm::modify_bits;
    a.modify_field_select = 0;
    if (a.virtio_q_mkey) {
        a.virtio_q_mkey = 0;
        a.modify_field_select |= mb::VIRTIO_Q_MKEY;
    }
    if (a.dirty_bitmap_mkey || a.dirty_bitmap_dump_enable) name_no_log(a);
    return a;
}

}  // namespace

// vhost: the memory table (and the log) is about to be unmapped. Virtqs
// stop naming them (SUSPEND/INIT: one MODIFY to 0; RDY ones are suspended
// first, objects in ERR destroyed), then every registration no virtq names
// is destroyed.
void Device::Impl::unregister_memory() {
    if (auto k = reconcile(); !k)  // those left unsure are destroyed: nothing else stops them
        logf(LogLevel::Error, "%s: %s", name.c_str(), prm::describe(k.error()).c_str());
    std::vector<uint16_t> ready;
    for (const Vq& vq : vqs)
        if (vq.phase() == VqPhase::Ready && !vq.unsure() && names_frontend_memory(vq.attr))
            ready.push_back(vq.index);
    if (!ready.empty()) (void)suspend_rings(ready);
    devx::Batch b;
    for (Vq& vq : vqs) {
        if (!vq.obj || !names_frontend_memory(vq.attr)) continue;
        if (vq.unsure() || (vq.phase() != VqPhase::Init && vq.phase() != VqPhase::Suspended)) {
            vqs.mark_for_recreation(vq);  // until its destroy succeeded
            b.add(devx::Command::destroy(std::move(vq.obj), vq.index));
            continue;
        }
        auto c = devx::Command::modify_virtq(vq.obj, without_frontend_memory(vq.attr), vq.index);
        if (!c) continue;
        b.add(std::move(*c));
    }
    auto res = cmds->run(std::move(b), BatchKind::Teardown, nullptr);
    for (size_t i = 0; i < res.entries.size(); i++) {
        auto& e = res.entries[i];
        Vq& vq = vqs[e.queue];
        if (e.steps[0].kind == devx::CmdKind::Destroy) {
            if (e.ok()) (void)vqs.destroyed(vq);  // any phase with an object may go; re-created later
            else vq.obj = std::move(e.steps[0].obj);  // still naming the mkey: destroyed again later
            continue;
        }
        if (e.ok()) {
            prm::VirtqAttr cleared = without_frontend_memory(vq.attr);
            cleared.modify_field_select = vq.attr.modify_field_select;
            vq.attr = cleared;
        }
    }
    mem->retire_current();
    release_unreferenced();
    if (mem->has_retired())
        logf(LogLevel::Warning, "%s: %zu guest-memory registrations still referenced", name.c_str(),
             mem->retired());
}

}  // namespace mlx5async::core
