// Virtq error recovery: OBJECT_CHANGE (0x27) events from the device's DevX
// event channel, one subscription per virtq object (cookie = ring). A virtq
// found in ERR is re-created from its last hardware indexes and restarted,
// at most kMaxErrors times within DeviceConfig::error_window_ms (DPDK mlx5:
// "3 errors in 3 s"), after which it stays in Error and is reported.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "common/base/result.hpp"
#include "common/base/unique_fd.hpp"
#include "common/devx/raii.hpp"
#include "epoll_thread.hpp"

namespace mlx5async::core {

class Device;

class ErrorRecovery {
public:
    static constexpr int kMaxErrors = 3;

    // Starts the event thread ("mlx5a-ev") on `ch`.
    static Result<std::unique_ptr<ErrorRecovery>> start(const devx::DevxApi& api,
                                                        devx::EventChannel& ch,
                                                        std::function<void(uint16_t)> on_error);
    ~ErrorRecovery();

    // Waits until `n` events have been handled in total (tests).
    bool wait_handled(uint64_t n, std::chrono::milliseconds timeout);

private:
    ErrorRecovery(const devx::DevxApi& api, devx::EventChannel& ch,
                  std::function<void(uint16_t)> on_error);
    void run(std::stop_token st);

    const devx::DevxApi& api_;
    devx::EventChannel& ch_;
    std::function<void(uint16_t)> on_error_;
    std::mutex mu_;  // protects handled_
    std::condition_variable cv_;
    uint64_t handled_ = 0;
    EpollThread loop_;  // last: stops first
};

}  // namespace mlx5async::core
