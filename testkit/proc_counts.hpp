// Process resource counts for leak tests: open fds and threads, read from
// /proc/self (Linux).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace mlx5async::testing {

inline size_t count_dir(const char* path) {
    size_t n = 0;
    for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(path)) ++n;
    return n;
}
inline size_t open_fd_count() { return count_dir("/proc/self/fd"); }
inline size_t thread_count() { return count_dir("/proc/self/task"); }
// Resident set size in bytes (/proc/self/statm, second field, in pages).
inline size_t rss_bytes() {
    std::ifstream f("/proc/self/statm");
    size_t size = 0, resident = 0;
    f >> size >> resident;
    return resident * size_t(::sysconf(_SC_PAGESIZE));
}

}  // namespace mlx5async::testing
