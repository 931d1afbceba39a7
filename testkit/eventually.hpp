// Waiting for a condition a test cannot be woken for (a device-side state,
// a thread naming itself): polled, up to a generous deadline, never a
// fixed sleep before an assertion. The one helper of the C++ tests.
#pragma once

#include <chrono>
#include <thread>

namespace mlx5async::testing {

template <typename P>
bool eventually(P pred, std::chrono::milliseconds deadline = std::chrono::seconds(20)) {
    const auto end = std::chrono::steady_clock::now() + deadline;
    while (!pred()) {
        if (std::chrono::steady_clock::now() > end) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return true;
}

}  // namespace mlx5async::testing
