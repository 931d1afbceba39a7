#include "unique_fd.hpp"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>

namespace mlx5async {

Result<void> set_nonblocking(int fd, const std::string& what) {
    const int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0 || ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return unexpected(Error::sys(errno, "fcntl(" + what + ", O_NONBLOCK)"));
    return {};
}

void UniqueFd::reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

Result<UniqueFd> UniqueFd::eventfd(unsigned initval, int flags) {
    int fd = ::eventfd(initval, flags | EFD_CLOEXEC);
    if (fd < 0) return unexpected(Error::sys(errno, "eventfd"));
    return UniqueFd(fd);
}

Result<UniqueFd> UniqueFd::epoll_create() {
    int fd = ::epoll_create1(EPOLL_CLOEXEC);
    if (fd < 0) return unexpected(Error::sys(errno, "epoll_create1"));
    return UniqueFd(fd);
}

Result<UniqueFd> UniqueFd::timerfd_create(int clockid, int flags) {
    int fd = ::timerfd_create(clockid, flags | TFD_CLOEXEC);
    if (fd < 0) return unexpected(Error::sys(errno, "timerfd_create"));
    return UniqueFd(fd);
}

void UniqueFd::signal(uint64_t n) const noexcept {
    // eventfd write of 8 bytes cannot be partial; EAGAIN only at counter
    // overflow, where a wake-up is already pending anyway.
    ssize_t r;
    do {
        r = ::write(fd_, &n, sizeof n);
    } while (r < 0 && errno == EINTR);
}

std::optional<uint64_t> UniqueFd::drain() const noexcept {
    uint64_t v = 0;
    ssize_t r;
    do {
        r = ::read(fd_, &v, sizeof v);
    } while (r < 0 && errno == EINTR);
    if (r != sizeof v) return std::nullopt;
    return v;
}

}  // namespace mlx5async
