#include "split_ring.hpp"

#include <atomic>
#include <cstring>

#include "host_access.hpp"

namespace mlx5async::emu::dp {
namespace {

// virtio 1.x §2.7.6 / §2.7.8: flags(2) idx(2) ring[size] ...
constexpr uint64_t kIdxOff = 2;
constexpr uint64_t kRingOff = 4;
constexpr size_t kDescBytes = 16;
constexpr size_t kUsedElemBytes = 8;

}  // namespace

bool GuestMem::fault() const {
    if (faulted_) *faulted_ = true;
    return false;
}

bool GuestMem::read(uint64_t addr, void* dst, size_t len) const {
    auto spans = tr_(mkey_, addr, len);
    if (!spans) return false;
    auto* d = static_cast<std::byte*>(dst);
    for (const HostSpan& s : *spans) {
        if (!guarded_copy(d, s.host, s.len)) return fault();
        d += s.len;
    }
    return true;
}

bool GuestMem::write(uint64_t addr, const void* src, size_t len) const {
    auto spans = tr_(mkey_, addr, len);
    if (!spans) return false;
    auto* p = static_cast<const std::byte*>(src);
    for (const HostSpan& s : *spans) {
        if (!guarded_copy(s.host, p, s.len)) return fault();
        p += s.len;
    }
    if (on_write_ && *on_write_) (*on_write_)(addr, len);
    return true;
}

// Ring indexes are single 16-bit accesses: memcpy may split a 2-byte copy
// into two loads/stores (glibc does), and the other side would see a torn
// index. virtio §2.7: idx is naturally aligned.
namespace {
uint16_t* idx_ptr(const std::vector<HostSpan>& spans) {
    if (spans.size() != 1 || reinterpret_cast<uintptr_t>(spans[0].host) % 2) return nullptr;
    return reinterpret_cast<uint16_t*>(spans[0].host);
}
}  // namespace

std::optional<uint16_t> GuestMem::load_idx(uint64_t addr) const {
    auto spans = tr_(mkey_, addr, 2);
    uint16_t* p = spans ? idx_ptr(*spans) : nullptr;
    if (!p) return std::nullopt;
    // virtio: read avail->idx before the ring entries it publishes (acquire).
    uint16_t v = 0;
    if (!guarded([&] { v = std::atomic_ref<uint16_t>(*p).load(std::memory_order_acquire); })) {
        fault();
        return std::nullopt;
    }
    return v;
}

bool GuestMem::store_idx(uint64_t addr, uint16_t v) const {
    auto spans = tr_(mkey_, addr, 2);
    uint16_t* p = spans ? idx_ptr(*spans) : nullptr;
    if (!p) return false;
    // virtio §2.7.8: used elements are visible before used->idx moves (release).
    if (!guarded([&] { std::atomic_ref<uint16_t>(*p).store(v, std::memory_order_release); }))
        return fault();
    if (on_write_ && *on_write_) (*on_write_)(addr, 2);
    return true;
}

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
        if (d->flags & kDescIndirect) {  // RING_INDIRECT_DESC is not offered
            err.error_type = error_type::kDescFlags;
            return std::nullopt;
        }
        // virtio §2.7.4.2: readable descriptors come before writable ones.
        if (!(d->flags & kDescWrite) && c.writable) {
            err.error_type = error_type::kDescFlags;
            return std::nullopt;
        }
        // The buffer must be inside registered memory (probe, no copy).
        if (!mem_.covers(d->addr, d->len)) {
            err.error_type = error_type::kBufferAddr;
            return std::nullopt;
        }
        c.descs.push_back(*d);
        (d->flags & kDescWrite ? c.writable : c.readable) += d->len;
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

bool SplitRing::gather(const Chain& c, std::vector<std::byte>& out) const {
    out.resize(c.readable);
    size_t off = 0;
    for (const Desc& d : c.descs) {
        if (d.flags & kDescWrite) break;
        if (d.len && !mem_.read(d.addr, out.data() + off, d.len)) return false;
        off += d.len;
    }
    return true;
}

bool SplitRing::scatter(const Chain& c, const std::byte* src, size_t len) const {
    for (const Desc& d : c.descs) {
        if (!(d.flags & kDescWrite) || !len) continue;
        size_t n = std::min<size_t>(d.len, len);
        if (!mem_.write(d.addr, src, n)) return false;
        src += n;
        len -= n;
    }
    return true;
}

}  // namespace mlx5async::emu::dp
