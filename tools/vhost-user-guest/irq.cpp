#include "irq.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "protocol.hpp"

namespace vug {

namespace {
std::string errstr() { return std::strerror(errno); }
}  // namespace

IrqCounter::IrqCounter(int nrings) : fds_(size_t(nrings), -1), counts_(size_t(nrings), 0) {
    epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) throw VugError("epoll_create1: " + errstr());
}

IrqCounter::~IrqCounter() { ::close(epfd_); }

void IrqCounter::attach(int ring, int fd) {
    detach(ring);
    // Level-triggered, keyed by ring: read_ring() reads the ring's current
    // fd, so an event left over from a replaced fd reads nothing wrong.
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = uint32_t(ring);
    if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0)
        throw VugError("epoll_ctl ADD callfd of ring " + std::to_string(ring) + ": " + errstr());
    fds_[size_t(ring)] = fd;
}

void IrqCounter::detach(int ring) {
    int fd = fds_[size_t(ring)];
    if (fd < 0) return;
    read_ring(ring);  // signals sent before the switch still count
    ::epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
    fds_[size_t(ring)] = -1;
}

void IrqCounter::read_ring(int ring) {
    int fd = fds_[size_t(ring)];
    if (fd < 0) return;
    uint64_t v = 0;
    // Non-blocking eventfd: one read returns the sum of all writes since the
    // last read and zeroes it; EAGAIN means none.
    while (::read(fd, &v, sizeof v) < 0 && errno == EINTR) {
    }
    if (v) counts_[size_t(ring)] += v;
}

void IrqCounter::wait(int timeout_ms) {
    std::vector<epoll_event> evs(fds_.size() ? fds_.size() : 1);
    int n = ::epoll_wait(epfd_, evs.data(), int(evs.size()), timeout_ms);
    if (n < 0 && errno != EINTR) throw VugError("epoll_wait callfds: " + errstr());
    for (int i = 0; i < n; i++) read_ring(int(evs[size_t(i)].data.u32));
}

bool IrqCounter::wait_for(int ring, uint64_t n, int timeout_ms) {
    using clock = std::chrono::steady_clock;
    auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms);
    drain();
    while (count(ring) < n) {
        auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now()).count();
        if (left <= 0) return false;
        wait(int(left));
    }
    return true;
}

uint64_t IrqCounter::total() const {
    uint64_t t = 0;
    for (auto c : counts_) t += c;
    return t;
}

}  // namespace vug
