// DevX event channel: OBJECT_CHANGE delivered with the subscriber's cookie
// when a virtq enters ERR.
#include <fcntl.h>
#include <poll.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "emu/events.hpp"
#include "emu_fixture.hpp"

namespace mlx5async::emu::test {
namespace {

using prm::VirtqState;

class Events : public EmuTest {
protected:
    mlx5dv_devx_event_channel* channel(bool omit = false) {
        auto f = omit ? MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA
                      : mlx5dv_devx_create_event_channel_flags(0);
        auto* ch = A.create_event_channel(ctx_, f);
        EXPECT_NE(ch, nullptr);
        if (ch) fcntl(ch->fd, F_SETFL, O_NONBLOCK);
        return ch;
    }
    int subscribe(mlx5dv_devx_event_channel* ch, const Vq& vq, uint64_t cookie,
                  uint16_t ev = prm::kEventObjectChange) {
        uint16_t evs[] = {ev};
        return A.subscribe_devx_event(ch, vq.obj, sizeof evs, evs, cookie);
    }
};

bool readable(int fd, int ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, ms) == 1;
}

TEST_F(Events, ObjectChangeDeliveredWithCookieAndEqe) {
    Vq a = virtq_in_state(VirtqState::RDY, 0);
    Vq b = virtq_in_state(VirtqState::RDY, 1);
    auto* ch = channel();
    ASSERT_EQ(subscribe(ch, a, 0xa0), 0);
    ASSERT_EQ(subscribe(ch, b, 0xb1), 0);
    EXPECT_FALSE(readable(ch->fd, 0));
    ASSERT_TRUE(dev_->force_virtq_error(b.id, 2));
    ASSERT_TRUE(readable(ch->fd, 10000));
    alignas(8) std::byte buf[8 + kEqeBytes];
    auto* hdr = reinterpret_cast<mlx5dv_devx_async_event_hdr*>(buf);
    ASSERT_EQ(A.get_event(ch, hdr, sizeof buf), ssize_t(sizeof buf));
    EXPECT_EQ(hdr->cookie, 0xb1u);
    auto eqe = std::span<const std::byte>(buf + 8, kEqeBytes);
    EXPECT_EQ(prm::get_bits(eqe, 8, 8), prm::kEventObjectChange);
    EXPECT_EQ(prm::get_bits(eqe, 34 * 8, 16), uint16_t(prm::ObjType::VIRTIO_NET_Q));
    EXPECT_EQ(prm::get_bits(eqe, 36 * 8, 32), b.id);
    EXPECT_EQ(A.get_event(ch, hdr, sizeof buf), -1);  // only b's event
    EXPECT_EQ(errno, EAGAIN);
    EXPECT_FALSE(readable(ch->fd, 0));
    A.destroy_event_channel(ch);
}

TEST_F(Events, OmitDataGivesCookieOnly) {
    Vq vq = virtq_in_state(VirtqState::SUSPEND);
    auto* ch = channel(true);
    ASSERT_EQ(subscribe(ch, vq, 77), 0);
    ASSERT_TRUE(dev_->force_virtq_error(vq.id, 1));
    alignas(8) std::byte buf[128];
    auto* hdr = reinterpret_cast<mlx5dv_devx_async_event_hdr*>(buf);
    ASSERT_EQ(A.get_event(ch, hdr, sizeof buf), ssize_t(sizeof(uint64_t)));
    EXPECT_EQ(hdr->cookie, 77u);
    A.destroy_event_channel(ch);
}

TEST_F(Events, UnsupportedEventAndShortBufferRejected) {
    Vq vq = virtq_in_state(VirtqState::RDY);
    auto* ch = channel();
    EXPECT_EQ(subscribe(ch, vq, 1, 0x2), EINVAL);
    ASSERT_EQ(subscribe(ch, vq, 1), 0);
    ASSERT_TRUE(dev_->force_virtq_error(vq.id, 1));
    alignas(8) std::byte buf[16];
    EXPECT_EQ(A.get_event(ch, reinterpret_cast<mlx5dv_devx_async_event_hdr*>(buf), sizeof buf), -1);
    EXPECT_EQ(errno, ENOSPC);
    A.destroy_event_channel(ch);
}

TEST_F(Events, DestroyedVirtqDropsItsSubscriptions) {
    Vq vq = virtq_in_state(VirtqState::RDY);
    auto* ch = channel();
    ASSERT_EQ(subscribe(ch, vq, 5), 0);
    uint32_t id = vq.id;
    ASSERT_EQ(destroy_obj(vq.obj), 0);
    EXPECT_EQ(dev_->state().events.raise(uint16_t(prm::ObjType::VIRTIO_NET_Q), id,
                                         prm::kEventObjectChange, object_change_eqe(0xd, id)),
              0u);
    A.destroy_event_channel(ch);
}

// The queue behind every async fd: readable exactly while it holds records,
// also when pushes and pops race (the fd is written after the push's unlock).
std::shared_ptr<FdQueue> nonblocking_queue() {
    auto q = FdQueue::create();
    EXPECT_TRUE(q.has_value());
    fcntl((*q)->fd(), F_SETFL, O_NONBLOCK);
    return *q;
}

std::vector<std::byte> record(uint32_t v) {
    std::vector<std::byte> r(sizeof v);
    std::memcpy(r.data(), &v, sizeof v);
    return r;
}

TEST(FdQueue, ReadableExactlyWhileNotEmpty) {
    auto q = nonblocking_queue();
    EXPECT_FALSE(readable(q->fd(), 0));
    q->push(record(1));
    q->push(record(2));
    uint32_t v = 0;
    ASSERT_EQ(q->pop(&v, sizeof v), ssize_t(sizeof v));
    EXPECT_EQ(v, 1u);
    EXPECT_TRUE(readable(q->fd(), 0));
    ASSERT_EQ(q->pop(&v, sizeof v), ssize_t(sizeof v));
    EXPECT_EQ(v, 2u);
    EXPECT_FALSE(readable(q->fd(), 0));
    EXPECT_EQ(q->pop(&v, sizeof v), -EAGAIN);
}

// The firmware thread's spin yields while records wait for their readers:
// the count follows pushes, pops, a close and a queue dropped unread.
TEST(FdQueue, UnreadRecordsCountWhatNoReaderTookYet) {
    const int64_t base = FdQueue::unread_records();
    auto q = nonblocking_queue();
    q->push(record(1));
    q->push(record(2));
    EXPECT_EQ(FdQueue::unread_records(), base + 2);
    uint32_t v = 0;
    ASSERT_EQ(q->pop(&v, sizeof v), ssize_t(sizeof v));
    EXPECT_EQ(FdQueue::unread_records(), base + 1);
    q->close();
    EXPECT_EQ(FdQueue::unread_records(), base);
    q->push(record(3));  // dropped: closed
    EXPECT_EQ(FdQueue::unread_records(), base);
    auto dropped = nonblocking_queue();
    dropped->push(record(4));
    EXPECT_EQ(FdQueue::unread_records(), base + 1);
    dropped.reset();
    EXPECT_EQ(FdQueue::unread_records(), base);
}

TEST(FdQueue, DeferredSignalsWakeReadersWhenTheOutermostRoundEnds) {
    auto q = nonblocking_queue();
    {
        FdQueue::DeferSignals round;
        q->push(record(1));
        {
            FdQueue::DeferSignals inner;
            q->push(record(2));
        }
        EXPECT_EQ(q->size(), 2u);  // poppable, but nobody was woken yet
        EXPECT_FALSE(readable(q->fd(), 0));
    }
    EXPECT_TRUE(readable(q->fd(), 0));
    uint32_t v = 0;
    EXPECT_EQ(q->pop(&v, sizeof v), ssize_t(sizeof v));
    EXPECT_EQ(q->pop(&v, sizeof v), ssize_t(sizeof v));
    EXPECT_EQ(v, 2u);
    EXPECT_FALSE(readable(q->fd(), 0));
}

// Without O_NONBLOCK, as the kernel's fds: a read of an empty queue blocks
// until a push (woken after the push's unlock).
TEST(FdQueue, BlockingReadWaitsForThePush) {
    auto q = FdQueue::create();
    ASSERT_TRUE(q.has_value());
    std::shared_ptr<FdQueue> fq = *q;
    std::atomic<bool> started{false};
    uint32_t got = 0;
    ssize_t n = 0;
    std::thread reader([&] {
        started.store(true);
        n = fq->pop(&got, sizeof got);
    });
    while (!started.load()) std::this_thread::yield();
    fq->push(record(7));
    reader.join();
    EXPECT_EQ(n, ssize_t(sizeof got));
    EXPECT_EQ(got, 7u);
    EXPECT_EQ(fq->size(), 0u);
}

// A reader that sleeps in poll() and pops until EAGAIN, against a pusher
// thread: every record arrives once, in order (no wake-up lost).
TEST(FdQueue, RacingPushesAndPopsLoseNoWakeUp) {
    auto q = nonblocking_queue();
    constexpr uint32_t kRecords = 200000;
    std::thread pusher([&] {
        for (uint32_t i = 0; i < kRecords; ++i) q->push(record(i));
    });
    uint32_t next = 0;
    bool in_order = true;
    while (next < kRecords) {
        if (!readable(q->fd(), 20000)) break;  // a lost wake-up
        uint32_t v;
        while (q->pop(&v, sizeof v) == ssize_t(sizeof v)) in_order &= v == next++;
    }
    pusher.join();
    EXPECT_EQ(next, kRecords);
    EXPECT_TRUE(in_order);
}

// A reader spinning on pop() takes each record the moment it is pushed,
// often before the push has written the fd. Once that push has returned,
// one empty pop() leaves the fd unreadable: readiness never sticks to an
// empty queue (a level-triggered epoll loop would spin on it).
TEST(FdQueue, ReadinessNeverSticksToAnEmptyQueue) {
    auto q = nonblocking_queue();
    constexpr uint32_t kRounds = 5000;
    std::atomic<uint32_t> go{0}, pushed{0};
    std::thread pusher([&] {
        for (uint32_t r = 1; r <= kRounds; ++r) {
            while (go.load() != r) std::this_thread::yield();
            q->push(record(r));
            pushed.store(r);
        }
    });
    uint32_t stuck = 0;
    for (uint32_t r = 1; r <= kRounds; ++r) {
        go.store(r);
        uint32_t v = 0;
        for (int spins = 0; q->pop(&v, sizeof v) != ssize_t(sizeof v); ++spins)
            if (spins > 1000) std::this_thread::yield();  // one CPU: let the pusher run
        while (pushed.load() != r) std::this_thread::yield();
        (void)q->pop(&v, sizeof v);  // EAGAIN
        stuck += readable(q->fd(), 0);
    }
    pusher.join();
    EXPECT_EQ(stuck, 0u);
}

}  // namespace
}  // namespace mlx5async::emu::test
