// Test host for the PMD's EAL-level tests: an EAL process that probes the
// PMD (--vdev), serves a vhost-user socket attached to the vDPA device, and
// answers line commands on stdin with one JSON line each on stdout:
//   info                -> device info + every virtq (state, hw indexes)
//   suspend | resume    -> rte_pmd_mlx5async_suspend/resume + timing
//   wait-ready N SEC    -> waits until N virtqs are RDY (or times out)
//   wait-vid SEC        -> waits until a frontend is attached/detached
//   rings               -> per vring: the guest's avail->idx and used->idx
//                          (read from guest memory) and vhost's vring base
//   cycles K            -> K x (suspend all, resume all); failures counted
//   stats Q             -> the vDPA stats of virtq Q (rte_vdpa_get_stats)
//   quit
// Usage: vdpa_host <EAL args> -- --socket PATH [--device NAME] [--client]
#include <rte_eal.h>
#include <rte_vdpa.h>
#include <rte_vhost.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "rte_pmd_mlx5async.h"

namespace {

std::mutex g_mu;  // protects g_vid
std::condition_variable g_cv;
int g_vid = -1;
int g_connections = 0;

int on_new_device(int vid) {
    std::lock_guard lk(g_mu);
    g_vid = vid;
    g_connections++;
    g_cv.notify_all();
    return 0;
}

void on_destroy_device(int) {
    std::lock_guard lk(g_mu);
    g_vid = -1;
    g_cv.notify_all();
}

// The driver's message hooks from the connection's first message, as the
// public header asks of an application.
int on_new_connection(int vid) { return rte_pmd_mlx5async_watch_connection(vid); }

const rte_vhost_device_ops g_ops = {
    .new_device = on_new_device,
    .destroy_device = on_destroy_device,
    .new_connection = on_new_connection,
};

rte_vdpa_device* g_dev = nullptr;

std::string info_json() {
    rte_pmd_mlx5async_dev_info di{};
    int rc = rte_pmd_mlx5async_get_dev_info(g_dev, &di);
    rte_pmd_mlx5async_vq_info vqs[1024];
    int n = rte_pmd_mlx5async_get_vq_info(g_dev, vqs, 1024);
    std::ostringstream o;
    o << "{\"rc\":" << rc << ",\"name\":\"" << di.name << "\",\"max_queues\":" << di.max_queues
      << ",\"queues\":" << di.queues << ",\"vid\":" << di.vid << ",\"features\":" << di.features
      << ",\"interrupts\":" << di.interrupts << ",\"vqs\":[";
    for (int i = 0; i < n; i++) {
        o << (i ? "," : "") << "{\"index\":" << vqs[i].index << ",\"state\":" << int(vqs[i].fw_state)
          << ",\"avail\":" << vqs[i].hw_available_index << ",\"used\":" << vqs[i].hw_used_index
          << ",\"obj\":" << vqs[i].obj_id << ",\"errors\":" << vqs[i].errors
          << ",\"interrupts\":" << vqs[i].interrupts << "}";
    }
    o << "]}";
    return o.str();
}

std::string timing_json(int rc, rte_pmd_mlx5async_op op) {
    rte_pmd_mlx5async_timing t{};
    rte_pmd_mlx5async_last_timing(g_dev, op, &t);
    std::ostringstream o;
    o << "{\"rc\":" << rc << ",\"queues\":" << t.queues << ",\"commands\":" << t.commands
      << ",\"failed\":" << t.failed << ",\"peak_inflight\":" << t.peak_inflight
      << ",\"total_ns\":" << t.total_ns << "}";
    return o.str();
}

// What the frontend's rings say (guest memory, through vhost's mapping) and
// what vhost holds as the rings' base (set by the driver at dev_close).
std::string rings_json(int vid) {
    std::ostringstream o;
    o << "{\"vid\":" << vid << ",\"rings\":[";
    int n = vid >= 0 ? int(rte_vhost_get_vring_num(vid)) : 0;
    for (int i = 0; i < n; i++) {
        rte_vhost_vring vr{};
        uint16_t la = 0, lu = 0;
        int rc = rte_vhost_get_vhost_vring(vid, uint16_t(i), &vr);
        rte_vhost_get_vring_base(vid, uint16_t(i), &la, &lu);
        // Split ring (virtio 2.7.6/2.7.8): u16 flags, then u16 idx.
        auto idx_of = [](const void* ring) {
            return int(__atomic_load_n(static_cast<const uint16_t*>(ring) + 1, __ATOMIC_ACQUIRE));
        };
        int avail = rc == 0 && vr.avail ? idx_of(vr.avail) : -1;
        int used = rc == 0 && vr.used ? idx_of(vr.used) : -1;
        o << (i ? "," : "") << "{\"index\":" << i << ",\"avail\":" << avail << ",\"used\":" << used
          << ",\"last_avail\":" << la << ",\"last_used\":" << lu << "}";
    }
    o << "]}";
    return o.str();
}

int count_rdy() {
    rte_pmd_mlx5async_vq_info vqs[1024];
    int n = rte_pmd_mlx5async_get_vq_info(g_dev, vqs, 1024);
    int k = 0;
    for (int i = 0; i < n; i++) k += vqs[i].fw_state == RTE_PMD_MLX5ASYNC_VQ_STATE_RDY;
    return k;
}

// One command of the test's line protocol: its JSON answer.
std::string command(const std::string& cmd, std::istringstream& in) {
    std::string out;
    if (cmd == "info") {
        out = info_json();
    } else if (cmd == "suspend") {
        out = timing_json(rte_pmd_mlx5async_suspend(&g_dev, 1), RTE_PMD_MLX5ASYNC_OP_SUSPEND);
    } else if (cmd == "resume") {
        out = timing_json(rte_pmd_mlx5async_resume(&g_dev, 1), RTE_PMD_MLX5ASYNC_OP_RESUME);
    } else if (cmd == "wait-ready") {
        int n = 0, sec = 30;
        in >> n >> sec;
        auto end = std::chrono::steady_clock::now() + std::chrono::seconds(sec);
        int k = 0;
        // The PMD has no readiness callback to the app; vhost's new_device
        // follows dev_conf, so wait on it, then read the states.
        std::unique_lock lk(g_mu);
        while ((k = count_rdy()) < n && std::chrono::steady_clock::now() < end)
            g_cv.wait_until(lk, std::min(end, std::chrono::steady_clock::now() +
                                                  std::chrono::milliseconds(50)));
        out = "{\"rdy\":" + std::to_string(k) + "}";
    } else if (cmd == "wait-vid") {
        int want = 0, sec = 30;
        in >> want >> sec;  // 1: attached, 0: detached
        std::unique_lock lk(g_mu);
        bool ok = g_cv.wait_for(lk, std::chrono::seconds(sec),
                                [&] { return (g_vid >= 0) == (want != 0); });
        out = "{\"ok\":" + std::string(ok ? "true" : "false") +
              ",\"connections\":" + std::to_string(g_connections) + "}";
    } else if (cmd == "rings") {
        int vid;
        {
            std::lock_guard lk(g_mu);
            vid = g_vid;
        }
        out = rings_json(vid);
    } else if (cmd == "cycles") {
        int k = 0, failed = 0;
        in >> k;
        for (int i = 0; i < k; i++) {
            failed += rte_pmd_mlx5async_suspend(&g_dev, 1) != 0;
            failed += rte_pmd_mlx5async_resume(&g_dev, 1) != 0;
        }
        out = "{\"cycles\":" + std::to_string(k) + ",\"failed\":" + std::to_string(failed) + "}";
    } else if (cmd == "stats") {
        int q = 0;
        in >> q;
        rte_vdpa_stat_name names[16];
        rte_vdpa_stat st[16];
        int nn = rte_vdpa_get_stats_names(g_dev, names, 16);
        int ns = rte_vdpa_get_stats(g_dev, uint16_t(q), st, 16);
        std::ostringstream o;
        o << "{\"rc\":" << ns;
        for (int i = 0; i < ns && i < nn; i++) o << ",\"" << names[st[i].id].name << "\":" << st[i].value;
        o << "}";
        out = o.str();
    } else {
        out = "{\"error\":\"unknown command\"}";
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    int used = rte_eal_init(argc, argv);
    if (used < 0) {
        std::fprintf(stderr, "vdpa_host: EAL init failed\n");
        return 1;
    }
    argc -= used;
    argv += used;
    std::string socket, device = "vdpa_mlx5async0";
    uint64_t flags = 0;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--socket") && i + 1 < argc) socket = argv[++i];
        else if (!std::strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
        else if (!std::strcmp(argv[i], "--client")) flags |= RTE_VHOST_USER_CLIENT;
    }
    g_dev = rte_vdpa_find_device_by_name(device.c_str());
    if (!g_dev || !rte_pmd_mlx5async_is_mine(g_dev) || socket.empty()) {
        std::fprintf(stderr, "vdpa_host: need an mlx5async --vdev and --socket PATH\n");
        return 1;
    }
    if (rte_vhost_driver_register(socket.c_str(), flags) != 0 ||
        rte_vhost_driver_attach_vdpa_device(socket.c_str(), g_dev) != 0 ||
        rte_vhost_driver_callback_register(socket.c_str(), &g_ops) != 0 ||
        rte_vhost_driver_start(socket.c_str()) != 0) {
        std::fprintf(stderr, "vdpa_host: cannot serve %s\n", socket.c_str());
        return 1;
    }
    std::printf("{\"ready\":true}\n");
    std::fflush(stdout);
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream in(line);
        std::string cmd;
        in >> cmd;
        if (cmd == "quit") break;
        const std::string out = command(cmd, in);
        std::printf("%s\n", out.c_str());
        std::fflush(stdout);
    }
    rte_vhost_driver_unregister(socket.c_str());
    rte_eal_cleanup();
    return 0;
}
