#include "packed_ring.hpp"

#include <cstring>

namespace mlx5async::emu::dp {
namespace {

// virtio 1.x §2.8.13 struct pvirtq_desc: addr(8) len(4) id(2) flags(2).
constexpr size_t kDescBytes = 16;
constexpr uint64_t kLenOff = 8, kFlagsOff = 14;
constexpr size_t kEventBytes = 4;  // struct pvirtq_event_suppress

uint16_t slot_of(uint16_t pos) { return pos & uint16_t(~kWrapBit); }
bool wrap_of(uint16_t pos) { return (pos & kWrapBit) != 0; }

// virtio 1.x §2.8.1: available when AVAIL matches the driver's wrap
// counter and USED does not.
bool is_available(uint16_t flags, bool wrap) {
    return ((flags & kDescAvail) != 0) == wrap && ((flags & kDescUsed) != 0) != wrap;
}

}  // namespace

bool PackedRing::reachable() const {
    return mem_.covers(desc_, kDescBytes * size_) && mem_.covers(driver_, kEventBytes) &&
           mem_.covers(device_, kEventBytes);
}

std::optional<Desc> PackedRing::read_desc(uint16_t slot, uint16_t& id) const {
    uint8_t raw[kDescBytes];
    if (!mem_.read(desc_ + uint64_t(slot) * kDescBytes, raw, sizeof raw)) return std::nullopt;
    Desc d;
    std::memcpy(&d.addr, raw, 8);
    std::memcpy(&d.len, raw + 8, 4);
    std::memcpy(&id, raw + 12, 2);
    std::memcpy(&d.flags, raw + 14, 2);
    return d;
}

std::optional<Chain> PackedRing::available(uint16_t pos, RingError& err) const {
    uint16_t slot = slot_of(pos);
    if (slot >= size_) {
        err.error_type = error_type::kAvailIndex;
        return std::nullopt;
    }
    // The first descriptor's flags publish the chain (acquire before the rest).
    auto flags = mem_.load_idx(desc_ + uint64_t(slot) * kDescBytes + kFlagsOff);
    if (!flags) {
        err.error_type = error_type::kRingAddr;
        return std::nullopt;
    }
    if (!is_available(*flags, wrap_of(pos))) return std::nullopt;
    Chain c;
    c.slots = 0;
    for (;;) {
        uint16_t id = 0;
        auto d = read_desc(slot, id);
        if (!d) {
            err.error_type = error_type::kRingAddr;
            return std::nullopt;
        }
        if (!c.slots) d->flags = *flags;  // the value that published it
        if (!take(c, *d, err)) return std::nullopt;
        ++c.slots;
        c.head = id;  // §2.8.6: the buffer id is the last descriptor's
        if (!(d->flags & kDescNext)) break;
        // Every slot of the ring taken and still NEXT (exceed_max_chain).
        if (c.slots == size_) {
            err.error_type = error_type::kChainTooLong;
            return std::nullopt;
        }
        slot = slot + 1 == size_ ? 0 : uint16_t(slot + 1);
    }
    return c;
}

uint16_t PackedRing::after(uint16_t pos, uint16_t slots) const {
    uint32_t slot = slot_of(pos) + uint32_t(slots);
    bool wrap = wrap_of(pos);
    while (size_ && slot >= size_) {
        slot -= size_;
        wrap = !wrap;
    }
    return uint16_t(slot | (wrap ? kWrapBit : 0));
}

bool PackedRing::push_used(uint16_t used_pos, std::span<const UsedElem> elems) const {
    // §2.8.2: a used descriptor has AVAIL and USED equal to the device's
    // wrap counter; WRITE when the device wrote into the buffer.
    auto publish = [&](uint16_t pos, const UsedElem& e) {
        uint16_t f = wrap_of(pos) ? uint16_t(kDescAvail | kDescUsed) : uint16_t(0);
        if (e.len) f |= kDescWrite;
        return mem_.store_idx(desc_ + uint64_t(slot_of(pos)) * kDescBytes + kFlagsOff, f);
    };
    uint16_t pos = used_pos;
    for (const UsedElem& e : elems) {
        if (slot_of(pos) >= size_) return false;
        uint8_t raw[6];
        std::memcpy(raw, &e.len, 4);
        std::memcpy(raw + 4, &e.id, 2);
        if (!mem_.write(desc_ + uint64_t(slot_of(pos)) * kDescBytes + kLenOff, raw, sizeof raw)) return false;
        pos = after(pos, e.slots);
    }
    if (elems.empty()) return true;
    pos = after(used_pos, elems[0].slots);
    for (size_t k = 1; k < elems.size(); pos = after(pos, elems[k].slots), ++k)
        if (!publish(pos, elems[k])) return false;
    return publish(used_pos, elems[0]);
}

}  // namespace mlx5async::emu::dp
