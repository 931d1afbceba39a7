#include "error_recovery.hpp"


#include <cerrno>

#include "common/base/log_sink.hpp"

namespace mlx5async::core {

ErrorRecovery::ErrorRecovery(const devx::DevxApi& api, devx::EventChannel& ch,
                             std::function<void(uint16_t)> on_error)
    : api_(api), ch_(ch), on_error_(std::move(on_error)) {}

Result<std::unique_ptr<ErrorRecovery>> ErrorRecovery::start(const devx::DevxApi& api,
                                                            devx::EventChannel& ch,
                                                            std::function<void(uint16_t)> on_error) {
    std::unique_ptr<ErrorRecovery> r(new ErrorRecovery(api, ch, std::move(on_error)));
    // Non-blocking, so draining stops at EAGAIN.
    MLX5A_CHECK(set_nonblocking(ch.fd(), "event channel fd"));
    MLX5A_CHECK(r->loop_.open("error recovery"));
    MLX5A_CHECK(r->loop_.add(ch.fd(), 0));
    MLX5A_CHECK(r->loop_.start("mlx5a-ev", -1, [p = r.get()](std::stop_token st) { p->run(st); }));
    return r;
}

ErrorRecovery::~ErrorRecovery() { loop_.stop(); }

bool ErrorRecovery::wait_handled(uint64_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, timeout, [&] { return handled_ >= n; });
}

void ErrorRecovery::run(std::stop_token st) {
    while (!st.stop_requested()) {
        epoll_event evs[2];
        int n = loop_.wait(evs, 2);
        if (n < 0) {
            logf(LogLevel::Error, "event thread: epoll_wait: errno %d", errno);
            return;
        }
        for (int i = 0; i < n; i++) {
            if (evs[i].data.u64 == EpollThread::kStopKey) return;
            // Drain every pending event: header {cookie, out_data}.
            alignas(8) unsigned char buf[sizeof(mlx5dv_devx_async_event_hdr) + 64];
            auto* hdr = reinterpret_cast<mlx5dv_devx_async_event_hdr*>(buf);
            for (;;) {
                ssize_t got = api_.get_event(ch_.get(), hdr, sizeof buf);
                if (got < ssize_t(sizeof(hdr->cookie))) break;  // EAGAIN: drained
                on_error_(uint16_t(hdr->cookie));
                std::lock_guard lk(mu_);
                handled_++;
                cv_.notify_all();
            }
        }
    }
}

}  // namespace mlx5async::core

