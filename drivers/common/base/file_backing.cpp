#include "file_backing.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <string>

namespace mlx5async {

Result<void> check_file_covers(int fd, uint64_t offset, uint64_t size) {
    struct stat st;
    if (fstat(fd, &st) != 0) return unexpected(Error::sys(errno, "fstat of fd " + std::to_string(fd)));
    if (!S_ISREG(st.st_mode)) return {};
    uint64_t end = offset + size;
    if (end < offset)
        return fail(Errc::InvalidArgument, "offset " + std::to_string(offset) + " + size " +
                                               std::to_string(size) + " overflows");
    if (uint64_t(st.st_size) >= end) return {};
    return fail(Errc::InvalidArgument, "the file has " + std::to_string(st.st_size) +
                                           " bytes, short of offset " + std::to_string(offset) +
                                           " + size " + std::to_string(size) + " = " + std::to_string(end));
}

}  // namespace mlx5async
