// Guest-memory registration (guest_memory.hpp): umems, direct MTT mkeys,
// the indirect KLM mkey, and their release once no virtq refers to them.
#include "guest_memory.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "common/base/log_sink.hpp"
#include "common/prm/mkey.hpp"
#include "common/prm/status.hpp"

namespace mlx5async::core {
namespace {

// KLM byte_count is 32 bits; DPDK splits entries at 2 GiB (MLX5_MAX_KLM_BYTE_COUNT).
constexpr uint64_t kMaxKlmBytes = 1ull << 31;

void add_klm(std::vector<prm::KlmEntry>& klm, uint32_t mkey, uint64_t gpa, uint64_t bytes) {
    for (uint64_t off = 0; off < bytes; off += kMaxKlmBytes)
        klm.push_back({uint32_t(std::min(kMaxKlmBytes, bytes - off)), mkey, gpa + off});
}

}  // namespace

bool same_table(const std::vector<MemRegion>& a, const std::vector<MemRegion>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const MemRegion& x, const MemRegion& y) {
        return x.guest_phys_addr == y.guest_phys_addr && x.size == y.size &&
               x.host_addr == y.host_addr && x.file_dev == y.file_dev && x.file_ino == y.file_ino &&
               x.file_offset == y.file_offset;
    });
}

namespace {

bool has_holes(const std::vector<MemRegion>& r) {
    for (size_t i = 1; i < r.size(); i++)
        if (r[i].guest_phys_addr != r[i - 1].guest_phys_addr + r[i - 1].size) return true;
    return false;
}

constexpr uint64_t kPage = 4096;

uint64_t klm_entries(uint64_t bytes) { return (bytes + kMaxKlmBytes - 1) / kMaxKlmBytes; }

uint64_t table_bytes(const std::vector<MemRegion>& t) {
    uint64_t total = 0;
    for (const MemRegion& r : t) total += r.size;
    return total;
}

std::string region_text(size_t i, const MemRegion& r) {
    char b[120];
    std::snprintf(b, sizeof b, "region %zu [gpa 0x%llx, +0x%llx) at 0x%llx", i,
                  static_cast<unsigned long long>(r.guest_phys_addr),
                  static_cast<unsigned long long>(r.size),
                  static_cast<unsigned long long>(r.host_addr));
    return b;
}

}  // namespace

uint64_t mem_chunk_bytes(uint64_t total_bytes) {
    uint64_t chunk = kMinMemChunkBytes;
    while (chunk < kMaxMemChunkBytes && chunk * kMemChunksWanted < total_bytes) chunk <<= 1;
    return chunk;
}

std::vector<MemChunk> chunks_of(const std::vector<MemRegion>& t, bool whole_regions) {
    const uint64_t chunk = mem_chunk_bytes(table_bytes(t));
    std::vector<MemChunk> out;
    for (size_t i = 0; i < t.size(); i++) {
        const uint64_t step = whole_regions ? t[i].size : chunk;
        for (uint64_t off = 0; off < t[i].size; off += step)
            out.push_back({i, t[i].guest_phys_addr + off, t[i].host_addr + off, std::min(step, t[i].size - off)});
    }
    return out;
}

Result<void> validate_table(const std::vector<MemRegion>& t) {
    auto refuse = [](const std::string& why) {
        return fail(Errc::InvalidArgument, "memory table refused: " + why);
    };
    uint64_t entries = 0;
    const uint64_t chunk = mem_chunk_bytes(table_bytes(t));
    for (size_t i = 0; i < t.size(); i++) {
        const MemRegion& r = t[i];
        if ((r.guest_phys_addr | r.host_addr | r.size) % kPage)
            return refuse(region_text(i, r) + " is not 4 KiB aligned");
        if (r.guest_phys_addr + r.size < r.guest_phys_addr || r.host_addr + r.size < r.host_addr)
            return refuse(region_text(i, r) + " wraps around the address space");
        if (i > 0) {
            const MemRegion& p = t[i - 1];
            uint64_t prev_end = p.guest_phys_addr + p.size;
            if (r.guest_phys_addr < prev_end)
                return refuse(region_text(i, r) + " overlaps " + region_text(i - 1, p));
            entries += klm_entries(r.guest_phys_addr - prev_end);  // the hole before it
        }
        entries += (r.size + chunk - 1) / chunk;  // one per chunk
        if (entries > kMaxKlmEntries)
            return refuse("regions and holes up to " + region_text(i, r) + " need " +
                          std::to_string(entries) + " KLM entries (chunks of " +
                          std::to_string(chunk >> 20) + " MiB, holes in 2 GiB pieces); an mkey takes " +
                          std::to_string(kMaxKlmEntries));
    }
    return {};
}

namespace {

// [gpa, gpa + len) lies in regions that follow each other without a hole.
bool covered(const std::vector<MemRegion>& t, uint64_t gpa, uint64_t len) {
    if (gpa + len < gpa) return false;
    for (const MemRegion& r : t) {
        if (gpa < r.guest_phys_addr) return false;  // sorted: a hole before r
        const uint64_t end = r.guest_phys_addr + r.size;
        if (gpa >= end) continue;
        if (gpa + len <= end) return true;
        len -= end - gpa;
        gpa = end;
    }
    return false;
}

}  // namespace

Result<void> validate_vring(const VringConfig& v, const std::vector<MemRegion>& t) {
    auto refuse = [&](const std::string& why) {
        return fail(Errc::InvalidArgument, "vring " + std::to_string(v.index) + " refused: " + why);
    };
    if (!v.unusable.empty()) return refuse(v.unusable);
    if (v.size == 0 || v.size > 32768 || (v.size & (v.size - 1)))
        return refuse("size " + std::to_string(v.size) + " is not a power of two up to 32768");
    struct Area {
        const char* name;
        uint64_t gpa, len, align;
    };
    // virtio 1.x §2.7 (split) and §2.8.10 (packed: 4-byte event areas).
    const Area split[] = {{"descriptor table", v.desc_gpa, 16ull * v.size, 16},
                          {"driver area (avail)", v.avail_gpa, 6 + 2ull * v.size, 2},
                          {"device area (used)", v.used_gpa, 6 + 8ull * v.size, 4}};
    const Area packed[] = {{"descriptor ring", v.desc_gpa, 16ull * v.size, 16},
                           {"driver event suppression area", v.avail_gpa, 4, 4},
                           {"device event suppression area", v.used_gpa, 4, 4}};
    for (const Area& a : v.packed ? packed : split) {
        char at[96];
        std::snprintf(at, sizeof at, " at gpa 0x%llx (+0x%llx)", static_cast<unsigned long long>(a.gpa),
                      static_cast<unsigned long long>(a.len));
        if (a.gpa % a.align)
            return refuse(std::string(a.name) + at + " is not " + std::to_string(a.align) + "-byte aligned");
        if (!t.empty() && !covered(t, a.gpa, a.len))
            return refuse(std::string(a.name) + at + " is not inside guest memory");
    }
    return {};
}

std::vector<MemRegion> sorted_regions(std::vector<MemRegion> regions) {
    std::erase_if(regions, [](const MemRegion& r) { return r.size == 0; });
    std::sort(regions.begin(), regions.end(), [](const MemRegion& a, const MemRegion& b) {
        return a.guest_phys_addr < b.guest_phys_addr;
    });
    return regions;
}

// One CREATE_MKEY through the engine; returns the mkey value.
Result<uint32_t> GuestMemory::create_mkey(const prm::MkeyAttr& a, devx::DevxObj& obj, BatchKind kind) {
    auto in = prm::encode_create_mkey(a);
    MLX5A_CHECK(in);
    devx::Batch b;
    b.add(devx::Command::create_obj(ctx_, std::move(*in), prm::kCreateMkeyOutBytes));
    auto res = cmds_.run(std::move(b), kind, nullptr);
    auto& s = res.entries.at(0).steps.at(0);
    if (!s.ok()) return unexpected(s.error());
    auto idx = prm::decode_create_mkey_out(s.out);
    MLX5A_CHECK(idx);
    obj = std::move(s.obj);
    return prm::mkey_value(*idx, a.mkey_7_0);
}

// PRM: holes of an indirect mkey point at the null mkey (QUERY_SPECIAL_CONTEXTS).
Result<uint32_t> GuestMemory::null_mkey() {
    if (null_mkey_) return null_mkey_;
    std::vector<std::byte> in(prm::kQuerySpecialContextsInBytes);
    prm::encode_query_special_contexts(in);
    devx::Batch b;
    b.add(devx::Command::general(ctx_, std::move(in), prm::kQuerySpecialContextsOutBytes));
    auto res = cmds_.run(std::move(b), BatchKind::Memory, nullptr);
    const auto& s = res.entries.at(0).steps.at(0);
    if (!s.ok()) return unexpected(s.error());
    auto sc = prm::decode_query_special_contexts_out(s.out);
    MLX5A_CHECK(sc);
    null_mkey_ = sc->null_mkey;
    return null_mkey_;
}

namespace {

// A chunk's failed step, as an Error naming the region, the chunk and what failed.
Unexpected<Error> chunk_error(const MemoryBuild& m, size_t i, const devx::StepResult& s, const char* what) {
    const MemChunk& c = m.chunks[i];
    char b[80];
    std::snprintf(b, sizeof b, ": chunk [gpa 0x%llx, +0x%llx): ", static_cast<unsigned long long>(c.gpa),
                  static_cast<unsigned long long>(c.size));
    Error e = s.error();
    e.what = "guest memory " + region_text(c.region, m.reg.regions[c.region]) + b + what + ": " +
             prm::describe(e);
    return unexpected(std::move(e));
}

}  // namespace

Result<MemoryBuild> GuestMemory::plan(std::vector<MemRegion> sorted, bool whole_regions) {
    MemoryBuild m;
    m.reg.call_stats = cmds_.call_stats();
    m.reg.regions = std::move(sorted);
    if (has_holes(m.reg.regions)) {
        auto n = null_mkey();
        MLX5A_CHECK(n);
        m.hole = *n;
    }
    m.chunks = chunks_of(m.reg.regions, whole_regions);
    return m;
}

// Chains of registrations, at most max_inflight of them (half the command
// slots): that many in flight keep the pinning and the firmware's
// translation lanes busy (doc/emulator.md, "Memory registration"), and the
// other half of the slots stays free for the virtqs' commands that share
// the batch. Chunk i is entry i % chains, steps 2j (its umem) and 2j + 1
// (its direct mkey, naming the umem the step before registered), j = i /
// chains: each mkey is made while the other chains still pin, not in a
// wave of its own after them all.
Result<void> GuestMemory::add_chunks(MemoryBuild& m, devx::Batch& b) const {
    m.chunks_at = b.size();
    m.chains = std::max<size_t>(1, std::min<size_t>(m.chunks.size(), cmds_.max_inflight()));
    const auto umem_fields = prm::direct_mkey_umem_fields();
    std::vector<devx::Entry> chains(m.chains);
    for (size_t i = 0; i < m.chunks.size(); i++) {
        const MemChunk& c = m.chunks[i];
        auto& steps = chains[i % m.chains].steps;
        const auto umem_step = uint16_t(steps.size());
        steps.push_back(devx::Command::reg_umem(ctx_, reinterpret_cast<void*>(uintptr_t(c.host)), c.size));
        auto in = prm::encode_create_mkey(prm::direct_mkey_attr(0, 0, c.gpa, c.size, pdn_));
        MLX5A_CHECK(in);
        steps.push_back(devx::Command::create_obj(ctx_, std::move(*in), prm::kCreateMkeyOutBytes));
        for (const prm::Field& f : umem_fields) steps.back().ids_from.push_back({f, umem_step});
    }
    for (auto& e : chains) b.add(std::move(e));
    return {};
}

devx::StepResult& MemoryBuild::chunk_step(devx::BatchResult& res, size_t chunk, size_t step) const {
    const auto [entry, at] = chunk_at(chunk, step);
    return res.entries.at(entry).steps.at(at);
}

Result<void> GuestMemory::take_chunks(MemoryBuild& m, devx::BatchResult& res) const {
    Result<void> first = {};
    for (size_t i = 0; i < m.chunks.size(); i++) {
        auto& u = m.chunk_step(res, i, 0);
        auto& k = m.chunk_step(res, i, 1);
        if (!u.ok()) {
            // A deadline that came while the worker ran the mkey times out
            // both: the mkey is the step that failed.
            const bool mkey_ran = k.state != devx::StepState::Cancelled;
            if (first) first = mkey_ran ? chunk_error(m, i, k, "direct mkey") : chunk_error(m, i, u, "umem registration");
            continue;
        }
        m.reg.umems.push_back(std::move(u.umem));
        if (!k.ok()) {
            if (first) first = chunk_error(m, i, k, "direct mkey");
            continue;
        }
        m.reg.direct.push_back(std::move(k.obj));
    }
    return first;
}

// The indirect mkey, in the chunks' batch: KLM entries (at most 2 GiB each)
// in GPA order, holes through the null mkey; each chunk's entries take its
// direct mkey's index and its umem's low byte (the direct mkey's variant)
// from its chain once that chain made them all.
Result<void> GuestMemory::add_indirect(MemoryBuild& m, devx::Batch& b) const {
    std::vector<prm::KlmEntry> klm;
    std::vector<std::pair<size_t, size_t>> of_chunk;  // its KLM entries: [first, end)
    const auto& chunks = m.chunks;
    for (size_t i = 0; i < chunks.size(); i++) {
        if (i > 0) {
            const uint64_t prev_end = chunks[i - 1].gpa + chunks[i - 1].size;
            add_klm(klm, m.hole, prev_end, chunks[i].gpa - prev_end);  // a hole between regions
        }
        const size_t first = klm.size();
        add_klm(klm, 0, chunks[i].gpa, chunks[i].size);
        of_chunk.emplace_back(first, klm.size());
    }
    const auto attr = prm::indirect_mkey_attr(m.reg.regions.front().guest_phys_addr, std::move(klm), pdn_);
    auto in = prm::encode_create_mkey(attr);
    MLX5A_CHECK(in);
    auto c = devx::Command::create_obj(ctx_, std::move(*in), prm::kCreateMkeyOutBytes);
    for (size_t i = 0; i < chunks.size(); i++) {
        const auto [entry, umem_step] = m.chunk_at(i, 0);
        const auto mkey_step = m.chunk_at(i, 1).second;
        for (size_t k = of_chunk[i].first; k < of_chunk[i].second; k++) {
            const prm::KlmMkeyFields f = prm::klm_mkey_fields(k);
            c.ids_from.push_back({f.index, uint16_t(mkey_step), int32_t(entry)});
            c.ids_from.push_back({f.variant, uint16_t(umem_step), int32_t(entry)});
        }
    }
    m.indirect_variant = attr.mkey_7_0;
    m.indirect_at = b.add(std::move(c));
    return {};
}

Result<MemRegistration> GuestMemory::take_indirect(MemoryBuild& m, devx::BatchResult& res) {
    auto& s = res.entries.at(m.indirect_at).steps.at(0);
    auto idx = s.ok() ? prm::decode_create_mkey_out(s.out) : Result<uint32_t>(unexpected(s.error()));
    if (!idx) {
        Error e = idx.error();
        e.what = "guest memory: indirect mkey over " + std::to_string(m.chunks.size()) + " chunks: " +
                 prm::describe(e);
        return unexpected(std::move(e));
    }
    m.reg.indirect = std::move(s.obj);
    m.reg.mkey = prm::mkey_value(*idx, m.indirect_variant);
    registrations_++;
    return std::move(m.reg);
}

void GuestMemory::commit(MemRegistration next) {
    if (!current_.empty()) retired_.push_back(std::move(current_));
    current_ = std::move(next);
    logf(LogLevel::Info, "%s: guest memory: %zu regions, mkey 0x%x", name_.c_str(),
         current_.regions.size(), current_.mkey);
}

void GuestMemory::retire_current() {
    if (!current_.empty()) retired_.push_back(std::move(current_));
    current_ = {};
}

}  // namespace mlx5async::core
