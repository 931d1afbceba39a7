// What a vhost-user frontend hands the driver at dev_conf: a memory table
// (SET_MEM_TABLE) and rings (SET_VRING_ADDR/NUM). validate_table and
// validate_vring accept or refuse any of them in bounded time, and what they
// accept is something the device can register and run: regions aligned, in
// order, not overlapping, within the KLM limit; every ring area inside
// guest memory.
// Input: a ring (size 2 bytes, desc/avail/used gpa 8 bytes each), then up to
// 64 regions of 24 bytes (gpa, size, host address; little endian).
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_check.hpp"
#include "vdpa/mlx5async/core/guest_memory.hpp"

namespace core = mlx5async::core;

namespace {

template <typename T>
T take(const uint8_t*& p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
    return v;
}

bool in_some_region(const std::vector<core::MemRegion>& t, uint64_t gpa) {
    for (const auto& r : t)
        if (gpa >= r.guest_phys_addr && gpa - r.guest_phys_addr < r.size) return true;
    return false;
}

// Independent of validate_vring's walk: the area's first and last byte,
// and every region boundary inside it, are guest memory.
bool area_in_memory(const std::vector<core::MemRegion>& t, uint64_t gpa, uint64_t len) {
    if (!in_some_region(t, gpa) || !in_some_region(t, gpa + len - 1)) return false;
    for (const auto& r : t) {
        uint64_t end = r.guest_phys_addr + r.size;
        if (end > gpa && end < gpa + len && !in_some_region(t, end)) return false;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    constexpr size_t kRing = 2 + 3 * 8, kRegion = 24;
    if (size < kRing) return 0;
    const uint8_t* p = data;
    core::VringConfig v;
    v.index = 1;
    v.size = take<uint16_t>(p);
    v.desc_gpa = take<uint64_t>(p);
    v.avail_gpa = take<uint64_t>(p);
    v.used_gpa = take<uint64_t>(p);
    std::vector<core::MemRegion> table;
    for (size_t left = size - kRing; left >= kRegion && table.size() < 64; left -= kRegion) {
        core::MemRegion r;
        r.guest_phys_addr = take<uint64_t>(p);
        r.size = take<uint64_t>(p);
        r.host_addr = take<uint64_t>(p);
        table.push_back(r);
    }
    auto sorted = core::sorted_regions(table);
    auto ok = core::validate_table(sorted);
    if (!ok) {
        FUZZ_CHECK(ok.error().what.find("memory table refused") != std::string::npos,
                   "a refused table's message does not say so");
        return 0;
    }
    for (size_t i = 0; i < sorted.size(); i++) {
        const auto& r = sorted[i];
        FUZZ_CHECK((r.guest_phys_addr | r.host_addr | r.size) % 4096 == 0, "accepted an unaligned region");
        FUZZ_CHECK(r.guest_phys_addr + r.size > r.guest_phys_addr, "accepted a wrapping region");
        if (i) FUZZ_CHECK(sorted[i - 1].guest_phys_addr + sorted[i - 1].size <= r.guest_phys_addr,
                          "accepted overlapping regions");
    }
    auto ring = core::validate_vring(v, sorted);
    if (!ring) {
        FUZZ_CHECK(ring.error().what.find("vring 1 refused") != std::string::npos,
                   "a refused ring's message does not name it");
        return 0;
    }
    FUZZ_CHECK(v.size && v.size <= 32768 && !(v.size & (v.size - 1)), "accepted a ring size");
    FUZZ_CHECK(v.desc_gpa % 16 == 0 && v.avail_gpa % 2 == 0 && v.used_gpa % 4 == 0,
               "accepted a misaligned ring");
    if (!sorted.empty()) {
        FUZZ_CHECK(area_in_memory(sorted, v.desc_gpa, 16ull * v.size), "descriptors outside memory");
        FUZZ_CHECK(area_in_memory(sorted, v.avail_gpa, 6 + 2ull * v.size), "avail ring outside memory");
        FUZZ_CHECK(area_in_memory(sorted, v.used_gpa, 6 + 8ull * v.size), "used ring outside memory");
    }
    return 0;
}
