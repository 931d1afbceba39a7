// The driver side of a virtio split virtqueue (virtio 1.x 2.7): writing
// descriptors, making chains available and reading what the device used.
// The one implementation for the test frontend (Ring, guest_mem.hpp) and
// the emulator's datapath tests (tests/unit/emu/guest_rings.hpp). Guest
// memory is reached through `host(gpa, len)`; the layout is little-endian,
// as on x86. The device reads avail and writes used concurrently: the
// indexes are single 16-bit atomic accesses (avail->idx published with
// release, used->idx read with acquire).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>

namespace vug {

// virtio 1.x 2.7.5 struct virtq_desc, 2.7.8 struct virtq_used_elem.
struct VringDesc {
    uint64_t addr;
    uint32_t len;
    uint16_t flags;
    uint16_t next;
};
struct UsedElem {
    uint32_t id;
    uint32_t len;
};
inline constexpr uint16_t kDescNext = 1, kDescWrite = 2;
// avail->flags: the driver asks for no used-buffer notification (2.7.7;
// honoured as is while VIRTIO_RING_F_EVENT_IDX is not negotiated).
inline constexpr uint16_t kAvailNoInterrupt = 1;

class SplitRingDriver {
public:
    using HostFn = std::function<uint8_t*(uint64_t gpa, uint64_t len)>;

    SplitRingDriver(HostFn host, uint64_t desc, uint64_t avail, uint64_t used, uint16_t size)
        : host_(std::move(host)), desc_(desc), avail_(avail), used_(used), size_(size) {}

    uint16_t size() const { return size_; }
    uint64_t desc_gpa() const { return desc_; }
    uint64_t avail_gpa() const { return avail_; }
    uint64_t used_gpa() const { return used_; }
    static uint64_t used_bytes(uint16_t size) { return 4 + 8ull * size + 2; }

    void write_desc(uint16_t id, const VringDesc& d) { std::memcpy(host_(desc_ + 16ull * id, 16), &d, sizeof d); }
    // Chain `head` in the next avail slot; the device sees it at publish().
    void push_avail(uint16_t head) {
        std::memcpy(host_(avail_ + 4 + 2ull * (next_avail_ % size_), 2), &head, 2);
        ++next_avail_;
    }
    // avail->idx = every chain pushed (release: the slots before the index).
    void publish() { idx(avail_ + 2).store(next_avail_, std::memory_order_release); }
    uint16_t next_avail() const { return next_avail_; }
    // An idle ring at `i`: avail->idx and used->idx in memory, and the driver's own.
    void set_indexes(uint16_t i) {
        next_avail_ = i;
        idx(avail_ + 2).store(i, std::memory_order_release);
        idx(used_ + 2).store(i, std::memory_order_release);
    }

    uint16_t avail_idx() const { return idx(avail_ + 2).load(std::memory_order_acquire); }
    uint16_t used_idx() const { return idx(used_ + 2).load(std::memory_order_acquire); }
    // Used element `i` (any index: taken modulo the size).
    UsedElem used_elem(uint16_t i) const {
        UsedElem e;
        std::memcpy(&e, host_(used_ + 4 + 8ull * (i % size_), 8), sizeof e);
        return e;
    }

    bool no_interrupt() const {
        return idx(avail_).load(std::memory_order_acquire) & kAvailNoInterrupt;
    }
    void set_no_interrupt(bool on) {
        auto flags = idx(avail_);
        uint16_t f = flags.load(std::memory_order_relaxed);
        f = on ? uint16_t(f | kAvailNoInterrupt) : uint16_t(f & ~kAvailNoInterrupt);
        // seq_cst: 2.7.7 pairs the driver's flag write with the device's
        // read after it publishes used idx (a full barrier on both sides).
        flags.store(f, std::memory_order_seq_cst);
    }

private:
    std::atomic_ref<uint16_t> idx(uint64_t gpa) const {
        return std::atomic_ref<uint16_t>(*reinterpret_cast<uint16_t*>(host_(gpa, 2)));
    }

    HostFn host_;
    uint64_t desc_, avail_, used_;
    uint16_t size_;
    uint16_t next_avail_ = 0;  // the driver's avail index, ahead of avail->idx until publish()
};

}  // namespace vug
