// Device core: opening the backend and the parts, closing them in order,
// and the public calls: each posts its job to the strand (waiting for it
// when it needs the answer) or reads what the strand published.
#include <fcntl.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/base/log_sink.hpp"
#include "common/base/steady_clock.hpp"
#include "common/base/unique_fd.hpp"
#include "common/prm/general_obj.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"
#include "common/prm/vport.hpp"
#include "device_impl.hpp"
#include "vfeatures.hpp"

namespace mlx5async::core {

uint64_t steady_ns() { return uint64_t(steady_now_ns()); }

const char* vq_phase_name(VqPhase p) noexcept {
    switch (p) {
    case VqPhase::Absent: return "absent";
    case VqPhase::Init: return "init";
    case VqPhase::Ready: return "ready";
    case VqPhase::Suspended: return "suspended";
    case VqPhase::Error: return "error";
    }
    return "?";
}

Result<void> Device::Impl::query_caps() {
    auto query = [&](uint16_t cap_type) -> Result<std::vector<std::byte>> {
        std::vector<std::byte> in(prm::kQueryHcaCapInBytes), out(prm::kQueryHcaCapOutBytes);
        prm::encode_query_hca_cap(prm::cap_op_mod(cap_type), in);
        if (api->general_cmd(ctx.get(), in.data(), in.size(), out.data(), out.size()) != 0 &&
            prm::read_general_obj_out(out).value_or(prm::GeneralObjOut{}).status == 0)
            return unexpected(Error::sys(errno, "QUERY_HCA_CAP"));
        return out;
    };
    auto g = query(prm::kCapTypeGeneral);
    MLX5A_CHECK(g);
    auto gc = prm::decode_query_general_caps_out(*g);
    MLX5A_CHECK(gc);
    gcaps = *gc;
    if (!gcaps.has_obj_type(uint16_t(prm::ObjType::VIRTIO_NET_Q)))
        return fail(Errc::NotSupported,
                    "device has no VIRTIO_NET_Q general object (virtio emulation / vDPA not "
                    "enabled in firmware)");
    auto v = query(prm::kCapTypeVirtioEmulation);
    MLX5A_CHECK(v);
    auto vc = prm::decode_query_virtio_caps_out(*v);
    MLX5A_CHECK(vc);
    vcaps = *vc;
    if (!(vcaps.virtio_queue_type & 0x1))
        return fail(Errc::NotSupported, "device does not support split virtqueues");
    if (vcaps.max_num_virtio_queues < 2)
        return fail(Errc::NotSupported, "device reports fewer than 2 virtio queues");
    return {};
}

// The port's MTU and the function's MAC, from its NIC vport (as Linux
// mlx5_vnet's query_mtu): the largest IP packet, which the device offers
// the guest (VIRTIO_NET_F_MTU; unknown, 0, not offered when the query
// fails), and the address the device announces a start from.
void Device::Impl::query_vport() {
    std::vector<std::byte> in(prm::kQueryNicVportContextInBytes), out(prm::kQueryNicVportContextOutBytes);
    prm::encode_query_nic_vport_context(in);
    const int rc = api->general_cmd(ctx.get(), in.data(), in.size(), out.data(), out.size());
    const int err = errno;
    auto c = prm::decode_query_nic_vport_context_out(out);
    if (c && rc == 0) vport_mac = c->permanent_mac;
    std::string why;
    if (!c) why = prm::describe(c.error());
    else if (rc != 0) why = "errno " + std::to_string(err);
    else if (c->mtu <= prm::kEthHardMtuOverhead) why = "MTU " + std::to_string(c->mtu);
    if (!why.empty()) {
        logf(LogLevel::Info, "%s: port MTU unknown (QUERY_NIC_VPORT_CONTEXT: %s): VIRTIO_NET_F_MTU not offered",
             name.c_str(), why.c_str());
        return;
    }
    port_mtu = uint16_t(c->mtu - prm::kEthHardMtuOverhead);
}

// A device the user asked to announce fails without its SQ; otherwise it
// goes on unannounced, saying why.
Result<void> Device::Impl::open_announcer() {
    if (!cfg.announce.on) return {};
    auto a = Announcer::open(cfg.announce, ctx, transport, gcaps.sq_ts_format, vport_mac, ledger, name);
    if (!a) {
        if (cfg.announce.set) return unexpected(a.error());
        logf(LogLevel::Warning, "%s: the device does not announce its VM (devarg announce=off silences this): %s",
             name.c_str(), a.error().what.c_str());
        return {};
    }
    announcer = std::move(*a);
    return {};
}

VqInfo Device::Impl::saved_info(const Vq& q) const {
    VqInfo i{q.index,         q.phase(), q.fw_state(), q.error_type, q.saved_avail, q.saved_used,
             q.obj.obj_id(), q.errors,  q.unsure(),   false};
    return i;
}

// In place: a start publishes once, and every virtq of the device is in
// the table (hundreds), not only the guest's.
void Device::Impl::publish() {
    std::lock_guard lk(pub.mu);
    pub.vqs.resize(vqs.size());
    uint32_t unsure = 0;
    size_t i = 0;
    for (const Vq& q : vqs) {
        pub.vqs[i++] = saved_info(q);
        unsure += q.unsure();
    }
    pub.unsure = unsure;
    pub.dirty_logging = dirty->on();
    pub.strategy = cmds->strategy();
    pub.max_inflight = cmds->max_inflight();
}

void Device::Impl::record_timing(const OpTiming& t) {
    std::lock_guard lk(pub.mu);
    pub.last[size_t(t.op)] = t;
}

Device::Device(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

// Whoever posts goes first (the deferred release, the event thread), then
// the strand (queued jobs dropped, the running one finished), then the
// parts, each after what names it: virtq objects before mkeys before umems,
// event QPs and the TIS after the virtqs, the PD and the context last, the
// emulated device after its last context.
Device::~Device() {
    Impl& d = *impl_;
    if (d.plugin_device) d.plugin_device->on_announce({});  // it marks the ledger
    if (d.releaser) d.releaser->stop();  // the object stays: the engine's workers may request it
    d.recovery.reset();
    if (d.cmds && d.strand) d.stop_requested();  // a start running gives up what it has not issued
    if (d.strand) d.strand->stop();
    d.announcer.reset();  // its SQ before the TIS and PD it names
    d.irqs.stop_relay();  // before the QPs it points to
    d.kick_relay.reset();  // unmaps its view of the doorbell page first
    if (d.cmds) d.cmds->shutdown();
    d.vqs.clear();
    d.unreleased.clear();
    if (d.mem) d.mem->reset();
    if (d.dirty) d.dirty->reset();  // its mkey holds the PD
    d.irqs.reset();
    d.events.reset();
    d.transport.reset();
    d.cmds.reset();
    d.ctx.reset();
    d.plugin_device.reset();
}

Result<std::unique_ptr<Device>> Device::open(const DeviceConfig& cfg, std::string name) {
    auto impl = std::make_unique<Impl>();
    impl->name = std::move(name);
    impl->cfg = cfg;
    std::unique_ptr<Device> dev(new Device(std::move(impl)));
    Impl& d = *dev->impl_;
    if (cfg.event_core >= 0) {
        cpu_set_t allowed;
        if (sched_getaffinity(0, sizeof allowed, &allowed) == 0 && !CPU_ISSET(cfg.event_core, &allowed))
            return fail(Errc::InvalidArgument, "devarg event_core=" + std::to_string(cfg.event_core) +
                                                   ": not a CPU this process may run on");
    }
    d.strand = std::make_unique<Strand>("mlx5a-strand");
    auto be = open_backend(cfg, d.name);
    MLX5A_CHECK(be);
    d.api = be->api;
    d.plugin_device = std::move(be->plugin_device);
    d.ctx = std::move(be->ctx);
    MLX5A_CHECK(d.query_caps());
    d.query_vport();
    auto t = Transport::open(d.ctx, d.name);
    MLX5A_CHECK(t);
    d.transport = std::move(*t);
    MLX5A_CHECK(d.open_announcer());
    if (d.plugin_device)
        d.plugin_device->on_announce([&d](uint16_t) {
            d.ledger.announced();
            if (d.announcer) d.announcer->guest_announced();
        });
    if (const mlx5dv_var* v = d.transport.var()) {
        auto relay = KickRelay::create(d.ctx.get()->cmd_fd, uint64_t(v->mmap_off), v->length, d.name,
                                       cfg.event_core);
        if (relay) d.kick_relay = std::move(*relay);
        else logf(LogLevel::Warning, "%s: no kick relay: %s", d.name.c_str(), to_string(relay.error()).c_str());
    }
    // Taken on the strand, destroyed here: no control operation or query
    // waits for the old objects' destroys. What the device refuses to
    // destroy goes back to the strand, for the next release to try again.
    // Late commands answered are discarded first: what they created goes
    // before what they name.
    d.releaser = std::make_unique<DeferredRelease>([&d] {
        d.cmds->late_commands();
        auto gone = d.strand->post([&d] { return Result<std::vector<MemRegistration>>(d.take_unreferenced()); }).wait();
        if (!gone) return;
        std::erase_if(*gone, [](MemRegistration& r) { return r.release(); });
        if (gone->empty()) return;
        auto kept = std::make_shared<std::vector<MemRegistration>>(std::move(*gone));
        d.strand->post([&d, kept] {
            logf(LogLevel::Warning, "%s: %zu old memory registrations keep objects the device did not "
                 "destroy: tried again at the next release", d.name.c_str(), kept->size());
            for (MemRegistration& r : *kept) d.unreleased.push_back(std::move(r));
            return Result<void>{};
        });
    });
    devx::EngineOptions switches = cfg.engine_switches;
    switches.on_late_answer = [&d] { d.releaser->request(); };  // Impl::release_failed
    d.cmds = std::make_unique<Commands>(*d.api, d.ctx, d.name, std::move(switches));
    d.cmds->set_timeout_ms(cfg.timeout_ms);
    MLX5A_CHECK(d.cmds->make_engine(cfg.strategy, cfg.max_inflight, cfg.threads));
    d.mem = std::make_unique<GuestMemory>(*d.cmds, d.ctx, d.transport.pdn(), d.name);
    d.dirty = std::make_unique<DirtyLogging>(*d.mem, d.ctx, d.transport.pdn());
    d.vqs.create(d.vcaps.max_num_virtio_queues, d.name);
    MLX5A_CHECK(d.start_events());
    MLX5A_CHECK(d.irqs.setup(cfg, d.ctx, d.vcaps, d.vqs.size(), d.name));
    if (cfg.queues && cfg.queues * 2 > d.vqs.size())
        return fail(Errc::InvalidArgument, "devarg queues=" + std::to_string(cfg.queues) +
                                               ": device supports " + std::to_string(d.vqs.size() / 2) +
                                               " queue pairs");
    return d.strand->run([&]() -> Result<std::unique_ptr<Device>> {
        // The null mkey (a device constant every table with holes needs) is
        // asked for here, outside a migration's downtime; plan() asks again
        // if the device did not answer.
        if (auto n = d.mem->null_mkey(); !n)
            logf(LogLevel::Warning, "%s: QUERY_SPECIAL_CONTEXTS: %s (asked again at the first memory table)",
                 d.name.c_str(), to_string(n.error()).c_str());
        if (cfg.queues) {
            std::vector<uint16_t> rings(cfg.queues * 2);
            for (size_t i = 0; i < rings.size(); i++) rings[i] = uint16_t(i);
            auto r = d.ensure_objects(rings, uint16_t(cfg.queue_size));
            d.publish();
            MLX5A_CHECK(r);
        }
        d.publish();
        return std::move(dev);
    });
}

const std::string& Device::name() const { return impl_->name; }

DeviceConfig Device::config() const {
    DeviceConfig c = impl_->cfg;
    std::lock_guard lk(impl_->pub.mu);
    c.strategy = impl_->pub.strategy;
    c.max_inflight = impl_->pub.max_inflight;
    return c;
}

uint32_t Device::max_virtqs() const { return uint32_t(impl_->vqs.size()); }
bool Device::has_notify_area() const { return impl_->transport.var() != nullptr; }

Result<Device::NotifyArea> Device::notify_area() const {
    const mlx5dv_var* v = impl_->transport.var();
    if (!v) return fail(Errc::NotSupported, "no doorbell page (VAR) on this device");
    return NotifyArea{impl_->ctx.get()->cmd_fd, uint64_t(v->mmap_off), uint64_t(v->length)};
}

std::string Device::backend() const { return backend_label(impl_->cfg, impl_->api); }

std::string Device::backend_device() const { return backend_device_name(impl_->cfg, impl_->name); }

uint64_t Device::features() const {
    return device_features(impl_->vcaps, max_virtqs(), impl_->port_mtu);
}

uint16_t Device::port_mtu() const { return impl_->port_mtu; }

bool Device::announces() const { return impl_->announcer != nullptr; }

void Device::frontend_rarp(MacAddr mac) {
    if (impl_->announcer) impl_->announcer->frontend_rarp(mac);
}

std::optional<WireCounts> Device::wire_counts() const {
    if (!impl_->plugin_device) return std::nullopt;
    return impl_->plugin_device->wire();
}

std::optional<AnnounceStats> Device::announce_stats() const {
    if (!impl_->announcer) return std::nullopt;
    return impl_->announcer->stats();
}

std::vector<VqInfo> Device::vq_info() const {
    std::vector<VqInfo> v;
    {
        std::lock_guard lk(impl_->pub.mu);
        v = impl_->pub.vqs;
    }
    if (impl_->plugin_device)
        for (VqInfo& i : v) {
            if (!i.obj_id) continue;
            FrameCounts f = impl_->plugin_device->frames(i.obj_id);
            i.arp_frames = f.arp;
            i.announce_frames = f.announces;
        }
    return v;
}

Device::CommandHealth Device::command_health() const {
    const unsigned late = impl_->cmds->late_commands();  // live: late commands land on their own
    std::lock_guard lk(impl_->pub.mu);
    return {late, impl_->pub.max_inflight, impl_->pub.unsure};
}

devx::CommandStats Device::command_stats() const { return impl_->cmds->command_stats(); }

std::vector<VqInfo> Device::query_vq_info(std::chrono::milliseconds wait) {
    Impl& d = *impl_;
    auto live = d.strand->post([&d] { return Result<std::vector<VqInfo>>(d.query_live()); }).wait_for(wait);
    std::vector<VqInfo> v = vq_info();  // the frame counters
    if (!live || !*live) return v;
    for (const VqInfo& q : **live)
        if (q.live && q.index < v.size()) {
            VqInfo& i = v[q.index];
            i.fw_state = q.fw_state;
            i.error_type = q.error_type;
            i.hw_available_index = q.hw_available_index;
            i.hw_used_index = q.hw_used_index;
            i.live = true;
        }
    return v;
}

Ledger& Device::ledger() { return impl_->ledger; }
const Ledger& Device::ledger() const { return impl_->ledger; }

OpTiming Device::last_timing(Op op) const {
    std::lock_guard lk(impl_->pub.mu);
    return impl_->pub.last[size_t(op)];
}

void Device::set_vhost_ns(Op op, uint64_t ns) {
    std::lock_guard lk(impl_->pub.mu);
    impl_->pub.last[size_t(op)].vhost_ns = ns;
    impl_->pub.last[size_t(op)].total_ns += ns;
}

Result<void> Device::set_strategy(Strategy s) {
    Impl& d = *impl_;
    return d.strand->run([&d, s] {
        auto r = d.cmds->make_engine(s, d.cmds->max_inflight(), d.cfg.threads);
        if (r) d.cfg.strategy = s;
        d.publish();
        return r;
    });
}

namespace {
Result<void> in_range(const char* what, uint32_t v, UintRange r) {
    if (v >= r.lo && v <= r.hi) return {};
    return fail(Errc::InvalidArgument,
                std::string(what) + " must be in " + std::to_string(r.lo) + ".." + std::to_string(r.hi));
}
}  // namespace

Result<void> Device::set_max_inflight(uint32_t n) {
    MLX5A_CHECK(in_range("max_inflight", n, kMaxInflightRange));
    Impl& d = *impl_;
    return d.strand->run([&d, n] {
        auto r = d.cmds->make_engine(d.cmds->strategy(), n, d.cfg.threads);
        if (r) d.cfg.max_inflight = n;
        d.publish();
        return r;
    });
}

Result<void> Device::set_timeout_ms(uint32_t ms) {
    MLX5A_CHECK(in_range("timeout_ms", ms, kTimeoutMsRange));
    Impl& d = *impl_;
    return d.strand->run([&d, ms] {
        d.cmds->set_timeout_ms(ms);
        d.cfg.timeout_ms = ms;
        d.publish();
        return Result<void>{};
    });
}

void Device::trace_enable(bool on) { impl_->cmds->trace_enable(on); }

std::vector<CmdSpan> Device::trace_read(size_t max) { return impl_->cmds->trace_read(max); }

bool Device::wait_events_handled(uint64_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lk(impl_->pub.mu);
    return impl_->pub.cv.wait_for(lk, timeout, [&] { return impl_->pub.recovery_done >= n; });
}

size_t Device::backlog() const { return impl_->strand->backlog(); }

}  // namespace mlx5async::core
