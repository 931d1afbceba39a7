// Device configuration from devargs, validated once (DPDK-free: the PMD glue
// splits the string with rte_kvargs and hands the pairs here).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base/result.hpp"
#include "common/devx/engine.hpp"

namespace mlx5async::core {

// How a multi-queue operation reaches the firmware (the engine's strategies).
using devx::Strategy;
using devx::strategy_name;

// How a used buffer reaches the guest. Irq: QP event mode, each vring's
// callfd written from a completion event (DPDK mlx5's event_mode=2,
// interrupts only). None: no interrupts (NO_MSIX); the frontend polls.
enum class EventMode : uint8_t { Irq, None };
Result<Strategy> parse_strategy(std::string_view s);  // with the devarg's error message

// The device's own announce at a start (announcer.hpp): on by default, in
// rounds as QEMU's announce-initial / -step / -max / -rounds default them.
struct AnnounceConfig {
    bool on = true;
    bool set = false;  // given by the user: a device that cannot announce fails the probe
    uint32_t rounds = 5;
    uint32_t initial_ms = 50;
    uint32_t step_ms = 100;
    uint32_t max_ms = 550;
};

// The ranges of the settings a running device can change too (devargs and
// Device::set_*).
struct UintRange { uint32_t lo, hi; };
inline constexpr UintRange kMaxInflightRange{1, 256};
inline constexpr UintRange kTimeoutMsRange{1, 600000};

struct DeviceConfig {
    // Exactly one backend: an emulated profile spec ("cx7,modify_us=0") or a
    // real ConnectX opened through rdma-core (devarg dev: a PCI address or
    // an ibv device name).
    std::string emu_spec;
    std::string hw_device;

    uint32_t queues = 0;        // queue pairs to pre-create at probe (0: at dev_conf)
    uint32_t queue_size = 0;    // ring size to pre-create with (0: at dev_conf)
    uint32_t max_inflight = 16; // engine throttle (mlx5_core general-object limit)
    Strategy strategy = Strategy::Async;
    uint32_t threads = 4;       // worker count for the `threads` baseline
    uint32_t timeout_ms = 2000; // deadline of one control batch
    // Attempts of a start whose failure the firmware may not repeat (1: no
    // retry): nothing tells vhost or the frontend that a start failed.
    uint32_t start_attempts = 3;
    EventMode event_mode = EventMode::Irq;
    bool event_mode_set = false;  // given by the user: fail instead of falling back
    int event_core = -1;        // CPU of the kick and interrupt threads, -1 = any
    // Virtq error recovery gives up after 3 errors within this window
    // (DPDK mlx5's "3 errors in 3 s").
    uint32_t error_window_ms = 3000;
    // The vhost-user socket the driver serves the device on (devarg
    // vhost_socket; empty: the application attaches the device to a socket
    // of its own), and whether it connects to it as a client (the frontend
    // listens) rather than listening.
    std::string vhost_socket;
    bool vhost_client = false;
    AnnounceConfig announce;
    // The engine's heuristic switches (devx::EngineOptions; no devarg:
    // benchmarks compare them). Its strategy, throttle and workers come from
    // the fields above.
    devx::EngineOptions engine_switches;

    bool is_emulated() const { return !emu_spec.empty(); }
};

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// Every accepted key with its range, one line each (for error messages/docs).
const std::vector<std::pair<std::string_view, std::string_view>>& devarg_keys();

// Validates every pair; the first bad one fails with an Error naming the key,
// the value and the accepted range. Unknown keys are rejected.
Result<DeviceConfig> parse_device_config(const KeyValues& kv);

}  // namespace mlx5async::core
