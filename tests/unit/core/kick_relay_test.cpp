// The kick relay against fds a careless or hostile frontend hands it: one
// that cannot be polled, one that hangs up, one replaced on a running ring.
// Each is handled alone; the other rings' kicks still reach the doorbell.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "testkit/eventually.hpp"
#include "common/base/log_sink.hpp"
#include "vdpa/mlx5async/core/kick_relay.hpp"

namespace mlx5async::core {
namespace {

class KickRelayTest : public ::testing::Test {
protected:
    void SetUp() override {
        set_log_sink([this](LogLevel, std::string_view l) {
            std::lock_guard lk(mu);
            lines.emplace_back(l);
        });
        page = memfd_create("doorbell", MFD_CLOEXEC);
        ASSERT_GE(page, 0);
        ASSERT_EQ(ftruncate(page, 4096), 0);
        auto r = KickRelay::create(page, 0, 4096, "kr");
        ASSERT_TRUE(r) << to_string(r.error());
        relay = std::move(*r);
        relay->set_open(true);
    }
    void TearDown() override {
        relay.reset();
        for (int fd : fds) close(fd);
        close(page);
        set_log_sink(nullptr);
    }
    int keep(int fd) {
        EXPECT_GE(fd, 0);
        fds.push_back(fd);
        return fd;
    }
    int kickfd() { return keep(eventfd(0, EFD_CLOEXEC)); }  // blocking, as QEMU's may be
    static void kick(int fd) { ASSERT_EQ(eventfd_write(fd, 1), 0); }
    template <typename P>
    static bool eventually(P pred) { return mlx5async::testing::eventually(pred); }
    bool logged(const std::string& a, const std::string& b) {
        std::lock_guard lk(mu);
        for (const auto& l : lines)
            if (l.find(a) != std::string::npos && l.find(b) != std::string::npos) return true;
        return false;
    }

    int page = -1;
    std::unique_ptr<KickRelay> relay;
    std::vector<int> fds;
    std::mutex mu;  // lines: written by the relay's thread
    std::vector<std::string> lines;
};

TEST_F(KickRelayTest, AnUnpollableKickfdIsRefusedByNameAndTheOtherRingsGoOn) {
    const int file = keep(memfd_create("regular", MFD_CLOEXEC));  // epoll refuses regular files
    const int zero = keep(open("/dev/zero", O_RDONLY | O_CLOEXEC));
    const int good = kickfd();
    relay->set_rings({{0, file}, {1, zero}, {2, good}});
    EXPECT_EQ(relay->rings(), 1u);
    EXPECT_EQ(relay->stats().dropped, 2u);
    EXPECT_TRUE(logged("vring 0", "kickfd")) << "no line names ring 0";
    EXPECT_TRUE(logged("vring 1", "kickfd")) << "no line names ring 1";
    kick(good);
    EXPECT_TRUE(eventually([&] { return relay->stats().doorbells == 1; }));
    EXPECT_EQ(relay->stats().kicks, 1u);
}

TEST_F(KickRelayTest, AKickfdThatHangsUpIsDroppedAndWakesTheRelayNoMore) {
    int p[2];
    ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
    keep(p[0]);
    close(p[1]);  // the writer is gone: level-triggered EPOLLHUP for ever
    const int good = kickfd();
    relay->set_rings({{0, p[0]}, {1, good}});
    EXPECT_TRUE(eventually([&] { return relay->stats().dropped == 1; }));
    EXPECT_EQ(relay->rings(), 1u);
    EXPECT_TRUE(logged("vring 0", "hung up"));
    kick(good);
    EXPECT_TRUE(eventually([&] { return relay->stats().doorbells == 1; }));
    EXPECT_EQ(relay->stats().dropped, 1u);
}

TEST_F(KickRelayTest, AReplacedKickfdIsFollowedAndTheOldOneIsIgnored) {
    const int old_fd = kickfd();
    const int new_fd = kickfd();
    relay->set_rings({{0, old_fd}, {1, kickfd()}});
    relay->set_ring(0, new_fd);
    EXPECT_EQ(relay->rings(), 2u);
    kick(old_fd);
    kick(new_fd);
    EXPECT_TRUE(eventually([&] { return relay->stats().kicks == 1; }));
    EXPECT_EQ(relay->stats().doorbells, 1u);
    // The old fd's kick is still in its counter: not read, so not relayed.
    eventfd_t left = 0;
    ASSERT_EQ(fcntl(old_fd, F_SETFL, O_NONBLOCK), 0);
    EXPECT_EQ(eventfd_read(old_fd, &left), 0);
    EXPECT_EQ(left, 1u);
    relay->set_ring(0, -1);  // the frontend cleared it
    EXPECT_EQ(relay->rings(), 1u);
}

TEST_F(KickRelayTest, KicksWhileGatedAreHeldAndReplayedOncePerRing) {
    const int a = kickfd();
    relay->set_rings({{3, a}});
    relay->set_open(false);
    kick(a);
    EXPECT_TRUE(eventually([&] { return relay->stats().held == 1; }));
    EXPECT_EQ(relay->stats().doorbells, 0u);
    relay->set_open(true);
    EXPECT_EQ(relay->stats().doorbells, 1u);
}

}  // namespace
}  // namespace mlx5async::core
