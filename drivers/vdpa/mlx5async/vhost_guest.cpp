#include "vhost_guest.hpp"

#include <rte_vhost.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/base/steady_clock.hpp"

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

namespace mlx5async::pmd {
namespace {

// vhost gives ring addresses as pointers into this process; the device sees
// guest physical addresses.
Result<uint64_t> hva_to_gpa(const rte_vhost_memory& mem, const void* p, const char* what) {
    uint64_t hva = reinterpret_cast<uint64_t>(p);
    for (uint32_t i = 0; i < mem.nregions; i++) {
        const rte_vhost_mem_region& r = mem.regions[i];
        if (hva >= r.host_user_addr && hva < r.host_user_addr + r.size)
            return hva - r.host_user_addr + r.guest_phys_addr;
    }
    return fail(Errc::InvalidArgument, std::string(what) + " address is outside guest memory");
}

struct FreeMem {
    void operator()(rte_vhost_memory* m) const { std::free(m); }
};
using MemTable = std::unique_ptr<rte_vhost_memory, FreeMem>;

Result<MemTable> mem_table(int vid) {
    rte_vhost_memory* mem = nullptr;
    if (rte_vhost_get_mem_table(vid, &mem) != 0 || !mem)
        return fail(Errc::NotFound, "vhost " + std::to_string(vid) + ": no memory table");
    return MemTable(mem);
}

// Ring `i` as vhost holds it, in guest physical addresses; NotFound when
// the frontend has not set it up. A ring set up with addresses vhost could
// not map, or that lie outside the memory table, comes back `unusable`
// (the device refuses it by name; the others start).
// Whether the frontend negotiated packed rings (their bases carry the wrap
// counters in bit 15).
bool negotiated_packed(int vid) {
    uint64_t features = 0;
    return rte_vhost_get_negotiated_features(vid, &features) == 0 &&
           (features & (1ull << VIRTIO_F_RING_PACKED));
}

Result<core::VringConfig> vring_config(int vid, const rte_vhost_memory& mem, uint16_t i, bool packed) {
    rte_vhost_vring vr{};
    if (rte_vhost_get_vhost_vring(vid, i, &vr) != 0 || vr.size == 0)
        return fail(Errc::NotFound, "vring " + std::to_string(i) + " is not set up");
    core::VringConfig c;
    c.index = i;
    c.size = vr.size;
    rte_vhost_get_vring_base(vid, i, &c.last_avail_idx, &c.last_used_idx);
    c.packed = packed;
    c.kickfd = vr.kickfd;
    c.callfd = vr.callfd;
    if (!vr.desc || !vr.avail || !vr.used) {
        c.unusable = "vhost could not map its addresses into guest memory (desc, avail or used "
                     "lies outside the regions or runs past one's end)";
        return c;
    }
    auto d = hva_to_gpa(mem, vr.desc, "desc");
    auto a = hva_to_gpa(mem, vr.avail, "avail");
    auto u = hva_to_gpa(mem, vr.used, "used");
    for (const auto* r : {&d, &a, &u})
        if (!*r) {
            c.unusable = r->error().what;
            return c;
        }
    c.desc_gpa = *d;
    c.avail_gpa = *a;
    c.used_gpa = *u;
    return c;
}

}  // namespace

Result<core::VringConfig> read_vring_config(int vid, uint16_t ring) {
    auto mem = mem_table(vid);
    MLX5A_CHECK(mem);
    return vring_config(vid, **mem, ring, negotiated_packed(vid));
}

Result<core::GuestConfig> read_guest_config(int vid) {
    core::GuestConfig g;
    if (rte_vhost_get_negotiated_features(vid, &g.features) != 0)
        return fail(Errc::NotFound, "vhost " + std::to_string(vid) + ": no negotiated features");
    // Set by VHOST_USER_NET_SET_MTU with VIRTIO_NET_F_MTU negotiated; an
    // error (not negotiated, not set) leaves 0.
    if (uint16_t mtu = 0; rte_vhost_get_mtu(vid, &mtu) == 0) g.mtu = mtu;
    auto mem = mem_table(vid);
    MLX5A_CHECK(mem);
    for (uint32_t i = 0; i < (*mem)->nregions; i++) {
        const auto& r = (*mem)->regions[i];
        core::MemRegion m{r.guest_phys_addr, r.size, r.host_user_addr};
        struct stat st {};
        if (r.fd >= 0 && ::fstat(r.fd, &st) == 0) {
            m.file_dev = uint64_t(st.st_dev);
            m.file_ino = uint64_t(st.st_ino);
        }
        m.file_offset = r.host_user_addr - uint64_t(uintptr_t(r.mmap_addr));  // vhost maps from offset 0
        g.mem.push_back(m);
    }
    uint16_t n = rte_vhost_get_vring_num(vid);
    for (uint16_t i = 0; i < n; i++) {
        auto c = vring_config(vid, **mem, i, (g.features & (1ull << VIRTIO_F_RING_PACKED)) != 0);
        if (!c && c.error().code == Errc::NotFound) continue;  // not set up
        MLX5A_CHECK(c);
        g.vrings.push_back(*c);
    }
    return g;
}

namespace {

// Split-ring used ring: flags, idx, size x {id, len}, avail_event (virtio 2.7.8).
constexpr uint64_t used_ring_bytes(uint16_t size) { return 2 + 2 + 8ull * size + 2; }

// What the device writes of a ring besides the buffers, in guest physical
// addresses: a split ring's used ring (where vhost logs it), a packed
// ring's descriptor ring (the device writes used descriptors over it).
struct UsedArea {
    uint64_t gpa = 0, len = 0;
};

std::optional<UsedArea> used_area(int vid, const rte_vhost_memory* mem, bool packed, uint16_t ring) {
    rte_vhost_vring vr{};
    if (rte_vhost_get_vhost_vring(vid, ring, &vr) != 0 || !vr.size) return std::nullopt;
    if (!packed) return UsedArea{vr.log_guest_addr, used_ring_bytes(vr.size)};
    if (!mem || !vr.desc_packed) return std::nullopt;
    auto gpa = hva_to_gpa(*mem, vr.desc_packed, "desc");
    if (!gpa) return std::nullopt;
    return UsedArea{*gpa, 16ull * vr.size};
}

// The log bytes of each used area (vhost's layout: one bit per 4 KiB page
// of guest physical memory), as the hand-back will write them, can be
// written: the frontend may have cut the log's file short, and a write to
// a page past its end is SIGBUS in this process. Read through the kernel
// (process_vm_readv on ourselves), which answers EFAULT instead.
bool used_logs_backed(std::span<const UsedArea> areas, uint64_t base, uint64_t size) {
    if (!base) return false;
    std::vector<iovec> remote;
    for (const UsedArea& a : areas) {
        const uint64_t first = a.gpa / 4096 / 8;
        const uint64_t last = (a.gpa + a.len - 1) / 4096 / 8;
        if (last >= size) continue;  // past the log: vhost writes nothing there
        remote.push_back({reinterpret_cast<void*>(uintptr_t(base + first)), size_t(last - first + 1)});
    }
    size_t want = 0;
    for (const iovec& v : remote) want += v.iov_len;
    std::vector<uint8_t> sink(want);
    iovec local{sink.data(), sink.size()};
    return want == 0 || process_vm_readv(getpid(), &local, 1, remote.data(), remote.size(), 0) == ssize_t(want);
}

}  // namespace

HandBack hand_back_rings(int vid, std::span<const core::RingIndexes> rings, bool log_used) {
    HandBack h;
    int64_t t0 = steady_now_ns();
    for (const auto& r : rings)
        if (rte_vhost_set_vring_base(vid, r.ring, r.last_avail_idx, r.last_used_idx) == 0) h.rings++;
    int64_t t1 = steady_now_ns();
    std::vector<UsedArea> areas;
    if (log_used) {
        const bool packed = negotiated_packed(vid);
        MemTable mem;  // a packed ring's descriptor ring is found by address
        if (packed)
            if (auto m = mem_table(vid)) mem = std::move(*m);
        for (const auto& r : rings)
            if (auto a = used_area(vid, mem.get(), packed, r.ring)) areas.push_back(*a);
        uint64_t base = 0, size = 0;
        if (rte_vhost_get_log_base(vid, &base, &size) != 0 || !used_logs_backed(areas, base, size)) {
            log_used = false;
            h.log_unbacked = true;
        }
    }
    if (log_used) {
        for (const UsedArea& a : areas) {
            rte_vhost_log_write(vid, a.gpa, a.len);
            h.logged++;
        }
    }
    h.bases_ns = uint64_t(t1 - t0);
    h.log_ns = uint64_t(steady_now_ns() - t1);
    return h;
}

}  // namespace mlx5async::pmd
