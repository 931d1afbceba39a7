#include "irq_relay.hpp"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "common/base/log_sink.hpp"
#include "common/prm/event_qp.hpp"

namespace mlx5async::core {
namespace {

constexpr uint64_t kChannelKey = 1;

}  // namespace

Result<std::unique_ptr<IrqRelay>> IrqRelay::create(const devx::Context& ctx, void* uar_base,
                                                   size_t max_rings, int cpu, std::string name) {
    std::unique_ptr<IrqRelay> r(new IrqRelay());
    r->name_ = std::move(name);
    r->api_ = ctx.api();
    r->uar_base_ = uar_base;
    r->rings_.resize(max_rings);
    auto ch = devx::EventChannel::create(ctx);  // cookies only: the CQ is known by its ring
    MLX5A_CHECK(ch);
    r->ch_ = std::move(*ch);
    MLX5A_CHECK(set_nonblocking(r->ch_.fd(), "irq relay: event channel fd"));
    MLX5A_CHECK(r->loop_.open("interrupt relay"));
    MLX5A_CHECK(r->loop_.add(r->ch_.fd(), kChannelKey));
    IrqRelay* self = r.get();
    MLX5A_CHECK(r->loop_.start("mlx5a-irq", cpu, [self](std::stop_token s) { self->run(s); }));
    return r;
}

IrqRelay::~IrqRelay() { loop_.stop(); }

Result<void> IrqRelay::attach(uint16_t ring, EventQp* q) {
    if (ring >= rings_.size()) return fail(Errc::InvalidArgument, "irq relay: no ring " + std::to_string(ring));
    const uint16_t ev[] = {prm::kEventCompletion};
    MLX5A_CHECK(ch_.subscribe(q->cq(), ev, ring));
    std::lock_guard lk(mu_);
    rings_[ring].q = q;
    q->poll();  // nothing expected; keeps the indexes honest if reattached
    q->arm(uar_base_);
    return {};
}

void IrqRelay::detach(uint16_t ring) {
    std::lock_guard lk(mu_);
    if (ring < rings_.size()) rings_[ring].q = nullptr;
}

Result<void> IrqRelay::set_callfds(const std::vector<std::pair<uint16_t, int>>& fds) {
    clear_callfds();
    for (auto [ring, fd] : fds) MLX5A_CHECK(set_callfd(ring, fd));
    return {};
}

// The frontend's fd is never trusted to take a write at once: an eventfd
// at its limit or a pipe nobody reads would block the relay, and every ring
// and reader behind it. The duplicate shares the frontend's open file, so
// O_NONBLOCK is set for both: QEMU's and virtio_user's callfds are
// non-blocking eventfds already. A write that would block is dropped and
// counted (the guest has an interrupt pending anyway, or nobody reads).
Result<void> IrqRelay::set_callfd(uint16_t ring, int fd) {
    UniqueFd d;
    if (fd >= 0) {
        d = UniqueFd(fcntl(fd, F_DUPFD_CLOEXEC, 0));
        if (d.get() < 0) return fail(Errc::System, "irq relay: dup callfd of vring " +
                                                       std::to_string(ring) + ": errno " + std::to_string(errno));
        MLX5A_CHECK(set_nonblocking(d.get(), "irq relay: callfd of vring " + std::to_string(ring)));
    }
    std::lock_guard lk(mu_);
    if (ring < rings_.size()) {
        rings_[ring].callfd = std::move(d);
        rings_[ring].full_logged = false;
    }
    return {};
}

void IrqRelay::clear_callfds() {
    std::lock_guard lk(mu_);
    for (Ring& r : rings_) r.callfd.reset();
}

IrqRelayStats IrqRelay::stats() const {
    std::lock_guard lk(mu_);
    return stats_;
}

uint64_t IrqRelay::calls(uint16_t ring) const {
    std::lock_guard lk(mu_);
    return ring < rings_.size() ? rings_[ring].calls : 0;
}

void IrqRelay::on_event(uint16_t ring) {
    std::lock_guard lk(mu_);
    ++stats_.events;
    if (ring >= rings_.size() || !rings_[ring].q) return;
    Ring& r = rings_[ring];
    r.q->next_arm_sn();  // the event disarmed the CQ
    uint16_t n = r.q->poll();
    if (n) {
        stats_.completions += n;
        if (r.callfd.valid()) {
            // One write for however many interrupts coalesced, as a guest
            // sees one interrupt for several used buffers.
            if (eventfd_write(r.callfd.get(), 1) == 0) {
                ++r.calls;
                ++stats_.calls;
            } else {
                ++stats_.callfd_full;
                if (!std::exchange(r.full_logged, true))
                    logf(LogLevel::Warning, "%s: vring %u: its callfd takes no write (errno %d): "
                         "interrupts dropped until it does", name_.c_str(), ring, errno);
            }
        } else {
            ++stats_.no_callfd;
        }
    }
    r.q->arm(uar_base_);
}

void IrqRelay::run(std::stop_token stop) {
    epoll_event evs[2];
    alignas(8) unsigned char buf[sizeof(mlx5dv_devx_async_event_hdr) + 64];
    auto* hdr = reinterpret_cast<mlx5dv_devx_async_event_hdr*>(buf);
    while (!stop.stop_requested()) {
        int n = loop_.wait(evs, 2);
        if (n < 0) {
            log_line(LogLevel::Error, name_ + ": irq relay: epoll_wait failed");
            return;
        }
        for (int i = 0; i < n; i++) {
            if (evs[i].data.u64 == EpollThread::kStopKey) return;
            for (;;) {  // drain: one record per completion event
                ssize_t got = api_->get_event(ch_.get(), hdr, sizeof buf);
                if (got < ssize_t(sizeof hdr->cookie)) break;  // EAGAIN
                on_event(uint16_t(hdr->cookie));
            }
        }
    }
}

}  // namespace mlx5async::core
