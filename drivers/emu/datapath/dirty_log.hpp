// Dirty-page logging of one virtq (DIRTY_BITMAP_PARAMS + dump enable): every
// guest page the device writes is marked in the vhost log bitmap, one bit per
// 2^vhost_log_page bytes of guest physical address, bit (page % 8) of byte
// (page / 8) as vhost's own log (DPDK vhost_log_page), reached through
// dirty_bitmap_mkey.
#pragma once

#include <cstdint>

#include "common/prm/virtq.hpp"
#include "ring.hpp"

namespace mlx5async::emu::dp {

class DirtyLog {
public:
    DirtyLog(const Translator& tr, const prm::VirtqAttr& a);
    bool enabled() const { return enabled_; }
    // Marks the pages of [addr, addr + len); a page outside the bitmap or a
    // bitmap outside registered memory sets failed().
    void mark(uint64_t addr, size_t len);
    bool failed() const { return failed_; }
    uint64_t marked() const { return marked_; }

private:
    const Translator& tr_;
    bool enabled_;
    uint32_t mkey_;
    uint64_t base_;
    uint64_t size_;
    uint8_t shift_;
    bool failed_ = false;
    uint64_t marked_ = 0;
};

}  // namespace mlx5async::emu::dp
