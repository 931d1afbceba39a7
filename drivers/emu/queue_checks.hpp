// Checks the queue commands share (CREATE_CQ, CREATE_QP, CREATE_SQ): what
// a queue names must be this context's, and the bytes it lives in must lie
// inside a umem of it, aligned for the device's atomic accesses. Called by
// handlers with DeviceState::mu held.
#pragma once

#include <cstdint>
#include <string>

#include "common/prm/status.hpp"
#include "state.hpp"

namespace mlx5async::emu {

inline Unexpected<Error> bad_param(uint32_t syn, std::string what) {
    return fw_fail(prm::Status::BAD_PARAM_ERR, syn, std::move(what));
}

// The syndromes of one umem reference: unknown umem, range, alignment.
struct UmemRule {
    uint32_t unknown, range, align;
};

// Host bytes [off, off + len) of a umem of this context, `align`-aligned.
inline Result<std::byte*> umem_bytes(DeviceState& st, uint32_t ctx, uint32_t id, uint64_t off,
                                     uint64_t len, uint64_t align, const UmemRule& rule) {
    auto u = st.umems.find(id);
    if (!u || u->ctx != ctx)
        return fw_fail(prm::Status::BAD_RES_ERR, rule.unknown, "umem unknown or another context's");
    if (off > u->size || len > u->size - off) return bad_param(rule.range, "past the umem");
    auto* host = reinterpret_cast<std::byte*>(uintptr_t(u->host(off)));
    // Records, CQEs and WQEs are read and written with aligned accesses.
    if (align > 1 && reinterpret_cast<uintptr_t>(host) % align) return bad_param(rule.align, "misaligned");
    return host;
}

inline bool uar_of(DeviceState& st, uint32_t ctx, uint32_t uar_page) {
    auto u = st.uars.find(uar_page);
    return u && u->ctx == ctx;
}

inline bool cq_of(DeviceState& st, uint32_t ctx, uint32_t cqn) {
    auto c = st.cqs.find(cqn);
    return c && c->ctx == ctx;
}

}  // namespace mlx5async::emu
