// The host's pin pool (pin_pool.hpp): pinning is host CPU work that every
// emulated device shares, each command's pages on the lane free first.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "emu/pin_pool.hpp"
#include "emu_fixture.hpp"

namespace mlx5async::emu::test {
namespace {

using namespace std::chrono_literals;

TEST(PinPool, EachWorkTakesTheLaneFreeFirst) {
    PinPool p;
    EXPECT_EQ(p.book(0, 10, 2), 10);
    EXPECT_EQ(p.book(0, 10, 2), 10);  // the second lane
    EXPECT_EQ(p.book(0, 10, 2), 20);  // behind the first
    EXPECT_EQ(p.book(100, 10, 2), 110);  // both free by then
    EXPECT_EQ(p.book(5, 10, 3), 15);  // a third lane, for a device that has 3
    EXPECT_EQ(p.book(7, 0, 2), 7);    // no pages, no wait
}

TEST(PinPool, NoLanesMeansACpuPerCommand) {
    PinPool p;
    for (int i = 0; i < 8; i++) EXPECT_EQ(p.book(3, 10, 0), 13);
}

// Two umem registrations of one page each start together on a manual
// clock with one pin CPU: the second pins after the first, so at the
// first's due time exactly one has completed.
class PinCpus : public EmuTest {
protected:
    void SetUp() override {
        open_device(std::string("cx7,clock=manual,") + kZeroLatency + ",pin_ns=1000000,pin_cpus=1");
    }
};

TEST_F(PinCpus, RegistrationsQueueForTheHostsPinningCpus) {
    void* mem = mmap(nullptr, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mem, MAP_FAILED);
    const uint64_t base = dev_->counters().completed;
    std::atomic<int> done{0};
    std::vector<mlx5dv_devx_umem*> umems(2, nullptr);
    std::vector<std::jthread> t;
    for (int i = 0; i < 2; i++)
        t.emplace_back([&, i] {
            umems[i] = A.umem_reg(ctx_, static_cast<char*>(mem) + i * 4096, 4096, IBV_ACCESS_LOCAL_WRITE);
            ++done;
        });
    ASSERT_TRUE(dev_->wait_running(2, 10s));
    dev_->advance_clock(1ms);  // one page pinned: the first
    ASSERT_TRUE(dev_->wait_completed(base + 1, 10s));
    EXPECT_EQ(dev_->counters().completed, base + 1);  // the second is due at 2 ms
    dev_->advance_clock(1ms);
    ASSERT_TRUE(dev_->wait_completed(base + 2, 10s));
    t.clear();
    EXPECT_EQ(done.load(), 2);
    for (auto* u : umems) {
        ASSERT_NE(u, nullptr);
        EXPECT_EQ(A.umem_dereg(u), 0);
    }
    munmap(mem, 2 * 4096);
}

// The kernel pins a umem's pages before it posts CREATE_UMEM: a
// registration that waits for the one command slot pins meanwhile, so once
// the slot is its own it needs no more time (zero fixed latency). Pinned
// from its slot instead, it would be due a millisecond after it.
class PinWhileQueued : public EmuTest {
protected:
    void SetUp() override {
        open_device(std::string("cx7,clock=manual,") + kZeroLatency +
                    ",pin_ns=1000000,pin_cpus=0,cmd_slots=1,max_inflight=1");
    }
};

TEST_F(PinWhileQueued, ARegistrationPinsWhileItWaitsForASlot) {
    void* mem = mmap(nullptr, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mem, MAP_FAILED);
    const uint64_t base = dev_->counters().completed;
    auto submitted = [&] {
        auto c = dev_->counters().by_opcode;
        return c[uint16_t(prm::Opcode::CREATE_UMEM)];
    };
    const uint64_t before = submitted();
    std::vector<mlx5dv_devx_umem*> umems(2, nullptr);
    std::vector<std::jthread> t;
    for (int i = 0; i < 2; i++)
        t.emplace_back([&, i] {
            umems[i] = A.umem_reg(ctx_, static_cast<char*>(mem) + i * 4096, 4096, IBV_ACCESS_LOCAL_WRITE);
        });
    // Both called at time 0: one holds the slot, the other queues for it.
    for (int i = 0; i < 10000 && submitted() < before + 2; i++) std::this_thread::sleep_for(1ms);
    ASSERT_EQ(submitted(), before + 2);
    ASSERT_TRUE(dev_->wait_running(1, 10s));
    dev_->advance_clock(1ms);  // both pinned; the first completes, the second takes the slot
    const bool both = dev_->wait_completed(base + 2, 10s);
    if (!both) dev_->advance_clock(1ms);  // lets the second go, so that the threads end
    EXPECT_TRUE(both);
    t.clear();
    for (auto* u : umems) {
        ASSERT_NE(u, nullptr);
        EXPECT_EQ(A.umem_dereg(u), 0);
    }
    munmap(mem, 2 * 4096);
}

}  // namespace
}  // namespace mlx5async::emu::test
