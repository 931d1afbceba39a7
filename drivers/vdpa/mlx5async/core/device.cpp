// Device core: opening the backend, caps, engine, virtq objects, info.
#include "device_impl.hpp"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/base/log_sink.hpp"
#include "common/base/steady_clock.hpp"
#include "common/prm/counters.hpp"
#include "common/prm/general_obj.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"
#include "common/prm/transport.hpp"
#include "common/prm/vport.hpp"
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

const char* batch_kind_name(BatchKind k) noexcept {
    switch (k) {
    case BatchKind::Suspend: return "suspend";
    case BatchKind::Resume: return "resume";
    case BatchKind::Setup: return "setup";
    case BatchKind::Memory: return "memory";
    case BatchKind::DirtyLog: return "dirty_log";
    case BatchKind::Counters: return "counters";
    case BatchKind::Teardown: return "teardown";
    case BatchKind::Recovery: return "recovery";
    case BatchKind::Query: return "query";
    }
    return "other";
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

// The port's MTU, from the function's NIC vport (as Linux mlx5_vnet's
// query_mtu): the largest IP packet, which the device offers the guest
// (VIRTIO_NET_F_MTU). Unknown (0, MTU not offered) when the query fails.
void Device::Impl::query_port_mtu() {
    std::vector<std::byte> in(prm::kQueryNicVportContextInBytes), out(prm::kQueryNicVportContextOutBytes);
    prm::encode_query_nic_vport_context(in);
    const int rc = api->general_cmd(ctx.get(), in.data(), in.size(), out.data(), out.size());
    const int err = errno;
    auto c = prm::decode_query_nic_vport_context_out(out);
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

// A transport domain and one TIS in it, which every TX virtq names.
Result<void> Device::Impl::make_transport() {
    std::vector<std::byte> in(prm::kTransportCmdBytes), out(prm::kTransportCmdBytes);
    prm::encode_alloc_transport_domain(in);
    auto t = devx::DevxObj::create(ctx, in, out);
    MLX5A_CHECK(t);
    td = std::move(*t);
    std::vector<std::byte> tin(prm::kCreateTisInBytes), tout(prm::kTransportCmdBytes);
    MLX5A_CHECK(prm::encode_create_tis({.transport_domain = td.obj_id(), .pd = pd.pdn()}, tin));
    auto s = devx::DevxObj::create(ctx, tin, tout);
    MLX5A_CHECK(s);
    tis = std::move(*s);
    return {};
}

Result<void> Device::Impl::make_engine(Strategy s, uint32_t max_inflight) {
    devx::EngineOptions o;
    o.strategy = s == Strategy::Async        ? devx::Strategy::Async
                 : s == Strategy::Sequential ? devx::Strategy::Sequential
                                             : devx::Strategy::Threads;
    o.max_inflight = max_inflight;
    o.workers = s == Strategy::Threads ? cfg.threads : 0;
    // A new engine would not know the slots the old one's late commands
    // hold, and shutting the old one down waits for them.
    if (engine)
        if (unsigned late = engine->late_commands())
            return fail(Errc::Busy, std::to_string(late) +
                                        " firmware commands are unanswered: the engine changes once "
                                        "they completed or failed");
    if (engine) engine->shutdown();
    engine.reset();
    auto e = devx::Engine::create(*api, ctx.get(), o);
    MLX5A_CHECK(e);
    engine = std::move(*e);
    cfg.strategy = s;
    cfg.max_inflight = max_inflight;
    return {};
}

prm::VirtqAttr Device::Impl::base_attr(const Vq& vq, uint16_t size) const {
    prm::VirtqAttr a;
    a.queue_index = vq.index;
    a.queue_size = size;
    a.virtio_q_type = prm::VirtqType::SPLIT;
    a.event_mode = prm::EventMode::NO_MSIX;
    if (vq.eqp) {  // interrupts: the device messages this QP, we write the callfd
        a.event_mode = prm::EventMode::QP;
        a.event_qpn_or_msix = vq.eqp.fw_qpn();
    }
    a.pd = pd.pdn();
    a.offload_type = vcaps.eth_frame_offload_type ? 0 : 1;
    for (int n = 0; n < 3; n++)
        a.umem[n] = {vq.umem[n].id(), uint32_t(vq.umem[n].size()), 0};
    a.counter_set_id = vq.counters.obj_id();
    if (vq.index & 1) a.tisn_or_qpn = tis.obj_id();  // TX queues send through the TIS
    return a;
}

// Interrupts in QP event mode when the device has it (virtio caps event_mode
// bit QP) and the user did not ask for none: a UAR page for the CQ arm
// doorbells, the completion EQ, and the relay thread. A user who asked for
// event_mode=irq gets an error instead of a silent fallback.
Result<void> Device::Impl::setup_interrupts() {
    if (cfg.event_mode == EventMode::None) return {};
    auto no = [&](const std::string& why) -> Result<void> {
        if (cfg.event_mode_set) return fail(Errc::NotSupported, "devarg event_mode=irq: " + why);
        logf(LogLevel::Info, "%s: no interrupts (%s): frontends must poll", name.c_str(), why.c_str());
        return {};
    };
    if (!(vcaps.event_mode & (1u << uint8_t(prm::EventMode::QP))))
        return no("the device has no QP event mode (virtio caps event_mode 0x" +
                  [&] { char b[8]; snprintf(b, sizeof b, "%x", vcaps.event_mode); return std::string(b); }() + ")");
    if (api->query_eqn(ctx.get(), 0, &eqn) != 0)
        return no("mlx5dv_devx_query_eqn(vector 0) failed: errno " + std::to_string(errno));
    auto u = devx::Uar::alloc(ctx);
    if (!u) return no("no UAR page: " + to_string(u.error()));
    uar = std::move(*u);
    auto r = IrqRelay::create(ctx, uar.get()->base_addr, vqs.size(), cfg.event_core, name);
    MLX5A_CHECK(r);
    irq_relay = std::move(*r);
    irq = true;
    return {};
}

// The event QPs of `rings` that have none (created before their virtqs:
// a virtq names its firmware QP at CREATE), each attached to the relay.
Result<void> Device::Impl::ensure_event_qps(std::span<const uint16_t> rings, uint16_t size) {
    if (!irq) return {};
    std::vector<uint16_t> todo;
    for (uint16_t r : rings)
        if (!vqs[r].eqp) todo.push_back(r);
    if (todo.empty()) return {};
    uint8_t log_n = 0;
    while ((2u << log_n) <= size && log_n < EventQp::kMaxLog) log_n++;
    auto qps = EventQp::create(*engine, ctx, pd.pdn(), uar.page_id(), eqn, todo, log_n,
                               std::chrono::milliseconds(cfg.timeout_ms), late_umem_mem);
    MLX5A_CHECK(qps);
    for (size_t i = 0; i < todo.size(); i++) {
        Vq& vq = vqs[todo[i]];
        vq.eqp = std::move((*qps)[i]);
        MLX5A_CHECK(irq_relay->attach(vq.index, &vq.eqp));
    }
    return {};
}

// Creates the objects of `rings` that do not exist (or exist with another
// ring size): one batch of their umems and counter objects, their event
// QPs, then one batch of virtq CREATEs. Objects end in INIT.
Result<void> Device::Impl::ensure_objects(std::span<const uint16_t> rings, uint16_t size) {
    auto o = plan_objects(rings, size);
    MLX5A_CHECK(o);
    if (o->rings.empty()) return {};
    std::vector<ObjectBuild> objs;
    objs.push_back(std::move(*o));
    Result<void> no_memory = {};
    return first_error(make_objects(objs, nullptr, no_memory), no_memory);
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
    // (Engine::drain), bounded by timeout_ms. A destroy that still races one
    // fails as the kernel's object lock makes it (EBUSY) and is kept.
    if (engine->late_commands() > 0)
        (void)engine->drain(std::chrono::steady_clock::now() + std::chrono::milliseconds(cfg.timeout_ms));
    auto res = run(std::move(destroys), BatchKind::Setup, nullptr);
    Result<void> first = {};
    for (auto& e : res.entries) {
        Vq& vq = vqs[e.queue];
        if (e.ok()) {
            vq.unsure = false;  // gone: nothing left to disagree with
            first = first_error(first, vqs.transition(vq, VqPhase::Absent));
            continue;
        }
        vq.obj = std::move(e.steps[0].obj);
        first = first_error(first, unexpected(e.steps[0].error()));
    }
    return first;
}

// What a virtq object names at CREATE: its three umems and its counters
// object (with interrupts also its event QP: ensure_event_qps).
Result<void> Device::Impl::add_virtq_resources(ObjectBuild& o, devx::Batch& b) {
    const bool with_counters = gcaps.has_obj_type(uint16_t(prm::ObjType::VIRTIO_Q_COUNTERS));
    o.umems_at = b.size();
    o.umem_of.clear();
    for (uint16_t r : o.rings) {
        Vq& vq = vqs[r];
        for (int n = 0; n < 3; n++) {
            const uint64_t sz = std::max<uint64_t>(vcaps.umem_size(n, o.size), 1);
            if (vq.umem[n].size() >= sz && vq.umem[n].id()) continue;
            vq.umem[n].reset();  // too small: deregistered before its memory goes
            auto mem = devx::PageBuffer::alloc(sz);
            MLX5A_CHECK(mem);
            vq.umem_mem[n] = std::move(*mem);
            b.add(devx::Command::reg_umem(ctx, vq.umem_mem[n].data(), sz, IBV_ACCESS_LOCAL_WRITE, r));
            o.umem_of.emplace_back(r, n);
        }
    }
    o.counters_at = b.size();
    for (uint16_t r : o.rings) {
        if (!with_counters || vqs[r].counters) continue;
        std::vector<std::byte> in(prm::kCountersCreateInBytes);
        prm::encode_create_counters(in);
        b.add(devx::Command::create_obj(ctx, std::move(in), prm::kGeneralObjOutHdrBytes, r));
    }
    o.counters = b.size() - o.counters_at;
    return {};
}

Result<void> Device::Impl::take_virtq_resources(ObjectBuild& o, devx::BatchResult& res) {
    Result<void> first = {};
    for (size_t i = 0; i < o.umem_of.size(); i++) {
        auto [r, n] = o.umem_of[i];
        auto& s = res.entries.at(o.umems_at + i).steps.at(0);
        if (s.ok()) {
            vqs[r].umem[n] = std::move(s.umem);
            continue;
        }
        // Unanswered: the registration may still complete over it.
        if (s.state != devx::StepState::Failed) late_umem_mem.push_back(std::move(vqs[r].umem_mem[n]));
        if (first) {
            Error e = s.error();
            e.what = "virtq " + std::to_string(r) + " umem " + std::to_string(n + 1) + ": " +
                     prm::describe(e);
            first = unexpected(std::move(e));
        }
    }
    for (size_t i = 0; i < o.counters; i++) {
        auto& e = res.entries.at(o.counters_at + i);
        if (e.ok()) vqs[e.queue].counters = std::move(e.steps[0].obj);
        else first = first_error(first, unexpected(e.steps.back().error()));
    }
    return first;
}

Result<void> Device::Impl::add_virtq_creates(ObjectBuild& o, devx::Batch& b) {
    o.creates_at = b.size();
    for (uint16_t r : o.rings) {
        auto c = devx::Command::create_virtq(ctx, base_attr(vqs[r], o.size), r);
        MLX5A_CHECK(c);
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
        vq.obj = std::move(e.steps[0].obj);
        if (events.get()) {
            const uint16_t ev[] = {prm::kEventObjectChange};
            auto sub = events.subscribe(vq.obj, ev, vq.index);
            if (!sub) logf(LogLevel::Warning, "%s: virtq %u: no error events: %s", name.c_str(),
                           vq.index, prm::describe(sub.error()).c_str());
        }
        vq.size = o.size;
        vq.attr = base_attr(vq, o.size);
        vq.fw_state = uint8_t(prm::VirtqState::INIT);
        first = first_error(first, vqs.transition(vq, VqPhase::Init));
    }
    return first;
}

Device::Device(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Device::~Device() {
    if (!impl_) return;
    if (impl_->emulator) impl_->emulator->on_announce({});  // it marks the ledger
    impl_->releaser.reset();  // no deferred destroy may run past this point
    impl_->recovery.reset();  // no event handler may run past this point
    impl_->irq_relay.reset();  // nor a completion event (it holds event QP pointers)
    if (impl_->engine) {
        // The objects go after their commands: a hung one is waited for
        // until the device answers or the kernel's command timeout fails it.
        if (unsigned late = impl_->engine->late_commands())
            logf(LogLevel::Warning,
                 "%s: closing with %u firmware commands unanswered: waiting for them (bounded by "
                 "the kernel's command timeout)",
                 impl_->name.c_str(), late);
        impl_->engine->shutdown();
    }
    impl_->engine.reset();
    impl_->vqs.clear();  // objects before mkeys before umems before PD before context
    impl_->mem = {};
    impl_->dirty.mem.reset();  // its mkey holds the PD
    impl_->dirty.retired.clear();
    impl_->uar.reset();  // after the event QPs naming its page
    impl_->events.reset();
    impl_->kick_relay.reset();  // unmaps its view of var first
    impl_->var.reset();
    impl_->tis.reset();  // after the virtqs naming it, before the PD
    impl_->td.reset();
    impl_->pd.reset();
    impl_->ctx.reset();
    impl_->emulator.reset();  // the emulated device goes after its last context
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
    auto be = open_backend(cfg, d.name);
    MLX5A_CHECK(be);
    d.api = be->api;
    d.emulator = std::move(be->emulator);
    d.ctx = std::move(be->ctx);
    if (d.emulator) d.emulator->on_announce([&d](uint16_t) { d.ledger.announced(); });
    MLX5A_CHECK(d.query_caps());
    d.query_port_mtu();
    auto pd = devx::Pd::alloc(d.ctx);
    MLX5A_CHECK(pd);
    d.pd = std::move(*pd);
    MLX5A_CHECK(d.make_transport());
    // Host notifiers: the frontend writes doorbells straight into this page
    // (mapped from the context's cmd_fd at mmap_off), as with DPDK's mlx5.
    if (mlx5dv_var* v = d.api->alloc_var(d.ctx.get(), 0)) {
        d.var = VarPtr(v, VarDeleter{d.api});
        auto relay = KickRelay::create(d.ctx.get()->cmd_fd, uint64_t(v->mmap_off), v->length,
                                       d.name, cfg.event_core);
        if (relay) d.kick_relay = std::move(*relay);
        else logf(LogLevel::Warning, "%s: no kick relay: %s", d.name.c_str(),
                  to_string(relay.error()).c_str());
    } else
        logf(LogLevel::Info, "%s: no VAR doorbell page (errno %d): host notifiers off",
             d.name.c_str(), errno);
    MLX5A_CHECK(d.make_engine(cfg.strategy, cfg.max_inflight));
    // Taken under mu, destroyed outside it: a control operation or a
    // query never waits for the old objects' destroys.
    d.releaser = std::make_unique<DeferredRelease>([&d] {
        std::vector<MemRegistration> gone;
        {
            std::lock_guard lk(d.mu);
            gone = d.take_unreferenced();
        }
    });
    MLX5A_CHECK(d.start_events());
    d.vqs.create(d.vcaps.max_num_virtio_queues, d.name);
    MLX5A_CHECK(d.setup_interrupts());
    if (cfg.queues) {
        if (cfg.queues * 2 > d.vqs.size())
            return fail(Errc::InvalidArgument,
                        "devarg queues=" + std::to_string(cfg.queues) + ": device supports " +
                            std::to_string(d.vqs.size() / 2) + " queue pairs");
        std::vector<uint16_t> rings(cfg.queues * 2);
        for (size_t i = 0; i < rings.size(); i++) rings[i] = uint16_t(i);
        std::lock_guard lk(d.mu);
        MLX5A_CHECK(d.ensure_objects(rings, uint16_t(cfg.queue_size)));
    }
    return dev;
}

const std::string& Device::name() const { return impl_->name; }
const DeviceConfig& Device::config() const { return impl_->cfg; }
uint32_t Device::max_virtqs() const { return uint32_t(impl_->vqs.size()); }
bool Device::has_notify_area() const { return impl_->var != nullptr; }

Result<Device::NotifyArea> Device::notify_area() const {
    if (!impl_->var) return fail(Errc::NotSupported, "no doorbell page (VAR) on this device");
    return NotifyArea{impl_->ctx.get()->cmd_fd, uint64_t(impl_->var->mmap_off),
                      uint64_t(impl_->var->length)};
}

std::string Device::backend() const { return backend_label(impl_->cfg, impl_->api); }

ModelTiming Device::model_timing() const {
    return impl_->emulator ? impl_->emulator->timing() : ModelTiming{};
}

Result<void> Device::emu_fault(std::string_view rule) {
    Impl& d = *impl_;
    if (!d.emulator)
        return fail(Errc::NotSupported, "fault injection needs an emulated device (emu=...)");
    return d.emulator->inject_fault(rule, [&d](uint16_t vq) -> Result<uint32_t> {
        std::lock_guard lk(d.mu);
        if (vq >= d.vqs.size())
            return fail(Errc::InvalidArgument, "fault rule: vq=" + std::to_string(vq) +
                                                   ": the device has virtqs 0.." +
                                                   std::to_string(d.vqs.size() - 1));
        if (!d.vqs[vq].obj)
            return fail(Errc::State, "fault rule: virtq " + std::to_string(vq) + " has no object");
        return d.vqs[vq].obj.obj_id();
    });
}

uint64_t Device::features() const {
    return device_features(impl_->vcaps, max_virtqs(), impl_->port_mtu);
}

uint16_t Device::port_mtu() const { return impl_->port_mtu; }

namespace {

VqInfo saved_info(const Device::Impl& d, const Vq& q) {
    VqInfo i{q.index,         q.phase(), q.fw_state, q.error_type, q.saved_avail, q.saved_used,
             q.obj.obj_id(), q.errors, q.unsure,   false};
    if (d.emulator && q.obj) {
        FrameCounts f = d.emulator->frames(q.obj.obj_id());
        i.arp_frames = f.arp;
        i.announce_frames = f.announces;
    }
    return i;
}

}  // namespace

std::vector<VqInfo> Device::vq_info() const {
    std::lock_guard lk(impl_->mu);
    std::vector<VqInfo> v;
    for (const Vq& q : impl_->vqs) v.push_back(saved_info(*impl_, q));
    return v;
}

Device::CommandHealth Device::command_health() {
    Impl& d = *impl_;
    std::lock_guard lk(d.mu);
    CommandHealth h;
    h.unanswered = d.engine ? d.engine->late_commands() : 0;
    h.slots = d.cfg.max_inflight;
    for (const Vq& q : d.vqs) h.unsure_virtqs += q.unsure;
    return h;
}

std::vector<VqInfo> Device::query_vq_info() {
    Impl& d = *impl_;
    std::lock_guard lk(d.mu);
    devx::Batch b;
    for (const Vq& q : d.vqs)  // an unsure one shows what the device holds
        if (q.obj && (q.phase() == VqPhase::Ready || q.unsure))
            b.add(devx::Command::query_virtq(q.obj, q.index));
    std::vector<VqInfo> v;
    for (const Vq& q : d.vqs) v.push_back(saved_info(d, q));
    if (b.empty()) return v;
    auto res = d.run(std::move(b), BatchKind::Query, nullptr);
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

Ledger& Device::ledger() { return impl_->ledger; }
const Ledger& Device::ledger() const { return impl_->ledger; }

OpTiming Device::last_timing(Op op) const {
    std::lock_guard lk(impl_->mu);
    return impl_->last[size_t(op)];
}

void Device::set_vhost_ns(Op op, uint64_t ns) {
    std::lock_guard lk(impl_->mu);
    impl_->last[size_t(op)].vhost_ns = ns;
    impl_->last[size_t(op)].total_ns += ns;
}

Result<void> Device::set_strategy(Strategy s) {
    std::lock_guard lk(impl_->mu);
    return impl_->make_engine(s, impl_->cfg.max_inflight);
}

Result<void> Device::set_max_inflight(uint32_t n) {
    if (n < 1 || n > 256) return fail(Errc::InvalidArgument, "max_inflight must be in 1..256");
    std::lock_guard lk(impl_->mu);
    return impl_->make_engine(impl_->cfg.strategy, n);
}

void Device::trace_enable(bool on) {
    std::lock_guard lk(impl_->mu);
    impl_->trace.on = on;
}

std::vector<CmdSpan> Device::trace_read(size_t max) {
    std::lock_guard lk(impl_->mu);
    size_t n = std::min(max, impl_->trace.spans.size());
    std::vector<CmdSpan> v(impl_->trace.spans.begin(), impl_->trace.spans.begin() + n);
    impl_->trace.spans.erase(impl_->trace.spans.begin(), impl_->trace.spans.begin() + n);
    return v;
}

}  // namespace mlx5async::core
