#include "vhost_socket.hpp"

#include <rte_vhost.h>

#include <cerrno>

#include "common/base/unix_socket.hpp"
#include "log.hpp"
#include "vhost_hooks.hpp"

namespace mlx5async::pmd {
namespace {

// vhost closes a connection at its first message when the socket has no
// notify ops ("failed to get callback ops for driver", lib/vhost
// vhost_user.c); it calls each op only when set. The vDPA ops carry the
// connection's life; new_connection puts the message hooks
// (vhost_hooks.hpp) on it before its first message.
const rte_vhost_device_ops kNotifications = {.new_connection = watch_new_connection};

Unexpected<Error> step_failed(const std::string& path, const char* step) {
    // vhost's calls answer -1 and log their own reason.
    return unexpected(Error::sys(EIO, "vhost_socket " + path + ": cannot " + step +
                                          " (vhost's reason is logged above)"));
}

}  // namespace

Result<std::unique_ptr<VhostSocket>> VhostSocket::open(const std::string& path, bool client,
                                                       rte_vdpa_device* vdpa) {
    const char* p = path.c_str();
    if (!client) {
        // vhost's bind() fails on any file at the path: a socket left by a
        // host killed with -9 would refuse every later probe.
        auto st = prepare_server_socket(path);
        if (!st) {
            Error e = st.error();
            e.what = "vhost_socket: " + e.what;
            return unexpected(std::move(e));
        }
        if (*st == SocketPathState::StaleRemoved)
            MLX5A_LOG(INFO, "vhost_socket %s: removed a stale socket nobody listened on", p);
    }
    if (rte_vhost_driver_register(p, client ? RTE_VHOST_USER_CLIENT : 0) != 0)
        return step_failed(path, "register it with vhost");
    const char* step = nullptr;
    if (rte_vhost_driver_attach_vdpa_device(p, vdpa) != 0)
        step = "attach the vDPA device to it";
    else if (rte_vhost_driver_callback_register(p, &kNotifications) != 0)
        step = "register its notify ops";
    else if (rte_vhost_driver_start(p) != 0)
        step = client ? "start it (connect as a client)" : "start it (listen)";
    if (step) {
        rte_vhost_driver_unregister(p);
        return step_failed(path, step);
    }
    return std::unique_ptr<VhostSocket>(new VhostSocket(path, client));
}

VhostSocket::~VhostSocket() {
    if (rte_vhost_driver_unregister(path_.c_str()) != 0)
        MLX5A_LOG(WARNING, "vhost_socket %s: vhost could not unregister it", path_.c_str());
}

}  // namespace mlx5async::pmd
