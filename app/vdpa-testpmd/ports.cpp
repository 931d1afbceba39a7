// vdpa-testpmd: device discovery, vhost-user sockets, frontend readiness.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <sys/eventfd.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_dev.h>
#include <rte_vdpa.h>
#include <rte_vhost.h>

#include "app.hpp"
#include "common/base/unix_socket.hpp"
#include "trace.hpp"  // complete type for ~App

namespace vdpa_testpmd {

namespace {

App* g_app = nullptr;  // the vhost callbacks carry no context

Port* port_of_vid(int vid) {
    char path[PATH_MAX];
    if (rte_vhost_get_ifname(vid, path, sizeof(path)) != 0)
        return nullptr;
    for (auto& p : g_app->ports)
        if (p->attached && p->socket == path)
            return p.get();
    return nullptr;
}

// vhost: new_device runs once every vring is ready, just before the vDPA
// driver's dev_conf (lib/vhost calls it first), so readiness of the virtqs
// themselves is checked separately (is_ready).
int on_new_device(int vid) {
    std::lock_guard lk(g_app->mu);
    if (Port* p = port_of_vid(vid)) {
        p->vid = vid;
        p->connections++;
    }
    g_app->cv.notify_all();
    return 0;
}

void on_destroy_device(int vid) {
    std::lock_guard lk(g_app->mu);
    if (Port* p = port_of_vid(vid); p && p->vid == vid)
        p->vid = -1;
    g_app->cv.notify_all();
}

// The driver's message hooks guard the connection from its first message
// (rte_pmd_mlx5async.h); every port is the driver's.
int on_new_connection(int vid) {
    int rc = rte_pmd_mlx5async_watch_connection(vid);
    if (rc != 0)
        printf("error: vid %d: the driver's message hooks cannot watch it (%d); refusing it\n", vid, rc);
    return rc;
}

const struct rte_vhost_device_ops kVhostOps = {
    .new_device = on_new_device,
    .destroy_device = on_destroy_device,
    .new_connection = on_new_connection,
};

}  // namespace

uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

const char* strategy_name(rte_pmd_mlx5async_strategy s) {
    const char* n = rte_pmd_mlx5async_strategy_name(s);
    return n ? n : "unknown";
}

// The PMD's strategies, in its order: values until the name is unknown.
std::vector<rte_pmd_mlx5async_strategy> strategies() {
    std::vector<rte_pmd_mlx5async_strategy> v;
    for (int i = 0; rte_pmd_mlx5async_strategy_name(rte_pmd_mlx5async_strategy(i)); i++)
        v.push_back(rte_pmd_mlx5async_strategy(i));
    return v;
}

std::optional<rte_pmd_mlx5async_strategy> parse_strategy(const char* s) {
    for (auto v : strategies())
        if (strcmp(s, strategy_name(v)) == 0)
            return v;
    return std::nullopt;
}

std::string strategy_choices(const char* sep) {
    std::string out;
    for (auto v : strategies())
        out += (out.empty() ? "" : sep) + std::string(strategy_name(v));
    return out;
}

const char* vq_state_name(uint8_t st) {
    switch (st) {
    case RTE_PMD_MLX5ASYNC_VQ_STATE_INIT: return "INIT";
    case RTE_PMD_MLX5ASYNC_VQ_STATE_RDY: return "RDY";
    case RTE_PMD_MLX5ASYNC_VQ_STATE_SUSPEND: return "SUSPEND";
    case RTE_PMD_MLX5ASYNC_VQ_STATE_ERR: return "ERR";
    case RTE_PMD_MLX5ASYNC_VQ_STATE_NONE: return "NONE";
    }
    return "?";
}

bool parse_u32(const char* s, uint32_t& out, uint32_t min, uint32_t max) {
    if (s == nullptr || *s == '\0' || *s == '-' || *s == '+')
        return false;
    errno = 0;
    char* end = nullptr;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return false;
    out = uint32_t(v);
    return true;
}

App::App() {
    g_app = this;
    stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

App::~App() {
    detach_all();
    if (stop_fd >= 0)
        close(stop_fd);
    if (!sock_dir.empty())
        rmdir(sock_dir.c_str());
    g_app = nullptr;
}

int App::discover() {
    struct rte_dev_iterator it;
    struct rte_device* d;
    RTE_DEV_FOREACH(d, "class=vdpa", &it) {
        struct rte_vdpa_device* vd = rte_vdpa_find_device_by_name(rte_dev_name(d));
        if (vd == nullptr || !rte_pmd_mlx5async_is_mine(vd))
            continue;
        auto p = std::make_unique<Port>();
        p->index = unsigned(ports.size());
        p->name = rte_dev_name(d);
        p->dev = vd;
        char path[PATH_MAX];
        if (rte_pmd_mlx5async_get_vhost_socket(vd, path, sizeof(path)) > 0) {
            p->socket = path;
            p->attached = p->driver_socket = true;
            printf("%s: served by the driver on %s (devarg vhost_socket): vdpa-testpmd does not "
                   "attach it\n", p->name.c_str(), path);
        }
        ports.push_back(std::move(p));
    }
    return int(ports.size());
}

Port* App::find_port(const char* word) const {
    uint32_t idx;
    for (auto& p : ports)
        if (p->name == word)
            return p.get();
    if (parse_u32(word, idx, 0, UINT32_MAX) && idx < ports.size())
        return ports[idx].get();
    printf("error: unknown device '%s' (known: %zu device(s), see 'list')\n", word,
           ports.size());
    return nullptr;
}

std::vector<Port*> App::select(const char* word) const {
    std::vector<Port*> out;
    if (strcmp(word, "all") == 0) {
        for (auto& p : ports)
            out.push_back(p.get());
        if (out.empty())
            printf("error: no mlx5async device (probe one with --vdev vdpa_mlx5async0,...)\n");
    } else if (Port* p = find_port(word)) {
        out.push_back(p);
    }
    return out;
}

std::string App::default_socket(const Port& p) const {
    return opt.iface + std::to_string(p.index);
}

// A server socket may be created at `path` (common/base/unix_socket.hpp).
using mlx5async::prepare_server_socket;
using mlx5async::SocketPathState;

int App::prepare_socket(const std::string& path) const {
    if (opt.client && path.size() < sizeof(sockaddr_un::sun_path))
        return 0;  // the frontend owns the socket
    auto st = prepare_server_socket(path);
    if (!st) {
        printf("error: %s\n", st.error().what.c_str());
        return -(st.error().sys_errno ? st.error().sys_errno : EINVAL);
    }
    if (*st == SocketPathState::StaleRemoved)
        printf("removed the stale socket %s (nobody listened on it)\n", path.c_str());
    return 0;
}

int App::attach(Port& p, const std::string& socket) {
    if (p.attached) {
        printf("error: %s is already attached to %s%s\n", p.name.c_str(), p.socket.c_str(),
               p.driver_socket ? " by the driver (devarg vhost_socket)" : "");
        return -EEXIST;
    }
    for (auto& o : ports)
        if (o->attached && o->socket == socket) {
            printf("error: socket %s is already used by %s\n", socket.c_str(), o->name.c_str());
            return -EEXIST;
        }
    if (int rc = prepare_socket(socket); rc != 0)
        return rc;
    uint64_t flags = opt.client ? RTE_VHOST_USER_CLIENT : 0;
    const char* path = socket.c_str();
    int rc = rte_vhost_driver_register(path, flags);
    if (rc != 0) {
        printf("error: cannot register vhost-user socket %s\n", path);
        return -EIO;
    }
    const char* step = nullptr;
    if (rte_vhost_driver_attach_vdpa_device(path, p.dev) != 0)
        step = "attach the vDPA device";
    else if (rte_vhost_driver_callback_register(path, &kVhostOps) != 0)
        step = "register the vhost callbacks";
    if (step == nullptr) {
        // The callbacks look the port up by socket path: publish it first.
        std::lock_guard lk(mu);
        p.socket = socket;
        p.attached = true;
    }
    if (step == nullptr && rte_vhost_driver_start(path) != 0)
        step = "start the vhost-user driver";
    if (step != nullptr) {
        printf("error: %s: cannot %s\n", p.name.c_str(), step);
        rte_vhost_driver_unregister(path);
        std::lock_guard lk(mu);
        p.attached = false;
        p.socket.clear();
        return -EIO;
    }
    printf("%s: attached to %s (%s)\n", p.name.c_str(), path, opt.client ? "client" : "server");
    return 0;
}

int App::detach(Port& p) {
    if (!p.attached) {
        printf("error: %s is not attached\n", p.name.c_str());
        return -ENOENT;
    }
    if (p.driver_socket) {
        printf("error: %s: the driver serves %s (devarg vhost_socket) until the device is "
               "removed; vdpa-testpmd does not detach it\n", p.name.c_str(), p.socket.c_str());
        return -EPERM;
    }
    const char* path = p.socket.c_str();
    rte_vhost_driver_detach_vdpa_device(path);
    // vhost: unregister closes a live connection first (destroy_device, then
    // the driver's dev_close) and removes the socket file in server mode.
    int rc = rte_vhost_driver_unregister(path);
    if (rc != 0)
        printf("warning: %s: vhost-user unregister of %s failed (%d)\n", p.name.c_str(), path,
               rc);
    printf("%s: detached from %s\n", p.name.c_str(), path);
    std::lock_guard lk(mu);
    p.attached = false;
    p.socket.clear();
    p.vid = -1;
    return rc == 0 ? 0 : -EIO;
}

void App::detach_all() {
    for (auto& p : ports)
        if (p->attached && !p->driver_socket)
            detach(*p);
}

// The app's vhost callbacks track the connections of the sockets it
// registered; on the driver's own socket the driver says which one it serves.
int App::port_vid(const Port& p) const {
    if (p.driver_socket) {
        DevInfo info;
        return rte_pmd_mlx5async_get_dev_info(p.dev, &info) == 0 ? info.vid : -1;
    }
    std::lock_guard lk(mu);
    return p.vid;
}

// Ready: the frontend finished its set-up (new_device) and every virtq of a
// ring it configured is RDY in the firmware.
bool App::is_ready(const Port& p) const {
    int vid = port_vid(p);
    if (vid < 0)
        return false;
    unsigned nr_vring = rte_vhost_get_vring_num(vid);
    DevInfo info;
    if (rte_pmd_mlx5async_get_dev_info(p.dev, &info) < 0)
        return false;
    std::vector<VqInfo> vqs(std::max(info.max_queues, info.queues) + 1);
    int n = rte_pmd_mlx5async_get_vq_info(p.dev, vqs.data(), unsigned(vqs.size()));
    if (n <= 0)
        return false;
    unsigned rdy = 0, considered = 0;
    for (int i = 0; i < n; i++) {
        if (vqs[i].index >= nr_vring)
            continue;
        considered++;
        rdy += vqs[i].fw_state == RTE_PMD_MLX5ASYNC_VQ_STATE_RDY;
    }
    return considered > 0 && rdy == considered;
}

bool App::wait_ready(const std::vector<Port*>& ps, uint32_t seconds) {
    using clock = std::chrono::steady_clock;
    auto deadline = clock::now() + std::chrono::seconds(seconds);
    // The connection is signalled by new_device; the vDPA driver's dev_conf
    // runs right after it returns, with no callback to the application, so
    // the virtq states are re-read every 10 ms until the deadline.
    for (;;) {
        bool all = std::all_of(ps.begin(), ps.end(), [&](Port* p) { return is_ready(*p); });
        if (all)
            return true;
        if (stop || clock::now() >= deadline)
            break;
        std::unique_lock lk(mu);
        cv.wait_for(lk, std::chrono::milliseconds(10));
    }
    for (Port* p : ps)
        if (!is_ready(*p))
            printf("error: %s: frontend not ready after %u s (socket %s, %s)\n", p->name.c_str(),
                   seconds, p->attached ? p->socket.c_str() : "-",
                   port_vid(*p) < 0 ? "no vhost device" : "virtqs not all RDY");
    return false;
}

}  // namespace vdpa_testpmd
