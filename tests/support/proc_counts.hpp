// Process resource counts for leak tests: open fds and threads, read from
// /proc/self (Linux).
#pragma once

#include <filesystem>

namespace mlx5async::testing {

inline size_t count_dir(const char* path) {
    size_t n = 0;
    for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(path)) ++n;
    return n;
}
inline size_t open_fd_count() { return count_dir("/proc/self/fd"); }
inline size_t thread_count() { return count_dir("/proc/self/task"); }

}  // namespace mlx5async::testing
