#include "kick_relay.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

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

Result<void> KickRelay::set_rings(const std::vector<std::pair<uint16_t, int>>& rings) {
    std::lock_guard lk(mu_);
    for (Ring& r : rings_) loop_.del(r.fd.get());
    rings_.clear();
    ++gen_;
    for (auto [index, fd] : rings) {
        if (fd < 0) continue;
        int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (d < 0) return fail(Errc::System, "kick relay: dup kickfd: errno " + std::to_string(errno));
        Ring r;
        r.index = index;
        r.fd = UniqueFd(d);
        MLX5A_CHECK(loop_.add(d, key_of(gen_, index)));
        rings_.push_back(std::move(r));
        // A kick may have been written before we watched: the device
        // rescans the ring on the first doorbell anyway.
    }
    return {};
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

void KickRelay::on_kick(uint64_t key) {
    std::lock_guard lk(mu_);
    if ((key >> 16) != gen_) return;  // an fd replaced since
    for (Ring& r : rings_) {
        if (r.index != uint16_t(key & 0xffff)) continue;
        // One read takes the whole eventfd counter (readable: it will not
        // block even if the frontend's fd is blocking).
        uint64_t n;
        if (read(r.fd.get(), &n, sizeof n) != ssize_t(sizeof n)) return;
        ++stats_.kicks;
        if (open_) {
            ring_doorbell(r.index);
        } else {
            r.held = true;
            ++stats_.held;
        }
        return;
    }
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
            if (evs[i].data.u64 != EpollThread::kStopKey) on_kick(evs[i].data.u64);
    }
}

}  // namespace mlx5async::core
