// The emulated device's view of one virtio split virtqueue (virtio 1.x
// §2.7): reads the avail ring and descriptor chains and writes used entries
// through a translator (virtq mkey -> umem -> host memory). Nothing here
// touches memory the translator did not hand out. DPDK-free, lock-free: the
// caller (datapath.cpp) serialises access per virtq.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "common/base/result.hpp"

namespace mlx5async::emu::dp {

// A run of host memory backing part of a guest range (emu::GuestSpan).
struct HostSpan {
    std::byte* host = nullptr;
    size_t len = 0;
};

// Guest address (of an mkey's address space) -> host spans covering exactly
// [addr, addr + len); an error when any byte is outside registered memory.
using Translator =
    std::function<Result<std::vector<HostSpan>>(uint32_t mkey, uint64_t addr, size_t len)>;

// Called for every range the device wrote (dirty logging, tests).
using WriteObserver = std::function<void(uint64_t addr, size_t len)>;

// error_type written into the virtq object when the device moves it to ERR
// (our values; the PRM leaves them device-specific). doc/emulator.md.
namespace error_type {
inline constexpr uint8_t kRingAddr = 0x01;    // desc/avail/used ring outside registered memory
inline constexpr uint8_t kBufferAddr = 0x02;  // a descriptor's buffer outside registered memory
inline constexpr uint8_t kChainLoop = 0x03;     // a chain returns to one of its descriptors
inline constexpr uint8_t kChainTooLong = 0x04;  // all queue_size descriptors used, still NEXT
inline constexpr uint8_t kDescIndex = 0x05;   // head or next index >= queue_size
inline constexpr uint8_t kAvailIndex = 0x06;  // avail idx more than queue_size ahead
inline constexpr uint8_t kDescFlags = 0x07;   // INDIRECT (not offered) or wrong direction
inline constexpr uint8_t kDirtyLog = 0x08;    // dirty bitmap outside registered memory, or gone (truncated)
inline constexpr uint8_t kNetHdr = 0x09;      // NEEDS_CSUM with csum_start/offset outside the packet
inline constexpr uint8_t kHostFault = 0x0a;   // registered memory gone from the host (file truncated)
}  // namespace error_type

// Guest memory through one mkey, with the observer told of every write.
// Every access is guarded (host_access.hpp): one that faults fails, and
// sets *faulted when given.
class GuestMem {
public:
    GuestMem(const Translator& tr, uint32_t mkey, const WriteObserver* on_write, bool* faulted = nullptr)
        : tr_(tr), mkey_(mkey), on_write_(on_write), faulted_(faulted) {}
    bool read(uint64_t addr, void* dst, size_t len) const;
    bool write(uint64_t addr, const void* src, size_t len) const;
    // Little-endian 16-bit ring index, read with acquire / written with release.
    std::optional<uint16_t> load_idx(uint64_t addr) const;
    bool store_idx(uint64_t addr, uint16_t v) const;
    // Whether [addr, addr + len) is inside registered memory (no access).
    bool covers(uint64_t addr, size_t len) const { return !len || tr_(mkey_, addr, len).has_value(); }
    uint32_t mkey() const { return mkey_; }

private:
    const Translator& tr_;
    uint32_t mkey_;
    const WriteObserver* on_write_;
    bool* faulted_;
    bool fault() const;  // records a faulted access; false
};

// virtio 1.x §2.7.5 struct virtq_desc.
struct Desc {
    uint64_t addr = 0;
    uint32_t len = 0;
    uint16_t flags = 0;
    uint16_t next = 0;
};
inline constexpr uint16_t kDescNext = 1, kDescWrite = 2, kDescIndirect = 4;

struct Chain {
    uint16_t head = 0;
    std::vector<Desc> descs;  // in chain order
    size_t readable = 0;      // bytes in device-readable descriptors
    size_t writable = 0;      // bytes in device-writable descriptors
};

// virtio 1.x §2.7.8 struct virtq_used_elem.
struct UsedElem {
    uint16_t id = 0;
    uint32_t len = 0;
};

struct RingError {
    uint8_t error_type = 0;
};

// One split ring: addresses and size from the virtq object.
class SplitRing {
public:
    SplitRing(const GuestMem& mem, uint64_t desc, uint64_t avail, uint64_t used, uint16_t size)
        : mem_(mem), desc_(desc), avail_(avail), used_(used), size_(size) {}

    // How many chains the driver made available past `last_avail`; an error
    // when the ring is unreachable or the index is more than size ahead.
    std::optional<uint16_t> pending(uint16_t last_avail, RingError& err) const;
    // The chain at avail slot `last_avail`, validated (addresses, loop,
    // length, index range). Reads only; nothing is consumed.
    std::optional<Chain> chain_at(uint16_t last_avail, RingError& err) const;
    // Writes the used elems from `used_idx` on, then (release) used->idx
    // past the last: the driver sees them all or none (a merged packet
    // whole, virtio 1.x §5.1.6.4.2).
    bool push_used(uint16_t used_idx, std::span<const UsedElem> elems) const;

    // Gathers the readable bytes of a chain; scatters into its writable part.
    bool gather(const Chain& c, std::vector<std::byte>& out) const;
    bool scatter(const Chain& c, const std::byte* src, size_t len) const;

    uint16_t size() const { return size_; }

private:
    std::optional<Desc> read_desc(uint16_t i) const;

    const GuestMem& mem_;
    uint64_t desc_, avail_, used_;
    uint16_t size_;
};

}  // namespace mlx5async::emu::dp
