// What the emulated device's two ring layouts share (virtio 1.x §2.7 split,
// §2.8 packed): guest memory reached through a translator (virtq mkey ->
// umem -> host memory), descriptor chains, used entries, and the Ring
// interface the loopback walks either layout through. Nothing here touches
// memory the translator did not hand out. DPDK-free, lock-free: the caller
// (datapath.cpp) serialises access per virtq.
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
inline constexpr uint8_t kAvailIndex = 0x06;  // avail idx more than queue_size ahead (packed: past the ring)
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
    uint16_t head = 0;        // split: head index; packed: buffer id
    uint16_t slots = 1;       // ring slots it takes (packed: one per descriptor)
    std::vector<Desc> descs;  // in chain order
    size_t readable = 0;      // bytes in device-readable descriptors
    size_t writable = 0;      // bytes in device-writable descriptors
};

// virtio 1.x §2.7.8 struct virtq_used_elem.
struct UsedElem {
    uint16_t id = 0;
    uint32_t len = 0;
    uint16_t slots = 1;  // the chain's (packed: the used position skips them)
};

struct RingError {
    uint8_t error_type = 0;
};

// One virtq's ring as the loopback walks it. A position is the virtq's
// hw_available_index / hw_used_index or one after() gave from it: split, a
// free-running 16-bit index; packed, the slot in bits 14..0 and the wrap
// counter in bit 15 (as vhost's bases carry it).
class Ring {
public:
    explicit Ring(const GuestMem& mem) : mem_(mem) {}
    virtual ~Ring() = default;

    // Whether the ring's areas lie inside registered memory.
    virtual bool reachable() const = 0;
    // The chain the driver made available at `pos`, validated (addresses,
    // loop, length, index range); nullopt when there is none (err unset)
    // or on an error (err set). Reads only; nothing is consumed.
    virtual std::optional<Chain> available(uint16_t pos, RingError& err) const = 0;
    // The position past `slots` ring slots from `pos`.
    virtual uint16_t after(uint16_t pos, uint16_t slots) const = 0;
    // Writes the used entries from `used_pos` on so that the driver sees
    // them all or none (a merged packet whole, virtio 1.x §5.1.6.4.2).
    virtual bool push_used(uint16_t used_pos, std::span<const UsedElem> elems) const = 0;

    // Gathers the readable bytes of a chain; scatters into its writable part.
    bool gather(const Chain& c, std::vector<std::byte>& out) const;
    bool scatter(const Chain& c, const std::byte* src, size_t len) const;

protected:
    // Checks one descriptor of a chain being built and appends it.
    bool take(Chain& c, const Desc& d, RingError& err) const;

    const GuestMem& mem_;
};

}  // namespace mlx5async::emu::dp
