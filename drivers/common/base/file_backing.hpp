// Whether a file a peer hands over covers the range it says to map. A
// mapping past the end of a regular file (memfd, tmpfs, hugetlbfs) succeeds,
// and the first access there kills the process with SIGBUS: a range is
// checked against the file's size before anything maps it.
#pragma once

#include <cstdint>

#include "common/base/result.hpp"

namespace mlx5async {

// OK when [offset, offset + size) lies within the file behind `fd`, or when
// `fd` is not a regular file (mmap itself refuses pipes and sockets, and a
// device file has no size to check). The error gives the file's size and
// the range; the caller names whose file it is.
Result<void> check_file_covers(int fd, uint64_t offset, uint64_t size);

}  // namespace mlx5async
