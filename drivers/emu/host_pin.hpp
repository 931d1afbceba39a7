// What a umem registration does to host memory, as the kernel's
// ib_umem_get() does when it pins the pages:
// - every page of the range must be mapped, readable, and writable when the
//   device may write it (EFAULT otherwise, as get_user_pages);
// - a file-backed page must lie inside its file (the kernel cannot pin a
//   page past EOF: EFAULT, where an access would be SIGBUS);
// - the pages stay reachable by the device until deregistration, even when
//   the process unmaps or remaps its view (vhost unmaps the previous log at
//   every SET_LOG_BASE; the device must never fault on it).
// Shared mappings (memfd, shm, MAP_SHARED files: what vhost-user hands
// over) get a view of the emulator's own over the same pages (mremap with
// old_size 0), so nothing is read or touched at registration, however large.
// Private mappings (the driver's own buffers) and hugetlbfs cannot be
// duplicated: they are used in place, and the registering process keeps
// them mapped. A range unmapped or replaced while it is being registered is
// EFAULT, as get_user_pages on a vanished page: never used in place.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/base/result.hpp"

namespace mlx5async::emu {

class HostPin {
public:
    // [addr, addr + size) pinned, or an errno-style Error (EFAULT, ENOMEM).
    // `shared_page`: the page size a shared file mapping not on hugetlbfs is
    // counted in (0: the kernel's; larger: as if on hugepages of that size,
    // the cost model's view of a hugepage-backed guest in benchmarks).
    static Result<HostPin> pin(uint64_t addr, uint64_t size, bool writable, uint64_t shared_page = 0);

    HostPin() = default;
    HostPin(HostPin&& o) noexcept { *this = static_cast<HostPin&&>(o); }
    HostPin& operator=(HostPin&& o) noexcept;
    HostPin(const HostPin&) = delete;
    HostPin& operator=(const HostPin&) = delete;
    ~HostPin() { release(); }

    // Where the device reaches registered byte `addr` (the caller's address
    // for memory used in place).
    uint64_t device_addr() const { return device_addr_; }
    // Whether the device holds its own view (false: used in place).
    bool own_view() const { return view_ != nullptr; }
    // Pages of the backing page size the range spans (what the kernel pins
    // and what the umem's MTT lists): huge pages for hugetlbfs, else 4 KiB
    // (or `shared_page`).
    uint64_t pages() const { return pages_; }

private:
    void release() noexcept;

    uint64_t device_addr_ = 0;
    void* view_ = nullptr;  // the emulator's mapping (page-aligned), or null
    size_t view_len_ = 0;
    uint64_t pages_ = 0;
};

}  // namespace mlx5async::emu
