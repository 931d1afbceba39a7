// Pollable record queues (the cmd_comp fd and the DevX event channel fd) and
// the event hub that routes OBJECT_CHANGE to subscribed channels.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/base/eventfd_signal.hpp"
#include "common/base/result.hpp"
#include "common/base/unique_fd.hpp"

namespace mlx5async::emu {

// Records behind an eventfd that is readable while the queue is non-empty.
// Like the kernel's async fds, a read blocks unless the fd is O_NONBLOCK
// (fcntl), in which case an empty queue is EAGAIN.
class FdQueue : public std::enable_shared_from_this<FdQueue> {
public:
    static Result<std::shared_ptr<FdQueue>> create();
    ~FdQueue();
    int fd() const { return fd_.get(); }
    void push(std::vector<std::byte> rec);  // dropped once closed

    // While one lives, pushes on this thread write their fds when it ends,
    // not at once: the firmware thread completes every command that is due
    // and then wakes the readers, as an EQ interrupt handler drains all ready
    // EQEs before the woken reader can run. Nests (the outermost flushes).
    class DeferSignals {
    public:
        DeferSignals();
        ~DeferSignals();
        DeferSignals(const DeferSignals&) = delete;
        DeferSignals& operator=(const DeferSignals&) = delete;

    private:
        bool owner_ = false;
        std::vector<std::shared_ptr<FdQueue>> queues_;
    };
    // Copies one record into buf: its size, or -errno (EAGAIN empty and
    // non-blocking, ENOSPC buf smaller than the record, EBADF closed).
    ssize_t pop(void* buf, size_t len);
    // Closes the fd, wakes blocked readers. Waits for fd writes still to
    // come (a push past its unlock, a DeferSignals scope of another thread);
    // never call it inside this thread's own DeferSignals scope.
    void close();
    size_t size() const;
    // Records pushed to any queue of the process and not yet popped: readers
    // woken that have yet to run.
    static int64_t unread_records() noexcept;

private:
    explicit FdQueue(UniqueFd fd) : fd_(std::move(fd)) {}
    mutable std::mutex mu_;  // guards q_ and closed_; cv_ waits on it
    std::condition_variable cv_;
    std::deque<std::vector<std::byte>> q_;
    UniqueFd fd_;
    bool closed_ = false;
    // Armed while the queue holds records; written after the push's unlock
    // (the reader it wakes would otherwise run into mu_ in pop()).
    EventfdSignal readable_;
};

// The 64-byte EQE of an OBJECT_CHANGE event (Linux include/linux/mlx5/device.h:
// struct mlx5_eqe, type at byte 1, data.obj_change {obj_type be16 @34, obj_id be32 @36}).
inline constexpr size_t kEqeBytes = 64;
std::vector<std::byte> object_change_eqe(uint16_t obj_type, uint32_t obj_id);
// A completion event's EQE (type 0 at byte 1, data.comp.cqn be32 at byte 56).
std::vector<std::byte> completion_eqe(uint32_t cqn);
// CQs are not general objects: their subscriptions (completion events) are
// keyed (kCqEventObjType, cqn); ids are unique across kinds.
inline constexpr uint16_t kCqEventObjType = 0;

class EventHub {
public:
    struct Subscription {
        std::shared_ptr<FdQueue> channel;
        bool omit_data = false;
        uint16_t obj_type = 0;
        uint32_t obj_id = 0;
        uint16_t event = 0;
        uint64_t cookie = 0;
    };
    void subscribe(Subscription s);
    void drop_object(uint16_t obj_type, uint32_t obj_id);
    void drop_channel(const FdQueue* ch);
    // Delivers {cookie, eqe} to every matching subscription; returns how many.
    size_t raise(uint16_t obj_type, uint32_t obj_id, uint16_t event, std::span<const std::byte> eqe);

private:
    std::mutex mu_;  // guards subs_ (subscribe and drop race raise)
    std::vector<Subscription> subs_;
};

}  // namespace mlx5async::emu
