// Field tables of the memory-key commands: mkc (the mkey context),
// create_mkey_in / create_mkey_out, klm (one indirect-mkey entry),
// destroy_mkey_in / destroy_mkey_out, query_special_contexts_in / _out.
//
// Offsets verified against Linux include/linux/mlx5/mlx5_ifc.h
// (mlx5_ifc_mkc_bits, mlx5_ifc_create_mkey_in_bits / _out_bits,
// mlx5_ifc_klm_bits, mlx5_ifc_destroy_mkey_in_bits,
// mlx5_ifc_query_special_contexts_out_bits), as checked by hand:
//   mkc: access_mode_4_2 0x3 (3), umr_en 0x10, a 0x11, rw 0x12, rr 0x13,
//        lw 0x14, lr 0x15, access_mode_1_0 0x16 (2), qpn 0x20 (24),
//        mkey_7_0 0x38 (8), length64 0x60, pd 0x68 (24), start_addr 0x80 (64),
//        len 0xc0 (64), bsf_octword_size 0x100, translations_octword_size
//        0x1a0, log_page_size 0x1db (5); size 0x200.
//   create_mkey_in: opcode 0x0, uid 0x10, op_mod 0x30, pg_access 0x60,
//        mkey_umem_valid 0x61, memory_key_mkey_entry 0x80 (mkc),
//        translations_octword_actual_size 0x300, mkey_umem_id 0x320,
//        mkey_umem_offset 0x340 (64), klm_pas_mtt[] from 0x880.
//   create_mkey_out: mkey_index 0x48 (24); size 0x80.
//   klm: byte_count 0x0, mkey 0x20, address 0x40 (64); size 0x80 (an octword).
//   destroy_mkey_in: mkey_index 0x48 (24); size 0x80.
//   query_special_contexts_out: dump_fill_mkey 0x40, resd_lkey 0x60,
//        null_mkey 0x80, terminate_scatter_list_mkey 0xa0, repeated_mkey 0xc0.
// DPDK 22.11 mlx5_prm.h has the same offsets for the fields it names (its
// create_mkey_in calls 0x62..0x7f reserved and has no uid).
#pragma once

#include <array>
#include <iterator>
#include <span>

#include "field.hpp"

namespace mlx5async::prm::layout {

// tiles() for a table built at compile time (std::array of pointers).
constexpr bool tiles_span(std::span<const Field* const> fields, uint32_t bits) {
    if (bits % 32 != 0) return false;
    uint32_t pos = 0;
    for (const Field* f : fields) {
        if (f->bit_offset != pos || !field_shape_ok(*f)) return false;
        pos = f->end();
    }
    return pos == bits;
}

namespace mkc {
inline constexpr Field reserved_at_0{"reserved_at_0", 0x0, 1};
inline constexpr Field free_{"free", 0x1, 1};
inline constexpr Field reserved_at_2{"reserved_at_2", 0x2, 1};
inline constexpr Field access_mode_4_2{"access_mode_4_2", 0x3, 3};
inline constexpr Field reserved_at_6{"reserved_at_6", 0x6, 7};
inline constexpr Field relaxed_ordering_write{"relaxed_ordering_write", 0xd, 1};
inline constexpr Field reserved_at_e{"reserved_at_e", 0xe, 1};
inline constexpr Field small_fence_on_rdma_read_response{"small_fence_on_rdma_read_response", 0xf, 1};
inline constexpr Field umr_en{"umr_en", 0x10, 1};
inline constexpr Field a{"a", 0x11, 1};
inline constexpr Field rw{"rw", 0x12, 1};
inline constexpr Field rr{"rr", 0x13, 1};
inline constexpr Field lw{"lw", 0x14, 1};
inline constexpr Field lr{"lr", 0x15, 1};
inline constexpr Field access_mode_1_0{"access_mode_1_0", 0x16, 2};
inline constexpr Field reserved_at_18{"reserved_at_18", 0x18, 8};
inline constexpr Field qpn{"qpn", 0x20, 24};
inline constexpr Field mkey_7_0{"mkey_7_0", 0x38, 8};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 32};
inline constexpr Field length64{"length64", 0x60, 1};
inline constexpr Field bsf_en{"bsf_en", 0x61, 1};
inline constexpr Field sync_umr{"sync_umr", 0x62, 1};
inline constexpr Field reserved_at_63{"reserved_at_63", 0x63, 2};
inline constexpr Field expected_sigerr_count{"expected_sigerr_count", 0x65, 1};
inline constexpr Field reserved_at_66{"reserved_at_66", 0x66, 1};
inline constexpr Field en_rinval{"en_rinval", 0x67, 1};
inline constexpr Field pd{"pd", 0x68, 24};
inline constexpr Field start_addr{"start_addr", 0x80, 64};
inline constexpr Field len{"len", 0xc0, 64};
inline constexpr Field bsf_octword_size{"bsf_octword_size", 0x100, 32};
inline constexpr Field reserved_at_120{"reserved_at_120", 0x120, 0x80};
inline constexpr Field translations_octword_size{"translations_octword_size", 0x1a0, 32};
inline constexpr Field reserved_at_1c0{"reserved_at_1c0", 0x1c0, 0x19};
inline constexpr Field relaxed_ordering_read{"relaxed_ordering_read", 0x1d9, 1};
inline constexpr Field reserved_at_1da{"reserved_at_1da", 0x1da, 1};
inline constexpr Field log_page_size{"log_page_size", 0x1db, 5};
inline constexpr Field reserved_at_1e0{"reserved_at_1e0", 0x1e0, 32};

inline constexpr const Field* kFields[] = {
    &reserved_at_0, &free_, &reserved_at_2, &access_mode_4_2, &reserved_at_6,
    &relaxed_ordering_write, &reserved_at_e, &small_fence_on_rdma_read_response, &umr_en,
    &a, &rw, &rr, &lw, &lr, &access_mode_1_0, &reserved_at_18,
    &qpn, &mkey_7_0, &reserved_at_40,
    &length64, &bsf_en, &sync_umr, &reserved_at_63, &expected_sigerr_count, &reserved_at_66,
    &en_rinval, &pd, &start_addr, &len, &bsf_octword_size, &reserved_at_120,
    &translations_octword_size, &reserved_at_1c0, &relaxed_ordering_read, &reserved_at_1da,
    &log_page_size, &reserved_at_1e0,
};
static_assert(tiles(kFields, 0x200));
}  // namespace mkc

inline constexpr Layout kMkc{"mkc", 0x200, mkc::kFields};

// The fixed part of create_mkey_in; klm_pas_mtt[] follows at 0x880.
namespace create_mkey_in {
inline constexpr uint32_t kMkc = 0x80;  // memory_key_mkey_entry
inline constexpr Field opcode{"opcode", 0x0, 16};
inline constexpr Field uid{"uid", 0x10, 16};
inline constexpr Field reserved_at_20{"reserved_at_20", 0x20, 16};
inline constexpr Field op_mod{"op_mod", 0x30, 16};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 32};
inline constexpr Field pg_access{"pg_access", 0x60, 1};
inline constexpr Field mkey_umem_valid{"mkey_umem_valid", 0x61, 1};
inline constexpr Field reserved_at_62{"reserved_at_62", 0x62, 30};
inline constexpr Field reserved_at_280{"reserved_at_280", 0x280, 0x80};
inline constexpr Field translations_octword_actual_size{"translations_octword_actual_size", 0x300, 32};
inline constexpr Field mkey_umem_id{"mkey_umem_id", 0x320, 32};
inline constexpr Field mkey_umem_offset{"mkey_umem_offset", 0x340, 64};
inline constexpr Field reserved_at_380{"reserved_at_380", 0x380, 0x500};

// memory_key_mkey_entry: the mkc fields (same names) shifted to kMkc.
inline constexpr size_t kMkcCount = std::size(mkc::kFields);
inline constexpr auto kMkcFields = [] {
    std::array<Field, kMkcCount> a{};
    for (size_t i = 0; i < kMkcCount; ++i) a[i] = mkc::kFields[i]->at(kMkc);
    return a;
}();
// The mkc field `f` as it sits inside create_mkey_in.
constexpr const Field& in_mkc(const Field& f) {
    for (const Field& g : kMkcFields)
        if (g.bit_offset == f.bit_offset + kMkc && g.bit_width == f.bit_width) return g;
    return f;  // not reached for an mkc field
}

inline constexpr const Field* kHead[] = {&opcode, &uid, &reserved_at_20, &op_mod, &reserved_at_40,
                                         &pg_access, &mkey_umem_valid, &reserved_at_62};
inline constexpr const Field* kTail[] = {&reserved_at_280, &translations_octword_actual_size,
                                         &mkey_umem_id, &mkey_umem_offset, &reserved_at_380};
inline constexpr auto kFields = [] {
    std::array<const Field*, std::size(kHead) + kMkcCount + std::size(kTail)> a{};
    size_t n = 0;
    for (const Field* f : kHead) a[n++] = f;
    for (const Field& f : kMkcFields) a[n++] = &f;
    for (const Field* f : kTail) a[n++] = f;
    return a;
}();
static_assert(tiles_span(kFields, 0x880));
}  // namespace create_mkey_in

inline constexpr Layout kCreateMkeyIn{"create_mkey_in", 0x880, create_mkey_in::kFields};

namespace klm {
inline constexpr Field byte_count{"byte_count", 0x0, 32};
inline constexpr Field mkey{"mkey", 0x20, 32};
inline constexpr Field address{"address", 0x40, 64};
inline constexpr const Field* kFields[] = {&byte_count, &mkey, &address};
static_assert(tiles(kFields, 0x80));
}  // namespace klm

inline constexpr Layout kKlm{"klm", 0x80, klm::kFields};

namespace create_mkey_out {
inline constexpr Field status{"status", 0x0, 8};
inline constexpr Field reserved_at_8{"reserved_at_8", 0x8, 24};
inline constexpr Field syndrome{"syndrome", 0x20, 32};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 8};
inline constexpr Field mkey_index{"mkey_index", 0x48, 24};
inline constexpr Field reserved_at_60{"reserved_at_60", 0x60, 32};
inline constexpr const Field* kFields[] = {&status, &reserved_at_8, &syndrome, &reserved_at_40,
                                           &mkey_index, &reserved_at_60};
static_assert(tiles(kFields, 0x80));
}  // namespace create_mkey_out

inline constexpr Layout kCreateMkeyOut{"create_mkey_out", 0x80, create_mkey_out::kFields};

namespace destroy_mkey_in {
inline constexpr Field opcode{"opcode", 0x0, 16};
inline constexpr Field uid{"uid", 0x10, 16};
inline constexpr Field reserved_at_20{"reserved_at_20", 0x20, 16};
inline constexpr Field op_mod{"op_mod", 0x30, 16};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 8};
inline constexpr Field mkey_index{"mkey_index", 0x48, 24};
inline constexpr Field reserved_at_60{"reserved_at_60", 0x60, 32};
inline constexpr const Field* kFields[] = {&opcode, &uid, &reserved_at_20, &op_mod,
                                           &reserved_at_40, &mkey_index, &reserved_at_60};
static_assert(tiles(kFields, 0x80));
}  // namespace destroy_mkey_in

inline constexpr Layout kDestroyMkeyIn{"destroy_mkey_in", 0x80, destroy_mkey_in::kFields};

// destroy_mkey_out and query_special_contexts_in are mbox_out / mbox_in plus
// 0x40 reserved bits (0x80 in all).
namespace query_special_contexts_out {
inline constexpr Field status{"status", 0x0, 8};
inline constexpr Field reserved_at_8{"reserved_at_8", 0x8, 24};
inline constexpr Field syndrome{"syndrome", 0x20, 32};
inline constexpr Field dump_fill_mkey{"dump_fill_mkey", 0x40, 32};
inline constexpr Field resd_lkey{"resd_lkey", 0x60, 32};
inline constexpr Field null_mkey{"null_mkey", 0x80, 32};
inline constexpr Field terminate_scatter_list_mkey{"terminate_scatter_list_mkey", 0xa0, 32};
inline constexpr Field repeated_mkey{"repeated_mkey", 0xc0, 32};
inline constexpr Field reserved_at_e0{"reserved_at_e0", 0xe0, 32};
inline constexpr const Field* kFields[] = {&status, &reserved_at_8, &syndrome, &dump_fill_mkey,
                                           &resd_lkey, &null_mkey, &terminate_scatter_list_mkey,
                                           &repeated_mkey, &reserved_at_e0};
static_assert(tiles(kFields, 0x100));
}  // namespace query_special_contexts_out

inline constexpr Layout kQuerySpecialContextsOut{"query_special_contexts_out", 0x100,
                                                 query_special_contexts_out::kFields};

}  // namespace mlx5async::prm::layout
