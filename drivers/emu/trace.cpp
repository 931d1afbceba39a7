#include "trace.hpp"

namespace mlx5async::emu {

void Trace::record(const TraceEntry& e) {
    std::lock_guard lk(mu_);
    if (ring_.size() == cap_) ring_.pop_front();
    ring_.push_back(e);
}

std::vector<TraceEntry> Trace::snapshot() const {
    std::lock_guard lk(mu_);
    return {ring_.begin(), ring_.end()};
}

void Trace::clear() {
    std::lock_guard lk(mu_);
    ring_.clear();
}

}  // namespace mlx5async::emu
