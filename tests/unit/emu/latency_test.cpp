// The steady clock never completes a command before its modelled latency:
// the emulator may be late (host scheduling) but never early, whatever it
// does to come closer to its due times (waits aimed early, spinning). Real
// time, more waiting threads than CPUs, so wake-ups are late and any
// compensation for that lateness is exercised.
#include <fcntl.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <thread>
#include <vector>

#include "common/base/steady_clock.hpp"
#include "emu/clock.hpp"
#include "emu_fixture.hpp"

namespace mlx5async::emu::test {
namespace {

using namespace std::chrono_literals;
using prm::VirtqState;

constexpr int64_t kQueryUs = 300;

int64_t now_ns() { return steady_now_ns(); }

class NeverEarly : public EmuTest {
protected:
    void SetUp() override {
        open_device(std::string("cx7,") + kZeroLatency + ",query_us=" + std::to_string(kQueryUs));
    }
};

// Blocking QUERYs from 24 threads (16 in flight) and a stream of async
// QUERYs: each caller's own measurement, and the emulator's trace (its
// clock: slot granted -> completed), is at least the modelled latency.
TEST_F(NeverEarly, NoCommandCompletesBeforeItsModelledLatency) {
    Vq vq = virtq_in_state(VirtqState::RDY);
    dev_->clear_trace();
    uint64_t base = dev_->counters().completed;
    constexpr int64_t kLatNs = kQueryUs * 1000;
    std::atomic<int> early{0}, ok{0};
    std::atomic<int64_t> min_seen{std::numeric_limits<int64_t>::max()};
    auto note = [&](int64_t elapsed) {
        if (elapsed < kLatNs) ++early;
        int64_t m = min_seen.load();
        while (elapsed < m && !min_seen.compare_exchange_weak(m, elapsed)) {
        }
    };
    {
        std::vector<std::jthread> threads;
        for (int t = 0; t < 24; ++t)
            threads.emplace_back([&] {
                std::vector<std::byte> in(16), out(prm::kVirtqQueryOutBytes);
                prm::encode_query_virtq(vq.id, in);
                for (int i = 0; i < 15; ++i) {
                    int64_t t0 = now_ns();
                    if (A.obj_query(vq.obj, in.data(), in.size(), out.data(), out.size()) != 0)
                        continue;
                    note(now_ns() - t0);
                    ++ok;
                }
            });
        // Async: one at a time, submit -> completion readable (EBUSY: retry).
        threads.emplace_back([&] {
            auto* cc = A.create_cmd_comp(ctx_);
            ASSERT_NE(cc, nullptr);
            fcntl(cc->fd, F_SETFL, O_NONBLOCK);
            std::vector<std::byte> in(16);
            prm::encode_query_virtq(vq.id, in);
            alignas(8) std::byte buf[sizeof(mlx5dv_devx_async_cmd_hdr) + prm::kVirtqQueryOutBytes];
            auto* hdr = reinterpret_cast<mlx5dv_devx_async_cmd_hdr*>(buf);
            for (int i = 0; i < 30; ++i) {
                int64_t t0 = now_ns();
                int rc;
                while ((rc = A.obj_query_async(vq.obj, in.data(), in.size(),
                                               prm::kVirtqQueryOutBytes, uint64_t(i), cc)) == EBUSY)
                    std::this_thread::sleep_for(20us);
                ASSERT_EQ(rc, 0);
                pollfd p{cc->fd, POLLIN, 0};
                ASSERT_EQ(::poll(&p, 1, 10'000), 1);
                ASSERT_EQ(A.get_async_cmd_comp(cc, hdr, sizeof buf), 0);
                note(now_ns() - t0);
                ++ok;
            }
            A.destroy_cmd_comp(cc);
        });
    }
    EXPECT_EQ(ok.load(), 24 * 15 + 30);
    EXPECT_EQ(early.load(), 0) << "shortest " << min_seen.load() << " ns < " << kLatNs;
    // The firmware thread posts an async completion, then records it.
    ASSERT_TRUE(dev_->wait_completed(base + 24 * 15 + 30, 10s));
    int traced = 0;
    for (const TraceEntry& e : dev_->trace()) {
        if (e.opcode != uint16_t(prm::Opcode::QUERY_GENERAL_OBJECT)) continue;
        ++traced;
        EXPECT_GE(e.end_ns - e.start_ns, kLatNs) << "seq " << e.seq << (e.async ? " async" : "");
    }
    EXPECT_EQ(traced, 24 * 15 + 30);
    EXPECT_LE(dev_->counters().peak_inflight, 16u);
}

// The wake-up delay a timed wait aims ahead by follows the host's (here a
// steady one), and a preemption's outlier moves it no further than the cap.
TEST(WakeupDelayTest, AimsAheadByTheLearntDelayWithinTheCap) {
    WakeupDelay d;
    EXPECT_EQ(d.aim_ahead_ns(), 0);
    for (int i = 0; i < 200; ++i) d.add(30'000);
    EXPECT_GE(d.aim_ahead_ns(), 30'000 - 100);
    EXPECT_LE(d.aim_ahead_ns(), 30'100);
    for (int i = 0; i < 5; ++i) d.add(50'000'000);
    EXPECT_LE(d.aim_ahead_ns(), WakeupDelay::kMaxAheadNs);
    for (int i = 0; i < 200; ++i) d.add(-5);  // a wake-up before the deadline counts as on time
    EXPECT_GE(d.aim_ahead_ns(), 0);
    EXPECT_LE(d.aim_ahead_ns(), 100);
}

}  // namespace
}  // namespace mlx5async::emu::test
