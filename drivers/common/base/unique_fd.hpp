// Move-only owner of a file descriptor, with one named factory per
// fd-creating syscall (Seastar file_desc shape). EAGAIN on a read is an empty
// optional: an expected outcome, not an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "result.hpp"

namespace mlx5async {

class UniqueFd {
public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) noexcept : fd_(fd) {}
    UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    UniqueFd& operator=(UniqueFd&& o) noexcept {
        if (this != &o) { reset(); fd_ = std::exchange(o.fd_, -1); }
        return *this;
    }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd() { reset(); }

    int get() const noexcept { return fd_; }
    bool valid() const noexcept { return fd_ >= 0; }
    int release() noexcept { return std::exchange(fd_, -1); }
    void reset() noexcept;

    static Result<UniqueFd> eventfd(unsigned initval, int flags);
    static Result<UniqueFd> epoll_create();
    static Result<UniqueFd> timerfd_create(int clockid, int flags);

    // eventfd helpers: signal adds n; drain returns the counter or nullopt on EAGAIN.
    void signal(uint64_t n = 1) const noexcept;
    std::optional<uint64_t> drain() const noexcept;

private:
    int fd_ = -1;
};

// Adds O_NONBLOCK to fd's open file (shared with every duplicate of it);
// `what` names the fd in the error.
Result<void> set_nonblocking(int fd, const std::string& what);

}  // namespace mlx5async
