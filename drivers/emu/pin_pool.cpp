#include "pin_pool.hpp"

#include <algorithm>

namespace mlx5async::emu {

PinPool& PinPool::host() {
    static PinPool pool;
    return pool;
}

int64_t PinPool::book(int64_t start_ns, int64_t work_ns, uint32_t cpus) {
    if (cpus == 0 || work_ns <= 0) return start_ns + std::max<int64_t>(work_ns, 0);
    std::lock_guard lk(mu_);
    if (free_at_.size() < cpus) free_at_.resize(cpus, 0);
    auto lane = std::min_element(free_at_.begin(), free_at_.begin() + cpus);
    *lane = std::max(*lane, start_ns) + work_ns;
    return *lane;
}

}  // namespace mlx5async::emu
