#include "ring.hpp"

#include <atomic>
#include <cstring>

#include "host_access.hpp"

namespace mlx5async::emu::dp {

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

bool Ring::take(Chain& c, const Desc& d, RingError& err) const {
    if (d.flags & kDescIndirect) {  // RING_INDIRECT_DESC is not offered
        err.error_type = error_type::kDescFlags;
        return false;
    }
    // virtio §2.7.4.2 / §2.8.3: readable descriptors come before writable ones.
    if (!(d.flags & kDescWrite) && c.writable) {
        err.error_type = error_type::kDescFlags;
        return false;
    }
    // The buffer must be inside registered memory (probe, no copy).
    if (!mem_.covers(d.addr, d.len)) {
        err.error_type = error_type::kBufferAddr;
        return false;
    }
    c.descs.push_back(d);
    (d.flags & kDescWrite ? c.writable : c.readable) += d.len;
    return true;
}

bool Ring::gather(const Chain& c, std::vector<std::byte>& out) const {
    out.resize(c.readable);
    size_t off = 0;
    for (const Desc& d : c.descs) {
        if (d.flags & kDescWrite) break;
        if (d.len && !mem_.read(d.addr, out.data() + off, d.len)) return false;
        off += d.len;
    }
    return true;
}

bool Ring::scatter(const Chain& c, const std::byte* src, size_t len) const {
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
