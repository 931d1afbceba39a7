#include "common/base/unix_socket.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace mlx5async {
namespace {

constexpr unsigned long kSoAcceptCon = 0x10000;  // __SO_ACCEPTCON: listening

// Whether a process listens on unix socket `path` (/proc/net/unix: a bound
// socket in the listening state), read without connecting: vhost would take
// a connection as a frontend. Unknown (no /proc) counts as live.
bool someone_listens(const std::string& path) {
    FILE* f = fopen("/proc/net/unix", "re");
    if (f == nullptr) return true;
    char line[4096];
    bool live = false;
    while (!live && fgets(line, sizeof(line), f) != nullptr) {
        unsigned long flags = 0;
        int name_at = 0;
        if (sscanf(line, "%*s %*s %*s %lx %*s %*s %*s %n", &flags, &name_at) < 1 || name_at == 0)
            continue;
        std::string name(line + name_at);
        while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
        live = name == path && (flags & kSoAcceptCon) != 0;
    }
    fclose(f);
    return live;
}

}  // namespace

Result<SocketPathState> prepare_server_socket(const std::string& path) {
    if (path.size() >= sizeof(sockaddr_un::sun_path))
        return fail(Errc::InvalidArgument,
                    "socket path " + path + " is " + std::to_string(path.size()) +
                        " bytes long; a unix socket path takes at most " +
                        std::to_string(sizeof(sockaddr_un::sun_path) - 1));
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) return SocketPathState::Free;
        return unexpected(Error::sys(errno, path + ": " + strerror(errno)));
    }
    if (!S_ISSOCK(st.st_mode))
        return unexpected(Error::sys(EEXIST, path + " exists and is not a socket: not replacing it"));
    if (someone_listens(path))
        return unexpected(Error::sys(EADDRINUSE, "socket " + path +
                                                     " is in use: another process listens on it; "
                                                     "not replacing it"));
    if (unlink(path.c_str()) != 0)
        return unexpected(Error::sys(errno, "cannot remove the stale socket " + path + ": " +
                                                strerror(errno)));
    return SocketPathState::StaleRemoved;
}

}  // namespace mlx5async
