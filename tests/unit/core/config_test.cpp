#include "vdpa/mlx5async/core/config.hpp"

#include "vdpa/mlx5async/core/backend.hpp"

#include <gtest/gtest.h>

#include "mlx5async_config.h"
#if MLX5ASYNC_HAVE_EMULATOR
#include "testkit/linked_emulator.hpp"  // emu= specs checked by the linked emulator
#endif

namespace mlx5async::core {
namespace {

Result<DeviceConfig> parse(KeyValues kv) { return parse_device_config(kv); }


#if MLX5ASYNC_HAVE_EMULATOR  // emulated configurations
TEST(DevArgs, EmulatedDefaults) {
    auto c = parse({{"emu", "cx7"}});
    ASSERT_TRUE(c) << c.error().what;
    EXPECT_TRUE(c->is_emulated());
    EXPECT_EQ(c->emu_spec, "cx7");
    EXPECT_EQ(c->max_inflight, 16u);
    EXPECT_EQ(c->strategy, Strategy::Async);
    EXPECT_EQ(c->queues, 0u);
}
#endif

#if MLX5ASYNC_HAVE_EMULATOR  // emulated configurations
TEST(DevArgs, QueuesAloneGetDefaultRingSize) {
    auto c = parse({{"emu", "cx6dx"}, {"queues", "16"}});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->queues, 16u);
    EXPECT_EQ(c->queue_size, 256u);
}
#endif

#if MLX5ASYNC_HAVE_EMULATOR  // emulated configurations
TEST(DevArgs, EveryKeyParsed) {
    auto c = parse({{"dev", "0000:08:00.2"}, {"queues", "4"}, {"queue_size", "1024"},
                    {"max_inflight", "8"}, {"strategy", "threads"}, {"max_conf_threads", "6"},
                    {"timeout_ms", "500"}, {"start_attempts", "1"}, {"event_core", "1"}});
    ASSERT_TRUE(c) << c.error().what;
    EXPECT_EQ(c->start_attempts, 1u);
    EXPECT_EQ(c->hw_device, "0000:08:00.2");
    EXPECT_EQ(c->queue_size, 1024u);
    EXPECT_EQ(c->max_inflight, 8u);
    EXPECT_EQ(c->strategy, Strategy::Threads);
    EXPECT_EQ(c->threads, 6u);
    EXPECT_EQ(c->timeout_ms, 500u);
    EXPECT_EQ(c->event_core, 1);
}
#endif

// The announce devargs: QEMU's announce-* defaults, a user's announce=on
// recorded (a device that cannot announce then fails its probe).
TEST(DevArgs, AnnounceDefaultsLikeQemuAndTakesItsTimer) {
    auto d = parse({{"dev", "08:00.1"}});
    ASSERT_TRUE(d) << d.error().what;
    EXPECT_TRUE(d->announce.on);
    EXPECT_FALSE(d->announce.set);
    EXPECT_EQ(d->announce.rounds, 5u);
    EXPECT_EQ(d->announce.initial_ms, 50u);
    EXPECT_EQ(d->announce.step_ms, 100u);
    EXPECT_EQ(d->announce.max_ms, 550u);
    auto c = parse({{"dev", "08:00.1"}, {"announce", "on"}, {"announce_rounds", "3"},
                    {"announce_initial_ms", "1"}, {"announce_step_ms", "0"}, {"announce_max_ms", "7"}});
    ASSERT_TRUE(c) << c.error().what;
    EXPECT_TRUE(c->announce.on && c->announce.set);
    EXPECT_EQ(c->announce.rounds, 3u);
    EXPECT_EQ(c->announce.initial_ms, 1u);
    EXPECT_EQ(c->announce.step_ms, 0u);
    EXPECT_EQ(c->announce.max_ms, 7u);
    auto off = parse({{"dev", "08:00.1"}, {"announce", "off"}});
    ASSERT_TRUE(off);
    EXPECT_FALSE(off->announce.on);
}

TEST(DevArgs, DevTakesPciAddressOrIbvName) {
    EXPECT_TRUE(parse({{"dev", "08:00.1"}}));
    EXPECT_TRUE(parse({{"dev", "mlx5_0"}}));
    EXPECT_TRUE(parse({{"dev", "mlx5emu0"}}));
}

#if MLX5ASYNC_HAVE_EMULATOR  // emulated configurations
TEST(DevArgs, EmulatorOverridesJoinTheSpec) {
    auto c = parse({{"emu", "cx7"}, {"emu_modify_us", "0"}, {"emu_query_us", "10"}});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->emu_spec, "cx7,modify_us=0,query_us=10");
}
#endif

TEST(DevArgs, VhostSocketTakesAnAbsolutePathAndClientMode) {
    auto c = parse({{"dev", "08:00.1"}, {"vhost_socket", "/run/vm1/vhost0"}, {"vhost_client", "1"}});
    ASSERT_TRUE(c) << c.error().what;
    EXPECT_EQ(c->vhost_socket, "/run/vm1/vhost0");
    EXPECT_TRUE(c->vhost_client);
    auto server = parse({{"dev", "08:00.1"}, {"vhost_socket", "/run/vm1/vhost0"}});
    ASSERT_TRUE(server);
    EXPECT_FALSE(server->vhost_client);
    auto none = parse({{"dev", "08:00.1"}});
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->vhost_socket.empty());
}

TEST(DevArgs, VhostSocketOfTheLongestUnixPathAccepted) {
    const std::string longest = "/" + std::string(106, 'a');  // 107 bytes + NUL = sun_path
    EXPECT_TRUE(parse({{"dev", "08:00.1"}, {"vhost_socket", longest}}));
    auto c = parse({{"dev", "08:00.1"}, {"vhost_socket", longest + "a"}});
    ASSERT_FALSE(c);
    EXPECT_NE(c.error().what.find("at most 107 bytes (108 given)"), std::string::npos) << c.error().what;
}

struct BadCase {
    KeyValues kv;
    const char* expect;
    bool emulator_checks = false;  // refused by the emulator's own spec check
};

#if !MLX5ASYNC_HAVE_EMULATOR
// No emulator plugin to load (its path points nowhere): refused, naming it.
TEST(DevArgs, EmulatedDeviceRefusedWithoutThePlugin) {
    auto c = parse({{"emu", "cx7"}, {"queues", "2"}});
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().code, Errc::NotSupported);
    EXPECT_NE(c.error().what.find("the emulator plugin /nonexistent/libmlx5emu.so.0 cannot be loaded"),
              std::string::npos)
        << c.error().what;
}
#endif

class DevArgsRejected : public ::testing::TestWithParam<BadCase> {};

TEST_P(DevArgsRejected, NamesKeyAndRange) {
    auto c = parse(GetParam().kv);
    ASSERT_FALSE(c);
    if (GetParam().emulator_checks && !MLX5ASYNC_HAVE_EMULATOR) {
        EXPECT_EQ(c.error().code, Errc::NotSupported);
        EXPECT_NE(c.error().what.find("libmlx5emu.so.0 cannot be loaded"), std::string::npos) << c.error().what;
        return;
    }
    EXPECT_EQ(c.error().code, Errc::InvalidArgument);
    EXPECT_NE(c.error().what.find(GetParam().expect), std::string::npos) << c.error().what;
}

INSTANTIATE_TEST_SUITE_P(
    All, DevArgsRejected,
    ::testing::Values(
        BadCase{{{"emu", "cx9"}}, "devargs emu=cx9: emu: unknown profile 'cx9' (cx6dx, cx7)", true},
        BadCase{{{"emu", "cx7"}, {"queues", "0"}}, "devarg queues=0: expected an integer in [1, 512]"},
        BadCase{{{"emu", "cx7"}, {"queues", "x"}}, "devarg queues=x"},
        BadCase{{{"emu", "cx7"}, {"queue_size", "100"}}, "a power of 2"},
        BadCase{{{"emu", "cx7"}, {"max_inflight", "0"}}, "devarg max_inflight=0"},
        BadCase{{{"emu", "cx7"}, {"start_attempts", "11"}}, "devarg start_attempts=11"},
        BadCase{{{"emu", "cx7"}, {"strategy", "fast"}}, "async|sequential|threads"},
        BadCase{{{"emu", "cx7"}, {"bogus", "1"}}, "unknown devarg 'bogus'"},
        BadCase{{{"emu", "cx7"}, {"emu_warp", "1"}}, "with emu_* keys: emu spec: unknown key 'warp'", true},
        BadCase{{{"emu", "cx7"}, {"emu_modify_us", "99999999"}}, "modify_us out of range", true},
        // Nothing steps a manual clock for a driver: its probe would wait for ever.
        BadCase{{{"emu", "cx7"}, {"emu_clock", "manual"}}, "clock=manual", true},
        BadCase{{{"emu", "cx7"}, {"emu_modify_us", "1,query_us=2"}}, "expected a single value"},
        BadCase{{{"dev", "08:00"}}, "expected a PCI address"},
        BadCase{{{"dev", "08:00.1"}, {"announce", "1"}}, "devarg announce=1: expected on|off"},
        BadCase{{{"dev", "08:00.1"}, {"announce_rounds", "0"}}, "devarg announce_rounds=0"},
        BadCase{{{"dev", "08:00.1"}, {"announce_initial_ms", "0"}}, "devarg announce_initial_ms=0"},
        BadCase{{{"dev", "08:00.1"}, {"announce_max_ms", "100001"}}, "devarg announce_max_ms=100001"},
        BadCase{{{"dev", "Mlx5-0"}}, "or an ibv device name"},
        BadCase{{{"queues", "2"}}, "exactly one of emu=<profile> or dev=<PCI address>"},
        BadCase{{{"emu", "cx7"}, {"dev", "08:00.1"}}, "exactly one of"},
        BadCase{{{"dev", "08:00.1"}, {"emu_query_us", "1"}}, "emu_* keys apply only"},
        BadCase{{{"dev", "08:00.1"}, {"vhost_socket", "vhost0"}},
                "devarg vhost_socket=vhost0: expected an absolute path"},
        BadCase{{{"dev", "08:00.1"}, {"vhost_socket", ""}}, "devarg vhost_socket=: expected an absolute path"},
        BadCase{{{"dev", "08:00.1"}, {"vhost_socket", "/s"}, {"vhost_client", "yes"}},
                "devarg vhost_client=yes: expected 0|1"},
        BadCase{{{"dev", "08:00.1"}, {"vhost_client", "1"}},
                "vhost_client applies only with vhost_socket=<path>"},
        // A key given twice is refused: which one was meant is unknown.
        BadCase{{{"emu", "cx7"}, {"emu", "cx6dx"}}, "devarg emu given twice (emu=cx7, then emu=cx6dx)"},
        BadCase{{{"emu", "cx7"}, {"queues", "2"}, {"queues", "2"}}, "devarg queues given twice"},
        BadCase{{{"emu", "cx7"}, {"emu_query_us", "1"}, {"emu_query_us", "2"}},
                "devarg emu_query_us given twice"}));

}  // namespace
}  // namespace mlx5async::core
