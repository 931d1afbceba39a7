#include "split_ring.hpp"

#include <cstring>

namespace mlx5async::emu::dp {
namespace {

// virtio 1.x §2.7.6 / §2.7.8: flags(2) idx(2) ring[size] ...
constexpr uint64_t kIdxOff = 2;
constexpr uint64_t kRingOff = 4;
constexpr size_t kDescBytes = 16;
constexpr size_t kUsedElemBytes = 8;

}  // namespace

std::optional<uint16_t> SplitRing::pending(uint16_t last_avail, RingError& err) const {
    auto idx = mem_.load_idx(avail_ + kIdxOff);
    if (!idx) {
        err.error_type = error_type::kRingAddr;
        return std::nullopt;
    }
    uint16_t n = uint16_t(*idx - last_avail);
    if (n > size_) {  // virtio §2.7.13.3: the driver never runs more than size ahead
        err.error_type = error_type::kAvailIndex;
        return std::nullopt;
    }
    return n;
}

std::optional<Desc> SplitRing::read_desc(uint16_t i) const {
    uint8_t raw[kDescBytes];
    if (!mem_.read(desc_ + uint64_t(i) * kDescBytes, raw, sizeof raw)) return std::nullopt;
    Desc d;
    std::memcpy(&d.addr, raw, 8);
    std::memcpy(&d.len, raw + 8, 4);
    std::memcpy(&d.flags, raw + 12, 2);
    std::memcpy(&d.next, raw + 14, 2);
    return d;
}

std::optional<Chain> SplitRing::chain_at(uint16_t last_avail, RingError& err) const {
    uint16_t head;
    if (!mem_.read(avail_ + kRingOff + 2ull * (last_avail % size_), &head, 2)) {
        err.error_type = error_type::kRingAddr;
        return std::nullopt;
    }
    Chain c;
    c.head = head;
    std::vector<bool> seen(size_, false);
    uint16_t i = head;
    for (;;) {
        if (i >= size_) {
            err.error_type = error_type::kDescIndex;
            return std::nullopt;
        }
        if (seen[i]) {  // virtio §2.7.5.2: chains do not loop
            err.error_type = error_type::kChainLoop;
            return std::nullopt;
        }
        seen[i] = true;
        auto d = read_desc(i);
        if (!d) {
            err.error_type = error_type::kRingAddr;
            return std::nullopt;
        }
        if (!take(c, *d, err)) return std::nullopt;
        if (!(d->flags & kDescNext)) break;
        // Every descriptor of the table used and still NEXT: longer than
        // the queue (vringh calls it a loop; we count it as exceed_max_chain).
        if (c.descs.size() == size_) {
            err.error_type = error_type::kChainTooLong;
            return std::nullopt;
        }
        i = d->next;
    }
    return c;
}

bool SplitRing::push_used(uint16_t used_idx, std::span<const UsedElem> elems) const {
    for (const UsedElem& e : elems) {
        uint8_t raw[kUsedElemBytes];
        const uint32_t id32 = e.id;
        std::memcpy(raw, &id32, 4);
        std::memcpy(raw + 4, &e.len, 4);
        if (!mem_.write(used_ + kRingOff + kUsedElemBytes * (used_idx % size_), raw, sizeof raw))
            return false;
        ++used_idx;
    }
    return mem_.store_idx(used_ + kIdxOff, used_idx);
}

bool SplitRing::reachable() const {
    return mem_.covers(desc_, kDescBytes * size_) && mem_.covers(avail_, kRingOff + 2ull * size_ + 2) &&
           mem_.covers(used_, kRingOff + kUsedElemBytes * size_ + 2);
}

std::optional<Chain> SplitRing::available(uint16_t pos, RingError& err) const {
    auto n = pending(pos, err);
    if (!n || *n == 0) return std::nullopt;
    return chain_at(pos, err);
}

}  // namespace mlx5async::emu::dp
