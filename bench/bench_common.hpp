// Shared by the benchmark files: the emulator profile and registration hooks.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

namespace mlx5async::bench {

// The emulator spec every suspend/resume benchmark runs on: the default cx7
// timing (0.5 ms modify, 0.656 ms query, 16 in flight), with room for 1024
// queues. $MLX5A_BENCH_PROFILE overrides it.
inline std::string profile_spec() {
    const char* env = std::getenv("MLX5A_BENCH_PROFILE");
    return env && *env ? env : "cx7,max_virtqs=1024";
}

// The time of every batch of one benchmark repetition. A suspend/resume
// benchmark reports the median batch (measured_ms: what the targets
// and vdpa-testpmd's measured_over_ideal use) and the mean (mean_ms): one
// batch the VM stalled for a few hundred microseconds moves the mean of a
// 1 ms batch by a percent, the median not at all.
class BatchTimes {
public:
    void add(double ms) { ms_.push_back(ms); }
    double mean() const {
        return ms_.empty() ? 0 : std::accumulate(ms_.begin(), ms_.end(), 0.0) / double(ms_.size());
    }
    double median() const {
        if (ms_.empty()) return 0;
        std::vector<double> v = ms_;
        auto mid = v.begin() + std::ptrdiff_t(v.size() / 2);
        std::nth_element(v.begin(), mid, v.end());
        if (v.size() % 2) return *mid;
        return (*mid + *std::max_element(v.begin(), mid)) / 2;
    }

private:
    std::vector<double> ms_;
};

void register_suspend_resume();
void register_heuristics();
void register_engine_overhead();
void register_floor();
void register_datapath();
void register_destination();

}  // namespace mlx5async::bench
