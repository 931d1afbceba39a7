// Nanoseconds on the steady clock: the one time base of traces, latencies
// and deadlines in every layer (engine, emulator, PMD, benchmarks, tests).
#pragma once

#include <chrono>
#include <cstdint>

namespace mlx5async {

inline int64_t steady_now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace mlx5async
