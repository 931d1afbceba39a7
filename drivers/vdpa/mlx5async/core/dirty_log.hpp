// The dirty log (VHOST_F_LOG_ALL): whether the device logs the pages it
// writes, into which vhost log (a bitmap in guest-shared memory, one bit per
// page of 2^log_page bytes), through which registration (a umem over vhost's
// mapping and a direct mkey, as DPDK's mlx5_vdpa_dirty_bitmap_set), and the
// earlier registrations some virtq may still name. Touched on the device's
// strand only; readers take the strand's snapshot.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/base/result.hpp"
#include "common/prm/virtq.hpp"
#include "guest_memory.hpp"

namespace mlx5async::core {

struct DirtyLog {
    uint64_t host_addr = 0;
    uint64_t size = 0;
    uint8_t log_page = 12;
};

// The log has a bit for every page of the table: a page the device writes
// past its end would be logged nowhere (vhost drops such bits; the device
// would fail the queue). InvalidArgument naming both ends otherwise.
Result<void> check_log_covers(const DirtyLog& log, const std::vector<MemRegion>& table);

// A virtq's attributes once it names no log: the bitmap parameters zeroed
// and the dump off, both selected for the MODIFY.
void name_no_log(prm::VirtqAttr& a);

class DirtyLogging {
public:
    DirtyLogging(GuestMemory& mkeys, const devx::Context& ctx, uint32_t pdn)
        : mkeys_(mkeys), ctx_(ctx), pdn_(pdn) {}

    bool on() const { return on_; }
    const DirtyLog& log() const { return log_; }
    uint32_t mkey() const { return mem_.mkey; }
    // The registered log is `log` (address, size, page).
    bool registered(const DirtyLog& log) const;

    // Logging on into `log`: registered anew unless it is the registered
    // one (vhost maps the log anew at every SET_LOG_BASE and unmaps the
    // previous mapping), the previous registration retired. Off keeps the
    // registration until the virtqs stop naming it. A failed registration
    // leaves what it made in `failed` (its mkey's CREATE may still be
    // unanswered, naming the umem): Device::Impl::release_failed's.
    Result<void> turn_on(const DirtyLog& log, MemRegistration& failed);
    void turn_off() { on_ = false; }
    // The frontend left: off, and its log's registration retired.
    void forget();

    // Retired registrations no virtq names (`named(mkey)` false), taken out.
    template <typename Named>
    std::vector<MemRegistration> take_unnamed(Named named) {
        return core::take_unnamed(retired_, named);
    }
    bool has_retired() const { return !retired_.empty(); }
    void reset() {  // the device closes
        retired_.clear();
        mem_ = {};
    }

private:
    GuestMemory& mkeys_;  // creates the log's mkey
    const devx::Context& ctx_;
    uint32_t pdn_;
    bool on_ = false;
    DirtyLog log_;
    MemRegistration mem_;                   // the vhost log as umem + mkey: dirty_bitmap_mkey
    std::vector<MemRegistration> retired_;  // earlier logs some virtq may still name
};

}  // namespace mlx5async::core
