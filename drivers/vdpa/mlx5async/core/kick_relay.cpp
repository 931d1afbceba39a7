#include "kick_relay.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

#include "common/base/log_sink.hpp"

namespace mlx5async::core {
namespace {

uint64_t key_of(uint32_t gen, uint16_t ring) { return (uint64_t(gen) << 16) | ring; }

}  // namespace

Result<std::unique_ptr<KickRelay>> KickRelay::create(int fd, uint64_t offset, uint64_t size,
                                                     std::string name, int cpu) {
    std::unique_ptr<KickRelay> r(new KickRelay());
    r->name_ = std::move(name);
    void* m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(offset));
    if (m == MAP_FAILED) return fail(Errc::System, "kick relay: mmap doorbell page: errno " + std::to_string(errno));
    r->map_ = m;
    r->map_len_ = size;
    r->doorbell_ = static_cast<uint32_t*>(m);
    MLX5A_CHECK(r->loop_.open("kick relay"));
    KickRelay* self = r.get();
    MLX5A_CHECK(r->loop_.start("mlx5a-kick", cpu, [self](std::stop_token s) { self->run(s); }));
    return r;
}

KickRelay::~KickRelay() {
    loop_.stop();
    if (map_) munmap(map_, map_len_);
}

void KickRelay::set_rings(const std::vector<std::pair<uint16_t, int>>& rings) {
    std::lock_guard lk(mu_);
    while (!rings_.empty()) unwatch_locked(rings_.begin());
    for (auto [index, fd] : rings) watch_locked(index, fd);
    // A kick may have been written before we watched: the device rescans
    // the ring on the first doorbell anyway.
}

void KickRelay::set_ring(uint16_t index, int fd) {
    std::lock_guard lk(mu_);
    auto it = std::find_if(rings_.begin(), rings_.end(), [&](const Ring& r) { return r.index == index; });
    if (it != rings_.end()) unwatch_locked(it);
    watch_locked(index, fd);
}

void KickRelay::watch_locked(uint16_t index, int fd) {
    if (fd < 0) return;
    auto refuse = [&](const std::string& why) {
        ++stats_.dropped;
        logf(LogLevel::Error, "%s: vring %u: kickfd %d is not watched (%s): its kicks are not relayed",
             name_.c_str(), index, fd, why.c_str());
    };
    Ring r;
    r.index = index;
    r.fd = UniqueFd(fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!r.fd.valid()) return refuse("dup: errno " + std::to_string(errno));
    // Read only when readable, yet never trusted not to block.
    if (auto nb = set_nonblocking(r.fd.get(), "kickfd"); !nb) return refuse(to_string(nb.error()));
    r.gen = ++gen_;
    if (auto a = loop_.add(r.fd.get(), key_of(r.gen, index)); !a) return refuse(to_string(a.error()));
    rings_.push_back(std::move(r));
}

void KickRelay::unwatch_locked(std::vector<Ring>::iterator it) {
    loop_.del(it->fd.get());
    rings_.erase(it);
}

void KickRelay::set_open(bool open) {
    std::lock_guard lk(mu_);
    open_ = open;
    if (!open) return;
    for (Ring& r : rings_)
        if (std::exchange(r.held, false)) ring_doorbell(r.index);
}

void KickRelay::kick(uint16_t index) {
    std::lock_guard lk(mu_);
    ring_doorbell(index);
    ++stats_.driver;
}

KickRelayStats KickRelay::stats() const {
    std::lock_guard lk(mu_);
    return stats_;
}

size_t KickRelay::rings() const {
    std::lock_guard lk(mu_);
    return rings_.size();
}

void KickRelay::ring_doorbell(uint16_t index) {
    // rte_write32: a 32-bit store the device sees as one doorbell.
    std::atomic_ref<uint32_t>(*doorbell_).store(index, std::memory_order_release);
    ++stats_.doorbells;
}

void KickRelay::on_event(uint64_t key, uint32_t events) {
    std::lock_guard lk(mu_);
    const uint16_t index = uint16_t(key & 0xffff);
    auto it = std::find_if(rings_.begin(), rings_.end(), [&](const Ring& r) {
        return r.index == index && r.gen == uint32_t(key >> 16);
    });
    if (it == rings_.end()) return;  // an fd replaced since
    // One read takes the whole eventfd counter; any other fd's bytes count
    // as one kick.
    uint64_t n;
    const ssize_t got = read(it->fd.get(), &n, sizeof n);
    if (got > 0) {
        ++stats_.kicks;
        if (open_) {
            ring_doorbell(index);
        } else {
            it->held = true;
            ++stats_.held;
        }
        return;
    }
    const int err = got < 0 ? errno : 0;
    if (got < 0 && err == EAGAIN && !(events & (EPOLLHUP | EPOLLERR))) return;  // taken already
    // End of file, an error or a hang-up: level-triggered, it would wake
    // this thread forever.
    ++stats_.dropped;
    logf(LogLevel::Error, "%s: vring %u: kickfd %s (errno %d): no longer watched until the "
         "frontend sets a new one", name_.c_str(), index, got == 0 ? "hung up" : "failed", err);
    unwatch_locked(it);
}

void KickRelay::run(std::stop_token stop) {
    epoll_event evs[32];
    while (!stop.stop_requested()) {
        int n = loop_.wait(evs, 32);
        if (n < 0) {
            log_line(LogLevel::Error, name_ + ": kick relay: epoll_wait failed");
            return;
        }
        for (int i = 0; i < n; i++)
            if (evs[i].data.u64 != EpollThread::kStopKey) on_event(evs[i].data.u64, evs[i].events);
    }
}

}  // namespace mlx5async::core
