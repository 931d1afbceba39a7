// Shared by the benchmark files: the emulator profile and registration hooks.
#pragma once

#include <cstdlib>
#include <string>

namespace mlx5async::bench {

// The emulator spec every suspend/resume benchmark runs on: the default cx7
// timing (0.5 ms modify, 0.656 ms query, 16 in flight), with room for 1024
// queues. $MLX5A_BENCH_PROFILE overrides it.
inline std::string profile_spec() {
    const char* env = std::getenv("MLX5A_BENCH_PROFILE");
    return env && *env ? env : "cx7,max_virtqs=1024";
}

void register_suspend_resume();
void register_engine_overhead();
void register_floor();

}  // namespace mlx5async::bench
