#include "guest_memory.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "common/prm/status.hpp"
#include "syndrome.hpp"

namespace mlx5async::emu {
namespace {

Unexpected<Error> outside(const char* why, uint32_t mkey, uint64_t addr, size_t len) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s: mkey 0x%x [0x%llx, +0x%zx)", why, mkey,
                  static_cast<unsigned long long>(addr), len);
    return fail(Errc::NotFound, buf);
}

// A direct mkey: [addr, addr+len) lies inside [m.start, m.start+m.len).
Result<GuestSpan> direct_span(const DeviceState& st, const MkeyObj& m, uint32_t mkey,
                              uint64_t addr, size_t len) {
    if (addr < m.start || addr - m.start > m.len || len > m.len - (addr - m.start))
        return outside("outside the mkey", mkey, addr, len);
    auto u = st.umems.find(m.umem_id);
    if (!u) return outside("umem gone", mkey, addr, len);  // pinned: not expected
    uint64_t host = u->host(m.umem_offset + (addr - m.start));
    return GuestSpan{reinterpret_cast<std::byte*>(uintptr_t(host)), len};
}

}  // namespace

const MkeyObj* find_mkey(const DeviceState& st, uint32_t mkey) {
    auto m = st.mkeys.find(prm::mkey_index_of(mkey));
    if (!m || m->key != (mkey & 0xff)) return nullptr;
    return &*m;
}

MkeyObj* find_mkey(DeviceState& st, uint32_t mkey) {
    return const_cast<MkeyObj*>(find_mkey(std::as_const(st), mkey));
}

Result<std::vector<GuestSpan>> translate(const DeviceState& st, uint32_t mkey, uint64_t addr,
                                         size_t len) {
    if (len == 0) return fail(Errc::InvalidArgument, "translate: zero length");
    if (addr + len < addr) return fail(Errc::InvalidArgument, "translate: range wraps around");
    const MkeyObj* m = find_mkey(st, mkey);
    if (!m) return outside("unknown mkey", mkey, addr, len);
    if (addr < m->start || addr + len > m->start + m->len)
        return outside("outside the mkey", mkey, addr, len);
    std::vector<GuestSpan> spans;
    if (!m->indirect) {
        auto s = direct_span(st, *m, mkey, addr, len);
        if (!s) return unexpected(s.error());
        spans.push_back(*s);
        return spans;
    }
    // KLM: entry i covers [cursor, cursor + byte_count) of the indirect range.
    const uint64_t end = addr + len;
    uint64_t cursor = m->start;
    for (const prm::KlmEntry& e : m->klm) {
        uint64_t lo = std::max(addr, cursor), hi = std::min(end, cursor + e.byte_count);
        if (lo < hi) {
            if (e.mkey == kNullMkey) return outside("hole (null mkey)", mkey, lo, hi - lo);
            const MkeyObj* d = find_mkey(st, e.mkey);
            if (!d) return outside("KLM entry mkey gone", e.mkey, lo, hi - lo);  // pinned
            auto s = direct_span(st, *d, e.mkey, e.address + (lo - cursor), hi - lo);
            if (!s) return unexpected(s.error());
            if (!spans.empty() && spans.back().host + spans.back().len == s->host)
                spans.back().len += s->len;  // contiguous in host memory
            else
                spans.push_back(*s);
        }
        cursor += e.byte_count;
        if (cursor >= end) break;
    }
    return spans;
}

Result<void> check_virtq_rings(const DeviceState& st, const prm::VirtqAttr& a) {
    if (!find_mkey(st, a.virtio_q_mkey))
        return fw_fail(prm::Status::BAD_PARAM_ERR, syndrome::kVirtqMkeyUnknown,
                       "virtio_q_mkey unknown");
    const uint64_t n = a.queue_size;
    const bool packed = a.virtio_q_type == prm::VirtqType::PACKED;
    struct Area {
        uint64_t addr, bytes;
        const char* name;
    };
    const Area areas[] = {
        {a.desc_addr, 16 * n, "desc"},
        {a.available_addr, packed ? 4 : 6 + 2 * n, "available"},
        {a.used_addr, packed ? 4 : 6 + 8 * n, "used"},
    };
    for (uint32_t i = 0; i < 3; ++i) {
        auto t = translate(st, a.virtio_q_mkey, areas[i].addr, size_t(areas[i].bytes));
        if (!t)
            return fw_fail(prm::Status::BAD_PARAM_ERR, syndrome::kVirtqRingUntranslated + i,
                           std::string(areas[i].name) + " ring not in guest memory: " +
                               t.error().what);
    }
    return {};
}

}  // namespace mlx5async::emu
