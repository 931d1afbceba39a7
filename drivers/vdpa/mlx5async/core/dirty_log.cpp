#include "dirty_log.hpp"

#include <algorithm>
#include <cstdio>

#include "common/prm/mkey.hpp"

namespace mlx5async::core {

Result<void> check_log_covers(const DirtyLog& log, const std::vector<MemRegion>& table) {
    uint64_t end = 0;
    for (const MemRegion& r : table) end = std::max(end, r.guest_phys_addr + r.size);
    const uint64_t covered = log.log_page < 61 ? (log.size * 8) << log.log_page : UINT64_MAX;
    if (end <= covered) return {};
    char b[160];
    std::snprintf(b, sizeof b,
                  "the vhost log (%llu bytes) covers guest memory up to 0x%llx; the memory table "
                  "reaches 0x%llx",
                  static_cast<unsigned long long>(log.size), static_cast<unsigned long long>(covered),
                  static_cast<unsigned long long>(end));
    return fail(Errc::InvalidArgument, b);
}

bool DirtyLogging::registered(const DirtyLog& log) const {
    const auto& lr = mem_.regions;
    return !lr.empty() && lr[0].host_addr == log.host_addr && lr[0].size == log.size &&
           log_.log_page == log.log_page;
}

// A umem over vhost's mapping of the log and a direct mkey addressed by its
// host address (the virtqs' dirty_bitmap_addr).
Result<void> DirtyLogging::turn_on(const DirtyLog& log, MemRegistration& failed) {
    if (!registered(log)) {
        MemRegistration reg;
        reg.regions = {MemRegion{log.host_addr, log.size, log.host_addr}};
        auto u = devx::Umem::reg_existing(ctx_, reinterpret_cast<void*>(uintptr_t(log.host_addr)), log.size);
        MLX5A_CHECK(u);
        reg.umems.push_back(std::move(*u));
        devx::DevxObj obj;
        auto mk = mkeys_.create_mkey(
            prm::direct_mkey_attr(reg.umems.back().id(), 0, log.host_addr, log.size, pdn_), obj,
            BatchKind::DirtyLog);
        if (!mk) {
            failed = std::move(reg);
            return unexpected(mk.error());
        }
        reg.direct.push_back(std::move(obj));
        reg.mkey = *mk;
        if (!mem_.empty()) retired_.push_back(std::move(mem_));
        mem_ = std::move(reg);
    }
    on_ = true;
    log_ = log;
    return {};
}

void name_no_log(prm::VirtqAttr& a) {
    a.dirty_bitmap_mkey = 0;
    a.dirty_bitmap_addr = 0;
    a.dirty_bitmap_size = 0;
    a.dirty_bitmap_dump_enable = false;
    a.modify_field_select |= prm::modify_bits::DIRTY_BITMAP_PARAMS | prm::modify_bits::DIRTY_BITMAP_DUMP_ENABLE;
}

void DirtyLogging::forget() {
    on_ = false;
    if (!mem_.empty()) retired_.push_back(std::move(mem_));
    mem_ = {};
}

}  // namespace mlx5async::core
