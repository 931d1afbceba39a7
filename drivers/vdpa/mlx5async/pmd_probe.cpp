// vdev driver vdpa_mlx5async: probe parses devargs, opens the device core and
// registers a vDPA device; remove undoes it. The registry maps vdpa devices
// and vhost ids to PmdDevice records.
#include <bus_vdev_driver.h>
#include <pthread.h>
#include <rte_lcore.h>
#include <rte_vhost.h>
#include <sched.h>
#include <vdpa_driver.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "common/prm/status.hpp"
#include "devargs.hpp"
#include "host_notifiers.hpp"
#include "log.hpp"
#include "pmd_device.hpp"
#include "trace_observer.hpp"
#include "vhost_socket.hpp"
#include "vring_coalescer.hpp"

namespace mlx5async::pmd {

extern rte_vdpa_dev_ops g_vdpa_ops;  // vdpa_ops.cpp

namespace {

std::mutex g_registry_mu;  // protects g_registry
std::vector<std::unique_ptr<PmdDevice>> g_registry;

// The CPUs DPDK gives its control threads (rte_ctrl_thread_create: the
// process's CPUs no lcore uses, else the main lcore's), read by starting one.
bool control_cpus(cpu_set_t& out) {
    struct Probe {
        cpu_set_t cpus;
        int rc = -1;
    } p;
    pthread_t t;
    auto fn = [](void* arg) -> void* {
        auto* q = static_cast<Probe*>(arg);
        q->rc = pthread_getaffinity_np(pthread_self(), sizeof q->cpus, &q->cpus);
        return nullptr;
    };
    if (rte_ctrl_thread_create(&t, "mlx5a-cpus", nullptr, fn, &p) != 0) return false;
    pthread_join(t, nullptr);
    if (p.rc != 0) return false;
    out = p.cpus;
    return true;
}

// Runs the calling thread on `cpus` until destroyed, so that the threads it
// creates meanwhile inherit them.
class ScopedAffinity {
public:
    explicit ScopedAffinity(const cpu_set_t& cpus) {
        active_ = pthread_getaffinity_np(pthread_self(), sizeof saved_, &saved_) == 0 &&
                  pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus) == 0;
    }
    ~ScopedAffinity() {
        if (active_) pthread_setaffinity_np(pthread_self(), sizeof saved_, &saved_);
    }
    ScopedAffinity(const ScopedAffinity&) = delete;
    ScopedAffinity& operator=(const ScopedAffinity&) = delete;

private:
    cpu_set_t saved_;
    bool active_ = false;
};

std::unique_ptr<PmdDevice> take_from_registry(PmdDevice* d) {
    std::lock_guard lk(g_registry_mu);
    auto it = std::find_if(g_registry.begin(), g_registry.end(), [&](const auto& p) { return p.get() == d; });
    std::unique_ptr<PmdDevice> dev = std::move(*it);
    g_registry.erase(it);
    return dev;
}

// The glue's threads end before the core goes, the vDPA registration last.
void release(std::unique_ptr<PmdDevice> dev) {
    dev->coalescer.reset();  // joins its thread before the core goes
    if (dev->notifiers) dev->notifiers->wait_idle();
    dev->notifiers.reset();
    if (dev->vdpa) rte_vdpa_unregister_device(dev->vdpa);
}

int probe(rte_vdev_device* vdev) noexcept {
    const char* name = rte_vdev_device_name(vdev);
    const char* args = rte_vdev_device_args(vdev);
    auto cfg = parse_devargs(args);
    if (!cfg) {
        MLX5A_LOG(ERR, "%s: %s", name, cfg.error().what.c_str());
        return -EINVAL;
    }
    // The driver's threads (the engine's workers, ring-state, event, kick
    // and interrupt threads; event_core still pins the last two) run where
    // DPDK runs control threads, vhost-events included, which calls the
    // vDPA ops: probe runs on the main lcore, whose CPU belongs to its
    // application. The workers then follow whichever thread runs a batch.
    cpu_set_t ctrl;
    std::optional<ScopedAffinity> on_ctrl;
    if (control_cpus(ctrl))
        on_ctrl.emplace(ctrl);
    else
        MLX5A_LOG(WARNING, "%s: DPDK's control CPUs unknown: driver threads stay on the main lcore's",
                  name);
    cfg->engine_switches.observer = make_trace_observer(name);
    auto core = core::Device::open(*cfg, name);
    if (!core) {
        MLX5A_LOG(ERR, "%s: cannot open %s: %s", name,
                  cfg->is_emulated() ? ("emulated " + cfg->emu_spec).c_str() : cfg->hw_device.c_str(),
                  prm::describe(core.error()).c_str());
        return to_errno(core.error());
    }
    auto dev = std::make_unique<PmdDevice>();
    dev->vdev = vdev;
    dev->core = std::move(*core);
    dev->core->ledger().set_observer(make_ledger_tracer(name));
    dev->stats_base.resize(dev->core->max_virtqs());
    dev->coalescer = std::make_unique<VringStateCoalescer>(*dev);
    if (dev->core->has_notify_area()) dev->notifiers = std::make_unique<HostNotifiers>(*dev);
    on_ctrl.reset();
    PmdDevice* d = dev.get();
    {
        // In the registry before registering: vhost calls get_dev_type from
        // inside rte_vdpa_register_device (found by rte_device then).
        std::lock_guard lk(g_registry_mu);
        g_registry.push_back(std::move(dev));
    }
    rte_vdpa_device* vdpa = rte_vdpa_register_device(&vdev->device, &g_vdpa_ops);
    if (!vdpa) {
        MLX5A_LOG(ERR, "%s: rte_vdpa_register_device failed", name);
        release(take_from_registry(d));
        return -ENODEV;
    }
    {
        std::lock_guard lk(g_registry_mu);
        d->vdpa = vdpa;
    }
    if (!cfg->vhost_socket.empty()) {
        // After d->vdpa: a frontend may connect at once, and the vDPA ops
        // find the device through it.
        auto sock = VhostSocket::open(cfg->vhost_socket, cfg->vhost_client, vdpa);
        if (!sock) {
            MLX5A_LOG(ERR, "%s: %s", name, sock.error().what.c_str());
            release(take_from_registry(d));
            return to_errno(sock.error());
        }
        d->socket = std::move(*sock);
    }
    MLX5A_LOG(INFO, "%s: probed %s, %u virtqs, strategy %s, max_inflight %u", name,
              d->core->backend().c_str(), d->core->max_virtqs(),
              core::strategy_name(cfg->strategy), cfg->max_inflight);
    if (d->socket)
        MLX5A_LOG(INFO, "%s: serves vhost-user socket %s (%s)", name, d->socket->path().c_str(),
                  d->socket->client() ? "client" : "server");
    return 0;
}

int remove(rte_vdev_device* vdev) noexcept {
    PmdDevice* d = nullptr;
    {
        std::lock_guard lk(g_registry_mu);
        auto it = std::find_if(g_registry.begin(), g_registry.end(),
                               [&](const auto& p) { return p->vdev == vdev; });
        if (it == g_registry.end()) return -ENODEV;
        d = it->get();
    }
    // Before the device leaves the registry: vhost closes a live
    // connection of the socket first, and its dev_close and dev_cleanup
    // find the device there.
    d->socket.reset();
    std::unique_ptr<PmdDevice> dev = take_from_registry(d);
    if (dev->vid >= 0)
        MLX5A_LOG(WARNING, "%s: removed while vhost device %d is attached",
                  rte_vdev_device_name(vdev), dev->vid.load());
    release(std::move(dev));
    MLX5A_LOG(INFO, "%s: removed", rte_vdev_device_name(vdev));
    return 0;
}

rte_vdev_driver g_vdev_driver = {
    .next = {},
    .driver = {},
    .probe = probe,
    .remove = remove,
    .dma_map = nullptr,
    .dma_unmap = nullptr,
    .drv_flags = 0,
};

}  // namespace

PmdDevice* find_device(const rte_vdpa_device* vdpa) {
    std::lock_guard lk(g_registry_mu);
    for (auto& d : g_registry)
        if (d->vdpa == vdpa || (vdpa && vdpa->device == &d->vdev->device)) return d.get();
    return nullptr;
}

PmdDevice* find_device_by_vid(int vid) {
    rte_vdpa_device* vdpa = rte_vhost_get_vdpa_device(vid);
    return vdpa ? find_device(vdpa) : nullptr;
}

std::vector<PmdDevice*> all_devices() {
    std::lock_guard lk(g_registry_mu);
    std::vector<PmdDevice*> v;
    for (auto& d : g_registry) v.push_back(d.get());
    return v;
}

PmdDevice* find_device_by_name(const char* name) {
    std::lock_guard lk(g_registry_mu);
    for (auto& d : g_registry)
        if (d->core->name() == name) return d.get();
    return nullptr;
}

RTE_PMD_REGISTER_VDEV(vdpa_mlx5async, g_vdev_driver);
RTE_PMD_REGISTER_PARAM_STRING(vdpa_mlx5async,
                              "emu=cx6dx|cx7 dev=<PCI BDF> queues=<1..512> queue_size=<2..32768> "
                              "max_inflight=<1..256> strategy=" MLX5A_STRATEGY_CHOICES " "
                              "max_conf_threads=<1..64> timeout_ms=<ms> event_mode=irq|none event_core=<cpu> "
                              "vhost_socket=<path> vhost_client=0|1 announce=on|off announce_rounds=<n> "
                              "announce_initial_ms=<ms> announce_step_ms=<ms> announce_max_ms=<ms> "
                              "emu_modify_us=<us> emu_query_us=<us> ...");

}  // namespace mlx5async::pmd
