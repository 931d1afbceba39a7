#include "host_pin.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>
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

    bool operator==(const Vma&) const = default;
};

// PROCMAP_QUERY (Linux 6.11, uapi linux/fs.h; Debian 12's headers predate
// it): one mapping per ioctl on /proc/self/maps, found by address, instead
// of the whole text, which grows with every view a registration holds.
struct ProcmapQuery {
    uint64_t size, query_flags, query_addr;
    uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
    uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
    uint64_t vma_name_addr, build_id_addr;
};
static_assert(sizeof(ProcmapQuery) == 104);
constexpr unsigned long kProcmapQuery = 0xC0686611;  // _IOWR('f', 17, struct procmap_query)
constexpr uint64_t kQueryCoveringOrNext = 0x10;
constexpr uint64_t kVmaReadable = 0x1, kVmaWritable = 0x2, kVmaShared = 0x8;

// The mappings overlapping [lo, hi) through PROCMAP_QUERY; false when the
// kernel has no such ioctl.
bool query_vmas(uint64_t lo, uint64_t hi, std::vector<Vma>& out) {
    static const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    static std::atomic<bool> unsupported{fd < 0};
    if (unsupported.load(std::memory_order_relaxed)) return false;
    for (uint64_t at = lo; at < hi;) {
        ProcmapQuery q{};
        q.size = sizeof q;
        q.query_flags = kQueryCoveringOrNext;
        q.query_addr = at;
        if (::ioctl(fd, kProcmapQuery, &q) != 0) {
            if (errno == ENOENT) break;  // nothing mapped at or above `at`
            unsupported = true;
            out.clear();
            return false;
        }
        if (q.vma_start >= hi) break;
        out.push_back({q.vma_start, q.vma_end, (q.vma_flags & kVmaReadable) != 0,
                       (q.vma_flags & kVmaWritable) != 0, (q.vma_flags & kVmaShared) != 0,
                       q.vma_offset, q.inode});
        at = q.vma_end;
    }
    return true;
}

// The mappings overlapping [lo, hi), in address order.
std::vector<Vma> vmas_over(uint64_t lo, uint64_t hi) {
    std::vector<Vma> out;
    if (query_vmas(lo, hi, out)) return out;
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

struct BackingFile {
    int64_t size = -1;     // bytes; -1: cannot be told
    bool hugetlb = false;  // hugetlbfs (or a MFD_HUGETLB memfd)
    uint64_t page = 0;     // hugetlbfs: its page size (st_blksize)
};

// The file behind a file-backed mapping, as far as it can be told
// (map_files needs CAP_SYS_ADMIN; without it the range is not checked).
BackingFile backing_file(const Vma& v) {
    // Formatted without snprintf, a visible share of a registration's CPU.
    char path[64] = "/proc/self/map_files/";
    char* at = path + std::strlen(path);
    at = std::to_chars(at, std::end(path) - 1, v.start, 16).ptr;
    *at++ = '-';
    at = std::to_chars(at, std::end(path) - 1, v.end, 16).ptr;
    *at = '\0';
    BackingFile out;
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return out;
    struct stat st {};
    if (::fstat(fd, &st) == 0) out.size = int64_t(st.st_size);
    struct statfs fs {};
    out.hugetlb = ::fstatfs(fd, &fs) == 0 && fs.f_type == HUGETLBFS_MAGIC;
    if (out.hugetlb) out.page = uint64_t(st.st_blksize);
    ::close(fd);
    return out;
}

// The device's own view of [lo, hi), which `vmas` (shared mappings) cover:
// a duplicate of each (mremap with old_size 0) at one address. One mapping
// is duplicated wherever the kernel finds room; several go into a reserved
// range. Returns the view, MAP_FAILED when no address space is left, or
// nullptr when a duplicate failed (a mapping went away meanwhile).
void* duplicate(const std::vector<Vma>& vmas, uint64_t lo, uint64_t hi) {
    auto* src = reinterpret_cast<void*>(uintptr_t(lo));
    if (vmas.size() == 1) {
        void* view = ::mremap(src, 0, hi - lo, MREMAP_MAYMOVE);
        if (view != MAP_FAILED) return view;
        return errno == ENOMEM ? MAP_FAILED : nullptr;
    }
    void* view =
        ::mmap(nullptr, hi - lo, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (view == MAP_FAILED) return MAP_FAILED;
    for (const Vma& v : vmas) {
        const uint64_t a = std::max(lo, v.start), b = std::min(hi, v.end);
        void* dst = static_cast<char*>(view) + (a - lo);
        void* got = ::mremap(reinterpret_cast<void*>(uintptr_t(a)), 0, b - a,
                             MREMAP_MAYMOVE | MREMAP_FIXED, dst);
        if (got == MAP_FAILED) {
            ::munmap(view, hi - lo);
            return nullptr;
        }
    }
    return view;
}

}  // namespace

HostPin& HostPin::operator=(HostPin&& o) noexcept {
    if (this != &o) {
        release();
        device_addr_ = std::exchange(o.device_addr_, 0);
        pages_ = std::exchange(o.pages_, 0);
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

Result<HostPin> HostPin::pin(uint64_t addr, uint64_t size, bool writable, uint64_t shared_page) {
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    if (size == 0 || addr + size < addr) return efault("empty or wrapping range", addr, size);
    const uint64_t lo = addr & ~(page - 1);
    const uint64_t hi = (addr + size + page - 1) & ~(page - 1);
    auto vmas = vmas_over(lo, hi);
    bool all_shared = !vmas.empty();
    bool hugetlb = false;
    uint64_t pin_page = 0;  // the page size every part is backed by at least (the MTT's)
    uint64_t cursor = lo;
    for (const Vma& v : vmas) {
        if (v.start > cursor) return efault("a page is not mapped", addr, size);
        if (!v.readable || (writable && !v.writable))
            return efault(writable ? "a page is not readable and writable" : "a page is not readable",
                          addr, size);
        const uint64_t piece_end = std::min(hi, v.end);
        if (v.inode) {
            BackingFile file = backing_file(v);
            uint64_t file_end = v.offset + (piece_end - v.start);
            if (file.size >= 0 && file_end > ((uint64_t(file.size) + page - 1) & ~(page - 1)))
                return efault("pages past the end of the mapped file", addr, size);
            hugetlb = hugetlb || file.hugetlb;
            const uint64_t part_page = file.hugetlb && file.page ? file.page
                                       : v.shared && shared_page > page ? shared_page
                                                                        : page;
            pin_page = pin_page ? std::min(pin_page, part_page) : part_page;
        } else {
            pin_page = page;
        }
        all_shared = all_shared && v.shared;
        cursor = piece_end;
    }
    if (cursor < hi) return efault("a page is not mapped", addr, size);

    HostPin p;
    p.device_addr_ = addr;
    if (!pin_page) pin_page = page;
    p.pages_ = (hi - lo + pin_page - 1) / pin_page;
    // Private mappings (the driver's own buffers) and hugetlbfs, which the
    // kernel does not duplicate: used in place.
    if (!all_shared || hugetlb) return p;
    void* view = duplicate(vmas, lo, hi);
    if (view == MAP_FAILED) return unexpected(Error::sys(ENOMEM, "umem registration: no address space"));
    const bool duplicated = view != nullptr;
    if (duplicated) {
        p.view_ = view;
        p.view_len_ = hi - lo;
    }
    // The process unmapped or replaced part of the range since its mappings
    // were read (vhost replacing its log; the freed addresses may already
    // hold another mapping, even the reserved range): a failed duplicate, or
    // one of whatever lay there by then. Nothing of the range is pinned.
    if (!duplicated || vmas_over(lo, hi) != vmas) {
        p.release();
        return efault("the range was unmapped or remapped during registration", addr, size);
    }
    p.device_addr_ = uint64_t(uintptr_t(view)) + (addr - lo);
    return p;
}

}  // namespace mlx5async::emu
