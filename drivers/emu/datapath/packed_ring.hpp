// The emulated device's view of one virtio packed virtqueue (virtio 1.x
// §2.8): one descriptor ring the driver makes chains available in (AVAIL
// and USED flag bits against its wrap counter) and the device writes used
// descriptors back into, in order; the driver event suppression area
// (available_addr) and the device's (used_addr), 4 bytes each.
#pragma once

#include "ring.hpp"

namespace mlx5async::emu::dp {

// Packed descriptor flag bits (virtio 1.x §2.8.1).
inline constexpr uint16_t kDescAvail = 1u << 7, kDescUsed = 1u << 15;
// Driver event suppression flags (virtio 1.x §2.8.10): 1 = no events.
inline constexpr uint16_t kEventFlagsDisable = 1;
// A position's wrap counter (bit 15) beside its slot (bits 14..0).
inline constexpr uint16_t kWrapBit = 1u << 15;

class PackedRing final : public Ring {
public:
    PackedRing(const GuestMem& mem, uint64_t desc, uint64_t driver_area, uint64_t device_area, uint16_t size)
        : Ring(mem), desc_(desc), driver_(driver_area), device_(device_area), size_(size) {}

    bool reachable() const override;
    // A slot past the ring's size is kAvailIndex (a bad base).
    std::optional<Chain> available(uint16_t pos, RingError& err) const override;
    uint16_t after(uint16_t pos, uint16_t slots) const override;
    // Each entry's id and length first, then its flags (release), the
    // first entry's flags last: the driver sees the batch only whole.
    bool push_used(uint16_t used_pos, std::span<const UsedElem> elems) const override;

private:
    std::optional<Desc> read_desc(uint16_t slot, uint16_t& id) const;

    uint64_t desc_, driver_, device_;
    uint16_t size_;
};

}  // namespace mlx5async::emu::dp
