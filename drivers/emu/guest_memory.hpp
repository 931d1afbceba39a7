// Guest memory as the device sees it: a guest address through an mkey
// (indirect KLM -> direct MTT -> umem) to host memory. Used by the virtq
// validation (rings must be reachable before RDY) and by the datapath.
//
// Thread-safety: as the object store, translate() reads the tables without
// locking: the caller holds DeviceState::mu (command handlers run with it;
// the datapath takes it around each translation). The spans point into
// memory registered by umems; they stay valid while the mkey exists, and an
// mkey cannot be destroyed while a virtq (or an indirect mkey) uses it
// (RES_BUSY). The registering process owns that memory: translate() never
// touches it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/base/result.hpp"
#include "common/prm/virtq.hpp"
#include "state.hpp"

namespace mlx5async::emu {

// The null mkey QUERY_SPECIAL_CONTEXTS reports: a KLM entry naming it is a
// hole (any access through it fails). Index 0xffffff is no object's (the
// store's ids have kind 1..7 in their top bits).
inline constexpr uint32_t kNullMkey = 0xffffff00;

struct GuestSpan {
    std::byte* host;
    size_t len;
};

// [addr, addr+len) through `mkey` (indirect KLM or direct) into host memory,
// possibly several spans when crossing regions; NotFound (unknown mkey, a
// byte outside the mkey or in a hole) / InvalidArgument (len 0, wrap-around)
// when any byte is outside registered memory (never touches memory).
// Caller holds st.mu.
Result<std::vector<GuestSpan>> translate(const DeviceState& st, uint32_t mkey, uint64_t addr,
                                         size_t len);

// The mkey object an mkey value names (index and key byte), or nullptr.
const MkeyObj* find_mkey(const DeviceState& st, uint32_t mkey);
MkeyObj* find_mkey(DeviceState& st, uint32_t mkey);

// PRM: before a virtq may run, its rings must be reachable through
// virtio_q_mkey: the mkey exists and desc/available/used cover queue_size
// entries (split: 16·n, 6 + 2·n, 6 + 8·n bytes; packed: 16·n, 4, 4).
// BAD_PARAM_ERR with kVirtqMkeyUnknown / kVirtqRingUntranslated + area.
Result<void> check_virtq_rings(const DeviceState& st, const prm::VirtqAttr& a);

}  // namespace mlx5async::emu
