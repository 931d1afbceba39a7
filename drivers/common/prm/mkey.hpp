// Memory keys: CREATE_MKEY (0x200), DESTROY_MKEY (0x202) and
// QUERY_SPECIAL_CONTEXTS (0x203, for the null mkey that fills holes of an
// indirect mkey). Typed attributes and both directions of each command: the
// driver encodes inputs and decodes outputs, the emulator the reverse.
//
// How guest memory is registered (as DPDK drivers/vdpa/mlx5/mlx5_vdpa_mem.c):
// a umem per vhost region over its host memory, a direct MTT mkey per region
// backed by that umem (start_addr = guest physical address), and one indirect
// KLM mkey whose entries list the direct mkeys in GPA order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "../base/result.hpp"
#include "field.hpp"

namespace mlx5async::prm {

// mkc access_mode (access_mode_4_2 << 2 | access_mode_1_0), Linux MLX5_MKC_ACCESS_MODE_*.
enum class MkeyAccessMode : uint8_t { PA = 0x0, MTT = 0x1, KLM = 0x2, KSM = 0x3 };

// One entry of an indirect (KLM) mkey: byte_count bytes at `address` of `mkey`.
struct KlmEntry {
    uint32_t byte_count = 0;
    uint32_t mkey = 0;
    uint64_t address = 0;
    bool operator==(const KlmEntry&) const = default;
};

struct MkeyAttr {
    MkeyAccessMode access_mode = MkeyAccessMode::MTT;
    uint16_t uid = 0;
    bool pg_access = false;
    bool umem_valid = false;  // mkey_umem_valid: translations come from the umem
    uint32_t umem_id = 0;     // mkey_umem_id
    uint64_t umem_offset = 0; // mkey_umem_offset
    bool lw = true, lr = true, rw = false, rr = false, a = false;
    bool umr_en = false;
    uint32_t qpn = 0xffffff;  // 24 bits: no QP
    uint8_t mkey_7_0 = 0;     // the variant byte of the mkey value
    bool length64 = false;
    uint32_t pd = 0;          // 24 bits
    uint64_t start_addr = 0;
    uint64_t len = 0;
    uint32_t translations_octword_size = 0;
    uint32_t translations_octword_actual_size = 0;
    uint8_t log_page_size = 0;  // 5 bits
    std::vector<KlmEntry> klm;  // KLM mode: translations_octword_actual_size entries

    bool operator==(const MkeyAttr&) const = default;
};

inline constexpr size_t kCreateMkeyInBytes = 0x880 / 8;  // without klm_pas_mtt[]
inline constexpr size_t kKlmBytes = 16;
inline constexpr size_t kCreateMkeyOutBytes = 16;
inline constexpr size_t kDestroyMkeyInBytes = 16;
inline constexpr size_t kDestroyMkeyOutBytes = 16;
inline constexpr size_t kQuerySpecialContextsInBytes = 16;
inline constexpr size_t kQuerySpecialContextsOutBytes = 32;
inline constexpr uint32_t kMkeyPageShift = 12;

inline constexpr size_t create_mkey_in_bytes(size_t klm_entries) {
    return kCreateMkeyInBytes + klm_entries * kKlmBytes;
}
// The mkey value a virtq context or a KLM entry carries.
inline constexpr uint32_t mkey_value(uint32_t mkey_index, uint8_t mkey_7_0) {
    return (mkey_index << 8) | mkey_7_0;
}
inline constexpr uint32_t mkey_index_of(uint32_t mkey) { return mkey >> 8; }

// A direct mkey over [umem_offset, umem_offset + len) of a umem, addressed
// from start_addr (as DPDK mlx5_devx_cmd_mkey_create without KLMs: 4 KiB
// pages, one 8-byte MTT per page, lw/lr, qpn 0xffffff, mkey_7_0 = umem id's
// low byte).
MkeyAttr direct_mkey_attr(uint32_t umem_id, uint64_t umem_offset, uint64_t start_addr,
                          uint64_t len, uint32_t pd);
// The fields of a direct mkey's create_mkey_in that name its umem: the umem
// id, and mkey_7_0 (its low byte, as direct_mkey_attr sets it). A chain step
// after the umem's registration fills them (devx::Command::ids_from).
std::span<const Field> direct_mkey_umem_fields();
// The fields of an indirect mkey's create_mkey_in that name KLM entry
// `entry`'s mkey: its index (the top 24 bits) and its variant byte, for a
// command that takes them from the direct mkey's creation and its umem's
// registration (devx::Command::ids_from).
struct KlmMkeyFields {
    Field index;
    Field variant;
};
KlmMkeyFields klm_mkey_fields(size_t entry);
// An indirect mkey from start_addr over `entries` (their byte counts summed).
MkeyAttr indirect_mkey_attr(uint64_t start_addr, std::vector<KlmEntry> entries, uint32_t pd);

// CREATE_MKEY input: create_mkey_in_bytes(a.klm.size()) bytes. InvalidArgument
// naming the field when a value does not fit, or when klm and the access
// mode / translations_octword_actual_size disagree.
Result<void> encode_create_mkey(const MkeyAttr& a, std::span<std::byte> in);
Result<std::vector<std::byte>> encode_create_mkey(const MkeyAttr& a);
// Reads KLM entries only in KLM/KSM mode (translations_octword_actual_size of
// them; ShortBuffer when the input does not hold them).
Result<MkeyAttr> decode_create_mkey_in(std::span<const std::byte> in);
// First reserved field of the fixed part holding a non-zero bit, or empty.
std::string_view create_mkey_in_nonzero_reserved(std::span<const std::byte> in);

void encode_create_mkey_out(uint32_t mkey_index, std::span<std::byte> out);
// Status checked first (Firmware error); returns mkey_index.
Result<uint32_t> decode_create_mkey_out(std::span<const std::byte> out);

void encode_destroy_mkey(uint32_t mkey_index, std::span<std::byte> in);
Result<uint32_t> decode_destroy_mkey_in(std::span<const std::byte> in);  // mkey_index

struct SpecialContexts {
    uint32_t dump_fill_mkey = 0;
    uint32_t resd_lkey = 0;
    uint32_t null_mkey = 0;
    uint32_t terminate_scatter_list_mkey = 0;
    uint32_t repeated_mkey = 0;
    bool operator==(const SpecialContexts&) const = default;
};
void encode_query_special_contexts(std::span<std::byte> in);
void encode_query_special_contexts_out(const SpecialContexts& s, std::span<std::byte> out);
Result<SpecialContexts> decode_query_special_contexts_out(std::span<const std::byte> out);

}  // namespace mlx5async::prm
