// The emulated device's view of one virtio split virtqueue (virtio 1.x
// §2.7): the avail ring names descriptor chains of the descriptor table, the
// used ring gets their entries and a used idx.
#pragma once

#include "ring.hpp"

namespace mlx5async::emu::dp {

// One split ring: addresses and size from the virtq object.
class SplitRing final : public Ring {
public:
    SplitRing(const GuestMem& mem, uint64_t desc, uint64_t avail, uint64_t used, uint16_t size)
        : Ring(mem), desc_(desc), avail_(avail), used_(used), size_(size) {}

    bool reachable() const override;
    std::optional<Chain> available(uint16_t pos, RingError& err) const override;
    uint16_t after(uint16_t pos, uint16_t) const override { return uint16_t(pos + 1); }
    bool push_used(uint16_t used_idx, std::span<const UsedElem> elems) const override;
    uint16_t size() const { return size_; }

private:
    // How many chains the driver made available past `last_avail`; an error
    // when the ring is unreachable or the index is more than size ahead.
    std::optional<uint16_t> pending(uint16_t last_avail, RingError& err) const;
    // The chain at avail slot `last_avail`, validated (addresses, loop,
    // length, index range). Reads only; nothing is consumed.
    std::optional<Chain> chain_at(uint16_t last_avail, RingError& err) const;
    std::optional<Desc> read_desc(uint16_t i) const;

    uint64_t desc_, avail_, used_;
    uint16_t size_;
};

}  // namespace mlx5async::emu::dp
