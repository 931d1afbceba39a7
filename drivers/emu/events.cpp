#include "events.hpp"

#include <atomic>

#include <fcntl.h>
#include <sched.h>
#include <sys/eventfd.h>

#include <cerrno>
#include <cstring>

namespace mlx5async::emu {

namespace {
// The queues the outermost live FdQueue::DeferSignals of this thread will signal.
thread_local std::vector<std::shared_ptr<FdQueue>>* t_deferred = nullptr;
}  // namespace

Result<std::shared_ptr<FdQueue>> FdQueue::create() {
    // Blocking by default, as rdma-core's fds; users set O_NONBLOCK.
    auto fd = UniqueFd::eventfd(0, 0);
    if (!fd) return unexpected(fd.error());
    return std::shared_ptr<FdQueue>(new FdQueue(std::move(*fd)));
}

namespace {
std::atomic<int64_t> unread{0};  // see FdQueue::unread_records
}  // namespace

int64_t FdQueue::unread_records() noexcept { return unread.load(std::memory_order_relaxed); }

void FdQueue::push(std::vector<std::byte> rec) {
    {
        std::lock_guard lk(mu_);
        if (closed_) return;
        q_.push_back(std::move(rec));
        unread.fetch_add(1, std::memory_order_relaxed);
        if (!readable_.arm_locked()) return;  // not empty before: nobody waits
    }
    if (t_deferred)
        t_deferred->push_back(shared_from_this());
    else
        readable_.write(fd_);  // before the reader wakes: it then finds the count to clear
    cv_.notify_all();          // blocking readers; after the unlock, as the fd
}

FdQueue::DeferSignals::DeferSignals() {
    if (t_deferred) return;
    owner_ = true;
    t_deferred = &queues_;
}

FdQueue::DeferSignals::~DeferSignals() {
    if (!owner_) return;
    t_deferred = nullptr;
    for (auto& q : queues_) q->readable_.write(q->fd_);
}

ssize_t FdQueue::pop(void* buf, size_t len) {
    std::unique_lock lk(mu_);
    if (closed_) return -EBADF;
    if (q_.empty()) {
        readable_.clear_stray_locked(fd_);
        int fl = fcntl(fd_.get(), F_GETFL);
        if (fl >= 0 && (fl & O_NONBLOCK)) return -EAGAIN;
        cv_.wait(lk, [&] { return !q_.empty() || closed_; });
        if (closed_) return -EBADF;
    }
    auto& rec = q_.front();
    if (rec.size() > len) return -ENOSPC;
    std::memcpy(buf, rec.data(), rec.size());
    ssize_t n = ssize_t(rec.size());
    q_.pop_front();
    unread.fetch_sub(1, std::memory_order_relaxed);
    if (q_.empty()) readable_.disarm_locked(fd_);
    return n;
}

void FdQueue::close() {
    {
        std::lock_guard lk(mu_);
        closed_ = true;  // no push arms the fd from now on
        unread.fetch_sub(int64_t(q_.size()), std::memory_order_relaxed);
        q_.clear();
        cv_.notify_all();
    }
    // A push between its unlock and its write still uses the fd number.
    while (readable_.writes_in_flight()) sched_yield();
    std::lock_guard lk(mu_);
    fd_.reset();
}

FdQueue::~FdQueue() { unread.fetch_sub(int64_t(q_.size()), std::memory_order_relaxed); }

size_t FdQueue::size() const {
    std::lock_guard lk(mu_);
    return q_.size();
}

std::vector<std::byte> object_change_eqe(uint16_t obj_type, uint32_t obj_id) {
    std::vector<std::byte> e(kEqeBytes);
    e[1] = std::byte(0x27);  // MLX5_EVENT_TYPE_OBJECT_CHANGE
    e[34] = std::byte(obj_type >> 8);
    e[35] = std::byte(obj_type);
    for (int i = 0; i < 4; ++i) e[36 + i] = std::byte(obj_id >> (24 - 8 * i));
    return e;
}

std::vector<std::byte> completion_eqe(uint32_t cqn) {
    std::vector<std::byte> e(kEqeBytes);
    e[1] = std::byte(0x00);  // MLX5_EVENT_TYPE_COMP
    for (int i = 0; i < 4; ++i) e[56 + i] = std::byte((cqn & 0xffffff) >> (24 - 8 * i));
    return e;
}

void EventHub::subscribe(Subscription s) {
    std::lock_guard lk(mu_);
    subs_.push_back(std::move(s));
}

void EventHub::drop_object(uint16_t obj_type, uint32_t obj_id) {
    std::lock_guard lk(mu_);
    std::erase_if(subs_, [&](const Subscription& s) {
        return s.obj_type == obj_type && s.obj_id == obj_id;
    });
}

void EventHub::drop_channel(const FdQueue* ch) {
    std::lock_guard lk(mu_);
    std::erase_if(subs_, [&](const Subscription& s) { return s.channel.get() == ch; });
}

size_t EventHub::raise(uint16_t obj_type, uint32_t obj_id, uint16_t event,
                       std::span<const std::byte> eqe) {
    std::lock_guard lk(mu_);
    size_t n = 0;
    for (const auto& s : subs_) {
        if (s.obj_type != obj_type || s.obj_id != obj_id || s.event != event) continue;
        // struct mlx5dv_devx_async_event_hdr: cookie, then the EQE unless OMIT_DATA.
        std::vector<std::byte> rec(sizeof(uint64_t) + (s.omit_data ? 0 : eqe.size()));
        std::memcpy(rec.data(), &s.cookie, sizeof s.cookie);
        if (!s.omit_data) std::memcpy(rec.data() + sizeof s.cookie, eqe.data(), eqe.size());
        s.channel->push(std::move(rec));
        ++n;
    }
    return n;
}

}  // namespace mlx5async::emu
