#include "host_pin.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace mlx5async::emu {
namespace {

struct Vma {
    uint64_t start = 0, end = 0;
    bool readable = false, writable = false, shared = false;
    uint64_t offset = 0;  // of start in the backing file
    uint64_t inode = 0;   // 0: anonymous
};

// The mappings overlapping [lo, hi), in address order (/proc/self/maps).
std::vector<Vma> vmas_over(uint64_t lo, uint64_t hi) {
    std::vector<Vma> out;
    FILE* f = std::fopen("/proc/self/maps", "re");
    if (!f) return out;
    char line[512];
    while (std::fgets(line, sizeof line, f)) {
        Vma v;
        char perms[8] = {};
        unsigned dev_major = 0, dev_minor = 0;
        if (std::sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64, &v.start,
                        &v.end, perms, &v.offset, &dev_major, &dev_minor, &v.inode) != 7)
            continue;
        if (v.end <= lo) continue;
        if (v.start >= hi) break;
        v.readable = perms[0] == 'r';
        v.writable = perms[1] == 'w';
        v.shared = perms[3] == 's';
        out.push_back(v);
    }
    std::fclose(f);
    return out;
}

Unexpected<Error> efault(const std::string& why, uint64_t addr, uint64_t size) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " [0x%" PRIx64 ", +0x%" PRIx64 ")", addr, size);
    return unexpected(Error::sys(EFAULT, "umem registration: " + why + buf));
}

// Bytes of the file behind a file-backed mapping, or -1 when it cannot be
// told (map_files needs CAP_SYS_ADMIN): then the range is not checked.
int64_t backing_file_size(const Vma& v) {
    char path[80];
    std::snprintf(path, sizeof path, "/proc/self/map_files/%" PRIx64 "-%" PRIx64, v.start, v.end);
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st {};
    int rc = ::fstat(fd, &st);
    ::close(fd);
    return rc == 0 ? int64_t(st.st_size) : -1;
}

}  // namespace

HostPin& HostPin::operator=(HostPin&& o) noexcept {
    if (this != &o) {
        release();
        device_addr_ = std::exchange(o.device_addr_, 0);
        view_ = std::exchange(o.view_, nullptr);
        view_len_ = std::exchange(o.view_len_, 0);
    }
    return *this;
}

void HostPin::release() noexcept {
    if (view_) ::munmap(view_, view_len_);
    view_ = nullptr;
    view_len_ = 0;
}

Result<HostPin> HostPin::pin(uint64_t addr, uint64_t size, bool writable) {
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    if (size == 0 || addr + size < addr) return efault("empty or wrapping range", addr, size);
    const uint64_t lo = addr & ~(page - 1);
    const uint64_t hi = (addr + size + page - 1) & ~(page - 1);
    auto vmas = vmas_over(lo, hi);
    bool all_shared = !vmas.empty();
    uint64_t cursor = lo;
    for (const Vma& v : vmas) {
        if (v.start > cursor) return efault("a page is not mapped", addr, size);
        if (!v.readable || (writable && !v.writable))
            return efault(writable ? "a page is not readable and writable" : "a page is not readable",
                          addr, size);
        const uint64_t piece_end = std::min(hi, v.end);
        if (v.inode) {
            int64_t fsize = backing_file_size(v);
            uint64_t file_end = v.offset + (piece_end - v.start);
            if (fsize >= 0 && file_end > ((uint64_t(fsize) + page - 1) & ~(page - 1)))
                return efault("pages past the end of the mapped file", addr, size);
        }
        all_shared = all_shared && v.shared;
        cursor = piece_end;
    }
    if (cursor < hi) return efault("a page is not mapped", addr, size);

    HostPin p;
    p.device_addr_ = addr;
    if (!all_shared) return p;  // private: used in place
    // One reserved range, then each mapping's part duplicated into it.
    void* view = ::mmap(nullptr, hi - lo, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (view == MAP_FAILED) return unexpected(Error::sys(ENOMEM, "umem registration: no address space"));
    p.view_ = view;
    p.view_len_ = hi - lo;
    for (const Vma& v : vmas) {
        const uint64_t a = std::max(lo, v.start), b = std::min(hi, v.end);
        void* dst = static_cast<char*>(view) + (a - lo);
        void* got = ::mremap(reinterpret_cast<void*>(uintptr_t(a)), 0, b - a,
                             MREMAP_MAYMOVE | MREMAP_FIXED, dst);
        if (got == MAP_FAILED) {
            int err = errno;
            p.release();
            // Unmapped since /proc/self/maps was read (vhost replacing a
            // log): nothing left to pin.
            if (err == EFAULT) return efault("a page was unmapped during registration", addr, size);
            // A shared mapping the kernel will not duplicate (hugetlbfs,
            // VM_DONTEXPAND): used in place, as private memory is.
            p.device_addr_ = addr;
            return p;
        }
    }
    p.device_addr_ = uint64_t(uintptr_t(view)) + (addr - lo);
    return p;
}

}  // namespace mlx5async::emu
