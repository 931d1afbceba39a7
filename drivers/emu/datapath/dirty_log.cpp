#include "dirty_log.hpp"

#include <atomic>

#include "host_access.hpp"

namespace mlx5async::emu::dp {

DirtyLog::DirtyLog(const Translator& tr, const prm::VirtqAttr& a)
    : tr_(tr),
      enabled_(a.dirty_bitmap_dump_enable),
      mkey_(a.dirty_bitmap_mkey),
      base_(a.dirty_bitmap_addr),
      size_(a.dirty_bitmap_size),
      shift_(a.vhost_log_page < 63 ? a.vhost_log_page : 63) {}

void DirtyLog::mark(uint64_t addr, size_t len) {
    if (!enabled_ || !len) return;
    for (uint64_t page = addr >> shift_; page <= (addr + len - 1) >> shift_; ++page) {
        uint64_t byte = page / 8;
        if (byte >= size_) {
            failed_ = true;
            continue;
        }
        auto spans = tr_(mkey_, base_ + byte, 1);
        if (!spans || spans->empty()) {
            failed_ = true;
            continue;
        }
        // The frontend reads (and clears) the log concurrently: atomic or.
        auto* b = reinterpret_cast<uint8_t*>(spans->front().host);
        const uint8_t bit = uint8_t(1u << (page % 8));
        if (!guarded_fetch_or(b, bit)) {
            failed_ = true;  // its file was truncated: the bit is lost
            continue;
        }
        ++marked_;
    }
}

}  // namespace mlx5async::emu::dp
