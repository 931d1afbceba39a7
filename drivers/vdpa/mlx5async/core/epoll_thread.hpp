// One named thread sleeping on an epoll set, the shape shared by the kick
// relay, the interrupt relay and virtq error recovery: the set, a stop
// eventfd in it, the thread (pinned on request: devarg event_core), and a
// stop that wakes and joins it. Declare it last in its owner, so it stops
// before anything its thread uses goes away.
#pragma once

#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>

#include "common/base/named_thread.hpp"
#include "common/base/result.hpp"
#include "common/base/unique_fd.hpp"

namespace mlx5async::core {

class EpollThread {
public:
    static constexpr uint64_t kStopKey = ~0ull;  // never a caller's key

    EpollThread() = default;
    EpollThread(const EpollThread&) = delete;
    EpollThread& operator=(const EpollThread&) = delete;
    ~EpollThread() { stop(); }

    // The epoll set and its stop eventfd. `what` names the owner in errors.
    Result<void> open(std::string what) {
        what_ = std::move(what);
        auto ep = UniqueFd::epoll_create();
        MLX5A_CHECK(ep);
        epoll_ = std::move(*ep);
        auto s = UniqueFd::eventfd(0, EFD_NONBLOCK);
        MLX5A_CHECK(s);
        stop_ = std::move(*s);
        return add(stop_.get(), kStopKey);
    }
    Result<void> add(int fd, uint64_t key) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = key;
        if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0)
            return fail(Errc::System, what_ + ": epoll_ctl: errno " + std::to_string(errno));
        return {};
    }
    void del(int fd) { epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr); }

    // Starts `run(std::stop_token)`; pins it when cpu >= 0.
    template <typename F>
    Result<void> start(std::string name, int cpu, F&& run) {
        thread_ = make_named_thread(std::move(name), std::forward<F>(run));
        if (int e = pin_thread(thread_, cpu))
            return fail(Errc::InvalidArgument, "devarg event_core=" + std::to_string(cpu) +
                                                   ": cannot run the " + what_ + " thread there (errno " +
                                                   std::to_string(e) + ")");
        return {};
    }

    // epoll_wait without timeout, EINTR retried: the events, or -1 (logged by the caller).
    int wait(epoll_event* evs, int n) {
        for (;;) {
            int r = epoll_wait(epoll_.get(), evs, n, -1);
            if (r >= 0 || errno != EINTR) return r;
        }
    }

    void stop() {
        if (!thread_.joinable()) return;
        thread_.request_stop();
        stop_.signal();
        thread_.join();
    }

private:
    std::string what_;
    UniqueFd epoll_;
    UniqueFd stop_;
    std::jthread thread_;  // last: stops first
};

}  // namespace mlx5async::core
