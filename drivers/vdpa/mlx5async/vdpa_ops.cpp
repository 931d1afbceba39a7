// rte_vdpa_dev_ops: one short function per entry; each finds the device,
// calls the core, maps the Result to an int and logs with the vid. The ops
// table is at the bottom (as DPDK's ifc).
#include <rte_vhost.h>
#include <vdpa_driver.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/devx/error_log.hpp"
#include "common/prm/status.hpp"
#include "host_notifiers.hpp"
#include "log.hpp"
#include "pmd_device.hpp"
#include "vhost_guest.hpp"
#include "vhost_hooks.hpp"
#include "vring_coalescer.hpp"

namespace mlx5async::pmd {
namespace {

// vhost-user protocol feature bits, rte_vhost.h's.
constexpr uint64_t proto(unsigned bit) { return 1ull << bit; }

const char* const kStatNames[] = {
    "received_descriptors", "completed_descriptors", "bad descriptor errors",
    "exceed max chain",     "invalid buffer",        "completion errors",
};
constexpr unsigned kNumStats = sizeof(kStatNames) / sizeof(kStatNames[0]);

// The device serves one vhost connection at a time (PmdDevice::vid): the
// one whose dev_conf took it, until its dev_cleanup. A second frontend (or a
// bare connect probing the socket) must not reconfigure, stop or clean up
// the first one's virtqs; what it asks before its own dev_conf (ring
// enables, LOG_ALL) waits for that dev_conf, so a connection that only
// negotiated blocks nobody.
PmdDevice* served(int vid) {
    PmdDevice* d = find_device_by_vid(vid);
    if (d) watch_messages(vid);  // vhost_hooks.hpp: at the first callback that names vid
    return d && d->vid.load() == vid ? d : nullptr;
}

// dev_conf: the device is free or already this connection's.
int take(PmdDevice* d, int vid) {
    int owner = -1;
    if (d->vid.compare_exchange_strong(owner, vid) || owner == vid) return 0;
    MLX5A_LOG(WARNING, "vid %d: dev_conf: %s serves vid %d; this connection waits for it to leave",
              vid, d->core->name().c_str(), owner);
    return -EBUSY;
}

// The ring enables a connection asked for before it took the device.
void apply_waiting(PmdDevice* d, int vid) {
    std::map<uint16_t, bool> rings;
    {
        std::lock_guard lk(d->waiting_mu);
        auto it = d->waiting.find(vid);
        if (it == d->waiting.end()) return;
        rings = std::move(it->second);
        d->waiting.erase(it);
    }
    for (auto [ring, enable] : rings) d->core->set_vring_state(ring, enable);
}

int fail_op(const char* op, int vid, const Error& e) {
    MLX5A_LOG(ERR, "vid %d: %s: %s", vid, op, devx::describe_once(e).c_str());
    return to_errno(e);
}

int get_queue_num(rte_vdpa_device* vdpa, uint32_t* queue_num) noexcept {
    PmdDevice* d = find_device(vdpa);
    if (!d) return -ENODEV;
    *queue_num = d->core->max_virtqs() / 2;  // queue pairs
    return 0;
}

int get_features(rte_vdpa_device* vdpa, uint64_t* features) noexcept {
    PmdDevice* d = find_device(vdpa);
    if (!d) return -ENODEV;
    *features = d->core->features();
    return 0;
}

int get_protocol_features(rte_vdpa_device* vdpa, uint64_t* features) noexcept {
    if (!find_device(vdpa)) return -ENODEV;
    // HOST_NOTIFIER (and the SLAVE_* channel carrying it) only when there
    // is a doorbell page vhost can hand to the frontend
    // (get_vfio_device_fd/get_notify_area); the kick relay serves otherwise.
    *features = proto(VHOST_USER_PROTOCOL_F_MQ) | proto(VHOST_USER_PROTOCOL_F_LOG_SHMFD) |
                proto(VHOST_USER_PROTOCOL_F_REPLY_ACK) | proto(VHOST_USER_PROTOCOL_F_NET_MTU) |
                proto(VHOST_USER_PROTOCOL_F_STATUS);
    // RARP: the device sends QEMU's announce itself (SEND_RARP).
    if (find_device(vdpa)->core->announces()) *features |= proto(VHOST_USER_PROTOCOL_F_RARP);
    if (find_device(vdpa)->core->has_notify_area())
        *features |= proto(VHOST_USER_PROTOCOL_F_SLAVE_REQ) | proto(VHOST_USER_PROTOCOL_F_SLAVE_SEND_FD) |
                     proto(VHOST_USER_PROTOCOL_F_HOST_NOTIFIER);
    return 0;
}

// vhost runs every device's dev_conf on its one thread, and QEMU sends a
// VM's next NIC its messages only after this one returned: the start runs
// on the device's strand, so the devices of a VM start side by side. What
// the device refuses (the memory table, a ring beyond it, features it never
// offered) is refused here, starting nothing; a start that fails later is
// logged once with its cause and stays in the ledger, its rings stopped,
// and the next dev_conf tries again.
int dev_conf(int vid) noexcept {
    PmdDevice* d = find_device_by_vid(vid);
    if (!d) return -ENODEV;
    watch_messages(vid);
    if (int busy = take(d, vid)) return busy;
    apply_waiting(d, vid);
    d->core->ledger().mark(core::LedgerPhase::StartRequested);
    auto g = read_guest_config(vid);
    if (!g) return fail_op("dev_conf", vid, g.error());
    // LOG_ALL negotiated before this connection took the device: the
    // device logs before any of its rings runs, or nothing starts.
    if (g->features & core::vfeat::LOG_ALL) {
        auto log = vhost_dirty_log(vid);
        auto r = log ? d->core->set_dirty_logging(true, *log) : Result<void>(unexpected(log.error()));
        if (!r) return fail_op("dev_conf (LOG_ALL)", vid, r.error());
    }
    const uint64_t seq = d->core->ledger().snapshot().start_seq;
    const size_t rings = g->vrings.size();
    auto r = d->core->start(*g, [d, vid, seq, rings](const Result<void>& res) {
        if (!res && res.error().code == Errc::Cancelled)  // a stop came first: expected
            MLX5A_LOG(INFO, "vid %d: %s: %s", vid, d->core->name().c_str(), res.error().what.c_str());
        else if (!res)  // some rings may run still: those the error does not name
            MLX5A_LOG(ERR, "vid %d: %s: start: %s", vid, d->core->name().c_str(),
                      devx::describe_once(res.error()).c_str());
        if (d->core->ledger().snapshot().start_rings == 0) return;
        // Only for the connection this start was for, while it is served:
        // a start that ended after its frontend left asks nothing of the next.
        if (d->notifiers && d->vid.load() == vid && d->configured) d->notifiers->request(vid, seq);
        MLX5A_LOG(INFO, "vid %d: %s started, %zu vrings", vid, d->core->name().c_str(), rings);
    });
    if (!r) return fail_op("dev_conf", vid, r.error());
    d->configured = true;
    d->core->ledger().mark(core::LedgerPhase::ConfReturned);
    MLX5A_LOG(INFO, "vid %d: %s configured, %zu vrings", vid, d->core->name().c_str(), rings);
    return 0;
}

int dev_close(int vid) noexcept {
    PmdDevice* d = served(vid);
    if (!d) return 0;  // vhost's disconnect of a connection that never took the device
    core::Ledger& ledger = d->core->ledger();
    ledger.mark(core::LedgerPhase::StopRequested);
    if (d->notifiers) d->notifiers->cancel();  // never waited for here (host_notifiers.hpp)
    d->coalescer->flush_now();  // pending disables ride in this batch's wake
    d->configured = false;
    std::vector<core::RingIndexes> rings;
    auto r = d->core->close(rings);  // after a start still running: it waits for it
    if (d->notifiers) d->notifiers->cancel();  // one that start asked for, not yet begun
    // Indexes go back for every ring, failed or not (last known-good).
    HandBack h = hand_back_rings(vid, rings, d->core->dirty_logging());
    if (h.log_unbacked)
        MLX5A_LOG(ERR, "vid %d: dev_close: the vhost log's file is shorter than its mapping (the frontend "
                  "cut it): used rings not logged; the frontend must not complete a migration on it", vid);
    ledger.set_stop_rings(h.rings, h.logged);
    ledger.mark(core::LedgerPhase::BasesHandedBack);
    ledger.mark(core::LedgerPhase::UsedRingsLogged);
    d->core->set_vhost_ns(core::Op::Suspend, h.bases_ns + h.log_ns);
    if (!r) return fail_op("dev_close", vid, r.error());
    return 0;
}

int dev_cleanup(int vid) noexcept {
    PmdDevice* d = find_device_by_vid(vid);
    if (!d) return -ENODEV;
    if (int owner = d->vid; owner != vid) {
        {
            std::lock_guard lk(d->waiting_mu);
            d->waiting.erase(vid);
        }
        MLX5A_LOG(INFO, "vid %d: connection closed; %s serves vid %d: nothing to clean up", vid,
                  d->core->name().c_str(), owner);
        return 0;
    }
    if (d->notifiers) d->notifiers->wait_idle();  // vhost frees the device next
    d->core->cleanup();
    d->vid = -1;
    MLX5A_LOG(INFO, "vid %d: %s: frontend left; the device serves the next one", vid,
              d->core->name().c_str());
    return 0;
}

int set_vring_state(int vid, int vring, int state) noexcept {
    PmdDevice* d = find_device_by_vid(vid);
    if (!d) return -ENODEV;
    if (vring < 0 || uint32_t(vring) >= d->core->max_virtqs()) {
        MLX5A_LOG(ERR, "vid %d: set_vring_state: ring %d out of range (max %u)", vid, vring,
                  d->core->max_virtqs());
        return -EINVAL;
    }
    if (!served(vid)) {  // kept for its dev_conf
        std::lock_guard lk(d->waiting_mu);
        d->waiting[vid][uint16_t(vring)] = state != 0;
        return 0;
    }
    d->coalescer->record(vid, uint16_t(vring), state != 0);
    return 0;
}

// vhost: set_features, at a SET_FEATURES that changed them: LOG_ALL turned
// on (migration start) or off. vhost ignores the result: the message hook
// (vhost_hooks.hpp) answers the frontend when the device does not log.
int set_features(int vid) noexcept {
    PmdDevice* d = served(vid);
    if (!d) return 0;  // a connection's LOG_ALL waits for its dev_conf
    uint64_t features = 0;
    if (rte_vhost_get_negotiated_features(vid, &features) != 0) return -EINVAL;
    if (!(features & core::vfeat::LOG_ALL)) {
        auto r = d->core->set_dirty_logging(false, {});
        return r ? 0 : fail_op("set_features (LOG_ALL off)", vid, r.error());
    }
    auto log = vhost_dirty_log(vid);
    if (!log) return fail_op("set_features (LOG_ALL)", vid, log.error());
    auto r = d->core->set_dirty_logging(true, *log);
    return r ? 0 : fail_op("set_features (LOG_ALL)", vid, r.error());
}

int migration_done(int vid) noexcept {
    return find_device_by_vid(vid) ? 0 : -ENODEV;
}

// vhost maps this fd at the notify area's offset and hands it to the
// frontend (host notifier): the doorbell page, as DPDK's mlx5 does with
// the device context's cmd_fd and its VAR.
int get_vfio_device_fd(int vid) noexcept {
    PmdDevice* d = find_device_by_vid(vid);
    if (!d) return -ENODEV;
    auto a = d->core->notify_area();
    return a ? a->fd : to_errno(a.error());
}

int get_notify_area(int vid, int qid, uint64_t* offset, uint64_t* size) noexcept {
    PmdDevice* d = find_device_by_vid(vid);
    if (!d) return -ENODEV;
    if (qid < 0 || uint32_t(qid) >= d->core->max_virtqs()) return -EINVAL;
    auto a = d->core->notify_area();
    if (!a) return to_errno(a.error());
    *offset = a->offset;  // one page for every queue: the doorbell takes the queue index
    *size = a->size;
    return 0;
}

int get_stats_names(rte_vdpa_device* vdpa, rte_vdpa_stat_name* names, unsigned size) noexcept {
    if (!find_device(vdpa)) return -ENODEV;
    if (!names) return kNumStats;
    unsigned n = std::min(size, kNumStats);
    for (unsigned i = 0; i < n; i++)
        std::snprintf(names[i].name, RTE_VDPA_STATS_NAME_SIZE, "%s", kStatNames[i]);
    return int(n);
}

int get_stats(rte_vdpa_device* vdpa, int qid, rte_vdpa_stat* stats, unsigned n) noexcept {
    PmdDevice* d = find_device(vdpa);
    if (!d) return -ENODEV;
    auto c = d->core->counters(uint16_t(qid));
    if (!c) return fail_op("get_stats", d->vid, c.error());
    std::lock_guard lk(d->stats_mu);
    const prm::VirtqCounters& b = d->stats_base.at(qid);
    const uint64_t v[kNumStats] = {
        c->received_desc - b.received_desc,       c->completed_desc - b.completed_desc,
        uint64_t(c->bad_desc_errors - b.bad_desc_errors),
        uint64_t(c->exceed_max_chain - b.exceed_max_chain),
        uint64_t(c->invalid_buffer - b.invalid_buffer), uint64_t(c->error_cqes - b.error_cqes),
    };
    unsigned m = std::min(n, kNumStats);
    for (unsigned i = 0; i < m; i++) stats[i] = {i, v[i]};
    return int(m);
}

int reset_stats(rte_vdpa_device* vdpa, int qid) noexcept {
    PmdDevice* d = find_device(vdpa);
    if (!d) return -ENODEV;
    auto c = d->core->counters(uint16_t(qid));
    if (!c) return fail_op("reset_stats", d->vid, c.error());
    std::lock_guard lk(d->stats_mu);
    d->stats_base.at(qid) = *c;  // a baseline: survives re-creation of the object
    return 0;
}

// virtio-net config space (virtio spec 5.1.4), little-endian on x86.
struct NetConfig {
    uint8_t mac[6];
    uint16_t status;
    uint16_t max_virtqueue_pairs;
    uint16_t mtu;
} __attribute__((packed));
constexpr uint16_t kLinkUp = 1;  // VIRTIO_NET_S_LINK_UP

int get_config(int vid, uint8_t* config, uint32_t size) noexcept {
    PmdDevice* d = find_device_by_vid(vid);
    if (!d) return -ENODEV;
    NetConfig c{};
    c.status = kLinkUp;
    c.max_virtqueue_pairs = uint16_t(d->core->max_virtqs() / 2);
    c.mtu = d->core->port_mtu() ? d->core->port_mtu() : 1500;  // the Ethernet default when unknown
    std::memcpy(config, &c, std::min<uint32_t>(size, sizeof c));
    return 0;
}

int set_config(int vid, uint8_t*, uint32_t, uint32_t, uint32_t) noexcept {
    // virtio-net config space is device-owned (MAC, status, MQ pairs, MTU).
    return find_device_by_vid(vid) ? -ENOTSUP : -ENODEV;
}

int get_dev_type(rte_vdpa_device* vdpa, uint32_t* type) noexcept {
    if (!find_device(vdpa)) return -ENODEV;
    *type = RTE_VHOST_VDPA_DEVICE_TYPE_NET;
    return 0;
}

}  // namespace

rte_vdpa_dev_ops g_vdpa_ops = {
    .get_queue_num = get_queue_num,
    .get_features = get_features,
    .get_protocol_features = get_protocol_features,
    .dev_conf = dev_conf,
    .dev_close = dev_close,
    .dev_cleanup = dev_cleanup,
    .set_vring_state = set_vring_state,
    .set_features = set_features,
    .migration_done = migration_done,
    .get_vfio_group_fd = nullptr,
    .get_vfio_device_fd = get_vfio_device_fd,
    .get_notify_area = get_notify_area,
    .get_stats_names = get_stats_names,
    .get_stats = get_stats,
    .reset_stats = reset_stats,
    .get_config = get_config,
    .set_config = set_config,
    .get_dev_type = get_dev_type,
};

}  // namespace mlx5async::pmd
