// The names the engine tests over the scripted FakeDevx share: the fake's
// types, the virtq states they script, and the deadline that is never the
// point of a test.
#pragma once

#include <chrono>

#include "common/prm/virtq.hpp"
#include "testkit/fake_devx_api.hpp"

namespace mlx5async::devx::fake_engine {

using namespace std::chrono_literals;
using testing::FakeCall;
using testing::FakeDevx;
using testing::FakeEvent;
using testing::FakeOp;
using testing::FakeReply;
using prm::VirtqState;

inline constexpr auto kGenerous = 10s;
// The fake answers at once, which under a sanitizer still takes tens of
// microseconds, and preempted on a loaded machine far more: tests of the
// fast-command mode count anything under the 1 ms starting average as fast in
// every build (EngineOptions::fast_command_ns).
inline constexpr std::chrono::nanoseconds kFakeAnswersFast = 900us;

}  // namespace mlx5async::devx::fake_engine
