// The driver side of a virtio packed virtqueue (virtio 1.x 2.8): making
// chains available in the descriptor ring and taking back the used
// descriptors the device writes over them, in order. The one
// implementation for the emulator's packed-ring tests
// (tests/unit/emu/packed_ring_test.cpp). Guest memory is reached through
// `host(gpa, len)`; little-endian, as on x86. A chain is published by its
// first descriptor's flags (release), written after the others; a used
// descriptor is taken by its flags (acquire).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "split_ring_driver.hpp"

namespace vug {

// virtio 1.x 2.8.1 / 2.8.10.
inline constexpr uint16_t kPackedAvail = 1u << 7, kPackedUsed = 1u << 15;
inline constexpr uint16_t kEventEnable = 0, kEventDisable = 1;
inline constexpr uint16_t kWrapCounter = 1u << 15;  // a position's wrap bit (vhost's bases)

// One buffer of a chain: device-writable or readable.
struct PackedBuf {
    uint64_t addr;
    uint32_t len;
    bool writable;
};
struct PackedUsed {
    uint16_t id;
    uint32_t len;
};

class PackedRingDriver {
public:
    using HostFn = std::function<uint8_t*(uint64_t gpa, uint64_t len)>;

    PackedRingDriver(HostFn host, uint64_t desc, uint64_t driver_area, uint64_t device_area, uint16_t size)
        : host_(std::move(host)), desc_(desc), driver_(driver_area), device_(device_area), size_(size),
          ids_(size, 0) {}

    uint16_t size() const { return size_; }
    // The next available position and the next used one: slot | wrap << 15.
    uint16_t avail_pos() const { return pos(next_avail_, avail_wrap_); }
    uint16_t used_pos() const { return pos(next_used_, used_wrap_); }
    uint16_t in_flight() const { return in_flight_; }  // descriptors

    // An idle ring at position `p` (both counters), its descriptors as a
    // ring that has run up to there leaves them: none available.
    void set_position(uint16_t p) {
        next_avail_ = next_used_ = p & uint16_t(~kWrapCounter);
        avail_wrap_ = used_wrap_ = (p & kWrapCounter) != 0;
        in_flight_ = 0;
        for (uint16_t s = 0; s < size_; ++s) {
            // Before the position: used in this lap; from it on: used in the last.
            const bool w = s < next_avail_ ? avail_wrap_ : !avail_wrap_;
            flags(s).store(w ? uint16_t(kPackedAvail | kPackedUsed) : uint16_t(0), std::memory_order_relaxed);
        }
    }

    // Makes `bufs` available as one chain with buffer id `id`; false when
    // the ring has fewer free slots.
    bool add(std::span<const PackedBuf> bufs, uint16_t id) {
        if (bufs.empty() || bufs.size() > size_t(size_ - in_flight_)) return false;
        const uint16_t first = next_avail_;
        uint16_t first_flags = 0;
        for (size_t k = 0; k < bufs.size(); ++k) {
            uint16_t f = avail_wrap_ ? kPackedAvail : kPackedUsed;
            if (k + 1 < bufs.size()) f |= kDescNext;
            if (bufs[k].writable) f |= kDescWrite;
            uint8_t raw[14];
            std::memcpy(raw, &bufs[k].addr, 8);
            std::memcpy(raw + 8, &bufs[k].len, 4);
            std::memcpy(raw + 12, &id, 2);
            std::memcpy(host_(desc_ + 16ull * next_avail_, 14), raw, sizeof raw);
            if (k == 0)
                first_flags = f;
            else
                flags(next_avail_).store(f, std::memory_order_release);
            if (++next_avail_ == size_) next_avail_ = 0, avail_wrap_ = !avail_wrap_;
        }
        flags(first).store(first_flags, std::memory_order_release);
        ids_.at(id) = uint16_t(bufs.size());
        in_flight_ = uint16_t(in_flight_ + bufs.size());
        return true;
    }

    // The next used descriptor, or nullopt while the device has not used it.
    std::optional<PackedUsed> take_used() {
        if (!in_flight_) return std::nullopt;
        const uint16_t f = flags(next_used_).load(std::memory_order_acquire);
        const bool a = f & kPackedAvail, u = f & kPackedUsed;
        if (a != used_wrap_ || u != used_wrap_) return std::nullopt;
        PackedUsed e{};
        std::memcpy(&e.len, host_(desc_ + 16ull * next_used_ + 8, 4), 4);
        std::memcpy(&e.id, host_(desc_ + 16ull * next_used_ + 12, 2), 2);
        const uint16_t n = ids_.at(e.id);
        for (uint16_t k = 0; k < n; ++k)
            if (++next_used_ == size_) next_used_ = 0, used_wrap_ = !used_wrap_;
        in_flight_ = uint16_t(in_flight_ - n);
        return e;
    }

    // The driver event suppression area's flags: whether the device may
    // send used-buffer notifications (seq_cst: paired with the device's
    // read after its used writes, 2.8.10).
    void set_events(uint16_t f) { idx(driver_ + 2).store(f, std::memory_order_seq_cst); }

private:
    static uint16_t pos(uint16_t slot, bool wrap) { return uint16_t(slot | (wrap ? kWrapCounter : 0)); }
    std::atomic_ref<uint16_t> idx(uint64_t gpa) const {
        return std::atomic_ref<uint16_t>(*reinterpret_cast<uint16_t*>(host_(gpa, 2)));
    }
    std::atomic_ref<uint16_t> flags(uint16_t slot) const { return idx(desc_ + 16ull * slot + 14); }

    HostFn host_;
    uint64_t desc_, driver_, device_;
    uint16_t size_;
    std::vector<uint16_t> ids_;  // descriptors of the chain with each buffer id
    uint16_t next_avail_ = 0, next_used_ = 0;
    bool avail_wrap_ = true, used_wrap_ = true;  // 2.8.1: both start at 1
    uint16_t in_flight_ = 0;
};

}  // namespace vug
