// Guest memory registered the way ConnectX needs it (as DPDK's
// drivers/vdpa/mlx5/mlx5_vdpa_mem.c, in chunks): a umem per chunk of a vhost
// memory region over its host mapping, a direct MTT mkey per chunk
// (start_addr = its guest physical address), and one indirect KLM mkey over
// all chunks in GPA order, holes between regions covered by the device's
// null mkey. The indirect mkey is every virtq's virtio_q_mkey.
//
// Lifetime: kept across dev_close/dev_conf while vhost's memory table is
// unchanged (a migration resume must not re-register). A changed table
// registers the new set first; the old one is retired and destroyed once no
// virtq object refers to it (the start batch re-points idle virtqs).
//
// GuestMemory owns the registrations (the current one, the retired ones,
// the null mkey) and builds new ones in steps that share batches with other
// work (device_start.cpp). It runs on the device's strand; the deferred
// release takes retired registrations out there and destroys them on its
// own thread.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "common/base/result.hpp"
#include "common/devx/engine.hpp"
#include "common/devx/raii.hpp"
#include "common/prm/mkey.hpp"
#include "guest.hpp"

namespace mlx5async::core {

struct MemRegistration {
    std::vector<MemRegion> regions;  // sorted by guest_phys_addr
    std::vector<devx::Umem> umems;
    std::vector<devx::DevxObj> direct;
    devx::DevxObj indirect;
    uint32_t mkey = 0;  // the indirect mkey's value ((mkey_index << 8) | mkey_7_0)
    // Where its destroys are counted (the device's Commands::call_stats;
    // none: not counted). Shared: a registration may outlive its device's
    // engine (kept until the device answered for every late command).
    std::shared_ptr<devx::CallStats> call_stats;

    MemRegistration() = default;
    MemRegistration(MemRegistration&& o) noexcept { *this = std::move(o); }
    MemRegistration& operator=(MemRegistration&& o) noexcept {
        if (this == &o) return *this;
        reset();
        regions = std::move(o.regions);
        umems = std::move(o.umems);
        direct = std::move(o.direct);
        indirect = std::move(o.indirect);
        mkey = std::exchange(o.mkey, 0);
        call_stats = std::move(o.call_stats);
        return *this;
    }
    ~MemRegistration() { reset(); }
    // Destroys in pin order: the indirect mkey, the direct mkeys, the umems.
    void reset() noexcept {
        (void)destroy_mkey(indirect, true);
        for (devx::DevxObj& o : direct) (void)destroy_mkey(o, true);
        direct.clear();
        for (devx::Umem& u : umems)
            if (dereg_umem(u) != 0) u.reset();  // tried once more, then given up
        umems.clear();
        regions.clear();
        mkey = 0;
    }
    bool empty() const noexcept { return mkey == 0; }
    // Destroys in pin order, keeping what the device refused to destroy
    // (an object that stays on the device keeps its handle, to be tried
    // again): true when nothing is left.
    bool release() noexcept {
        if (destroy_mkey(indirect, false) != 0) return false;  // every direct mkey is still named
        std::erase_if(direct, [this](devx::DevxObj& o) { return destroy_mkey(o, false) == 0; });
        std::erase_if(umems, [this](devx::Umem& u) { return dereg_umem(u) == 0; });
        if (!direct.empty() || !umems.empty()) return false;
        regions.clear();
        mkey = 0;
        return true;
    }

private:
    static constexpr devx::CmdType kDestroyMkey{devx::CmdVerb::Destroy, devx::CmdObject::Mkey};
    static constexpr devx::CmdType kDestroyUmem{devx::CmdVerb::Destroy, devx::CmdObject::Umem};
    // `give_up`: a refused destroy leaves the object to the context's close.
    int destroy_mkey(devx::DevxObj& o, bool give_up) noexcept {
        if (!o) return 0;
        return devx::timed_call(call_stats.get(), kDestroyMkey,
                                [&] { return give_up ? o.destroy() : o.try_destroy(); });
    }
    int dereg_umem(devx::Umem& u) noexcept {
        if (!u) return 0;
        return devx::timed_call(call_stats.get(), kDestroyUmem, [&] { return u.try_dereg(); });
    }
};


// Guest memory reaches the device in chunks: a umem and a direct mkey
// each, registered in parallel, one KLM entry each in the indirect mkey.
// At most 1 GiB (as Linux's vdpa/mlx5 since 6.12); smaller tables in
// smaller chunks, so that they still come in kMemChunksWanted pieces (two
// waves of the 16 commands in flight: enough to keep the pinning workers
// and the firmware's translation lanes busy), but none under 4 MiB, where
// a chunk's fixed costs outweigh its pages.
inline constexpr uint64_t kMaxMemChunkBytes = 1ull << 30;
inline constexpr uint64_t kMinMemChunkBytes = 4ull << 20;
inline constexpr uint64_t kMemChunksWanted = 32;
// The chunk size for a table of `total_bytes` (a power of two).
uint64_t mem_chunk_bytes(uint64_t total_bytes);
struct MemChunk {
    size_t region = 0;  // index in the sorted table
    uint64_t gpa = 0, host = 0, size = 0;
};
// The chunks of a sorted table, in GPA order; with `whole_regions` one per
// region (DPDK 22.11's registration: the sequential strategy's).
std::vector<MemChunk> chunks_of(const std::vector<MemRegion>& sorted, bool whole_regions);

// Moves out of `retired` the registrations whose mkey nobody names any more
// (`named(mkey)` false): the caller destroys them, on any thread.
template <typename Named>
std::vector<MemRegistration> take_unnamed(std::vector<MemRegistration>& retired, Named named) {
    std::vector<MemRegistration> out;
    std::erase_if(retired, [&](MemRegistration& r) {
        if (named(r.mkey)) return false;
        out.push_back(std::move(r));
        return true;
    });
    return out;
}

// A memory table in the making: its chunks, then their umems and direct
// mkeys, then the indirect mkey over them.
struct MemoryBuild {
    MemRegistration reg;
    std::vector<MemChunk> chunks;
    uint32_t hole = 0;            // the null mkey, for tables with holes
    size_t chunks_at = 0;         // first entry in the batch
    size_t chains = 1;            // entries (add_chunks)
    size_t indirect_at = 0;       // the indirect mkey's entry (add_indirect)
    uint8_t indirect_variant = 0; // its mkey value's low byte
    // Chunk i's umem registration (step 0) or direct mkey (step 1): its
    // entry in the batch and its step in that entry's chain.
    std::pair<size_t, size_t> chunk_at(size_t chunk, size_t step) const {
        return {chunks_at + chunk % chains, 2 * (chunk / chains) + step};
    }
    devx::StepResult& chunk_step(devx::BatchResult& res, size_t chunk, size_t step) const;
};

class GuestMemory {
public:
    GuestMemory(Commands& cmds, const devx::Context& ctx, uint32_t pdn, std::string device_name)
        : cmds_(cmds), ctx_(ctx), pdn_(pdn), name_(std::move(device_name)) {}

    const MemRegistration& current() const { return current_; }
    uint32_t mkey() const { return current_.mkey; }
    uint64_t registrations() const { return registrations_; }  // tables registered so far
    bool has_retired() const { return !retired_.empty(); }
    size_t retired() const { return retired_.size(); }

    // A table's registration in a batch the caller may share: the chunks
    // (each a umem, then its direct mkey), then the indirect mkey over them.
    // `whole_regions`: a chunk per region (the sequential strategy's order).
    Result<MemoryBuild> plan(std::vector<MemRegion> sorted, bool whole_regions);
    Result<void> add_chunks(MemoryBuild& m, devx::Batch& b) const;
    // Takes every umem and mkey made (a failed build releases them in pin
    // order); the first failure names its chunk.
    Result<void> take_chunks(MemoryBuild& m, devx::BatchResult& r) const;
    // The indirect mkey over the chunks, in their batch: it waits for them.
    Result<void> add_indirect(MemoryBuild& m, devx::Batch& b) const;
    Result<MemRegistration> take_indirect(MemoryBuild& m, devx::BatchResult& r);
    // `next` is current; the one before is retired.
    void commit(MemRegistration next);
    // The current one retired (the frontend's memory goes).
    void retire_current();
    // Retired registrations nobody names any more, taken out.
    template <typename Named>
    std::vector<MemRegistration> take_unnamed(Named named) {
        return core::take_unnamed(retired_, named);
    }
    void reset() {  // the device closes: every registration goes
        retired_.clear();
        current_ = {};
    }

    // One CREATE_MKEY through the engine; returns the mkey value.
    Result<uint32_t> create_mkey(const prm::MkeyAttr& a, devx::DevxObj& obj, BatchKind kind);
    // The device's null mkey (QUERY_SPECIAL_CONTEXTS once, then remembered):
    // what the holes of a table's indirect mkey point at.
    Result<uint32_t> null_mkey();

private:

    Commands& cmds_;
    const devx::Context& ctx_;
    uint32_t pdn_;
    std::string name_;
    MemRegistration current_;
    std::vector<MemRegistration> retired_;  // still referenced by some virtq
    uint32_t null_mkey_ = 0;                // QUERY_SPECIAL_CONTEXTS, once
    uint64_t registrations_ = 0;
};

// Two sorted tables are the same registration: GPA, size, host address,
// and the backing file's device, inode and offset of every region (DPDK
// compares only GPA and size).
bool same_table(const std::vector<MemRegion>& a, const std::vector<MemRegion>& b);

// The regions in GPA order (what registration and comparison use).
std::vector<MemRegion> sorted_regions(std::vector<MemRegion> regions);

// A DevX command's input length is 16 bits in the kernel's uverbs ABI (as
// DPDK's MLX5_DEVX_MAX_KLM_ENTRIES): the KLM entries one indirect mkey can
// carry, each covering at most 2 GiB of a region or of a hole.
inline constexpr size_t kMaxKlmEntries = (UINT16_MAX - prm::kCreateMkeyInBytes) / prm::kKlmBytes;

// A memory table the device can register (sorted regions): every region
// page-aligned (guest address, host address, size) with no address range
// wrapping, no two overlapping, and few enough KLM entries for regions and
// holes. InvalidArgument naming the region(s) otherwise; nothing is
// registered or allocated for a refused table.
Result<void> validate_table(const std::vector<MemRegion>& sorted);

// A split ring (virtio 1.x 2.7) the device can run over this table: a size
// that is a power of two up to 32768, each area aligned (descriptor table
// 16, driver area 2, device area 4) and inside the table's regions with no
// hole, so the device never reads or writes outside guest memory.
// InvalidArgument naming the ring and the area otherwise. With no table (no
// guest memory registered) only size and alignment are checked.
Result<void> validate_vring(const VringConfig& v, const std::vector<MemRegion>& sorted);

}  // namespace mlx5async::core
