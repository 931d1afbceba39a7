// Where a vhost-user server creates its unix socket. One rule for every
// server of the project (the PMD's devarg vhost_socket, vdpa-testpmd's
// --iface): the path fits a sockaddr_un, and whatever is there is a socket
// nobody listens on (a host killed with -9 leaves one), which is removed.
// A live socket is another process's and is never replaced.
#pragma once

#include <string>

#include "common/base/result.hpp"

namespace mlx5async {

enum class SocketPathState {
    Free,          // nothing was there
    StaleRemoved,  // a socket nobody listened on was removed
};

// The error names the path and why it cannot be used (too long, not a
// socket, in use, cannot be removed).
Result<SocketPathState> prepare_server_socket(const std::string& path);

}  // namespace mlx5async
