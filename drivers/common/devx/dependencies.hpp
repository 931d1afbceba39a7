// Internal: the order between entries of one batch (Entry::after and the
// entries their steps' ids_from name), shared by the three strategies. It
// owns the entries' readiness: which wait, which it released (their ids
// from other entries bound) and which it settled (never issued: a bad
// dependency, or one that did not end with every step Done).
#pragma once

#include <cstdint>
#include <vector>

#include "command.hpp"

namespace mlx5async::devx {

class Dependencies {
public:
    // Settles every entry whose dependencies are bad (itself or a later
    // entry): first step Failed with EINVAL, logged, and what waits on it.
    Dependencies(Batch& b, BatchResult& r);

    // The entry waits for an entry that has not ended yet.
    bool waits(uint32_t e) const noexcept { return waiting_[e] > 0; }
    bool has_dependents(uint32_t e) const noexcept { return !dependents_[e].empty(); }
    // Its results are final before it ran (see the constructor, ended()).
    bool settled(uint32_t e) const noexcept { return settled_[e]; }
    // Entry e ended (ok: every step Done). Entries that now wait for
    // nothing go to `released`, their ids bound; entries that waited for a
    // failure are Cancelled (never issued), recursively, and go to `cancelled`.
    void ended(uint32_t e, bool ok, std::vector<uint32_t>& released, std::vector<uint32_t>& cancelled);

private:
    // e is Cancelled, never issued, for a dependency that failed.
    void settle(uint32_t e, std::vector<uint32_t>& released, std::vector<uint32_t>& cancelled);
    // e's results are final without running it: settled, then ended.
    void end_unrun(uint32_t e, bool ok, std::vector<uint32_t>& released, std::vector<uint32_t>& cancelled);

    Batch& b_;
    BatchResult& r_;
    std::vector<uint32_t> waiting_;
    std::vector<std::vector<uint32_t>> dependents_;
    std::vector<bool> settled_;
};

}  // namespace mlx5async::devx
