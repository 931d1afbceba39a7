// CREATE_MKEY / DESTROY_MKEY / QUERY_SPECIAL_CONTEXTS codec. Golden images
// derived by hand from Linux mlx5_ifc.h (mlx5_ifc_create_mkey_in_bits with
// memory_key_mkey_entry at 0x80, mlx5_ifc_mkc_bits, mlx5_ifc_klm_bits,
// create_mkey_out mkey_index 0x48, destroy_mkey_in mkey_index 0x48,
// query_special_contexts_out null_mkey 0x80); DPDK 22.11 mlx5_prm.h agrees
// on every field it names.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/prm/mkey.hpp"
#include "common/prm/mkey_layout.hpp"
#include "common/prm/opcodes.hpp"

namespace mlx5async::prm {
namespace {

using Bytes = std::vector<std::byte>;

void put(Bytes& b, size_t at, std::initializer_list<uint8_t> v) {
    for (uint8_t x : v) b[at++] = std::byte{x};
}

// (name, offset, width) as read off mlx5_ifc.h, TSV style.
struct Row {
    const char* name;
    uint32_t off, width;
};
constexpr Row kMkcRows[] = {
    {"free", 0x1, 1},      {"access_mode_4_2", 0x3, 3}, {"umr_en", 0x10, 1},
    {"a", 0x11, 1},        {"rw", 0x12, 1},             {"rr", 0x13, 1},
    {"lw", 0x14, 1},       {"lr", 0x15, 1},             {"access_mode_1_0", 0x16, 2},
    {"qpn", 0x20, 24},     {"mkey_7_0", 0x38, 8},       {"length64", 0x60, 1},
    {"pd", 0x68, 24},      {"start_addr", 0x80, 64},    {"len", 0xc0, 64},
    {"bsf_octword_size", 0x100, 32}, {"translations_octword_size", 0x1a0, 32},
    {"log_page_size", 0x1db, 5},
};
constexpr Row kCreateInRows[] = {
    {"opcode", 0x0, 16}, {"uid", 0x10, 16}, {"op_mod", 0x30, 16}, {"pg_access", 0x60, 1},
    {"mkey_umem_valid", 0x61, 1}, {"translations_octword_actual_size", 0x300, 32},
    {"mkey_umem_id", 0x320, 32}, {"mkey_umem_offset", 0x340, 64},
};

void check_rows(const Layout& l, std::span<const Row> rows, uint32_t base = 0) {
    for (const Row& r : rows) {
        const Field* found = nullptr;
        for (const Field* f : l.fields)
            if (f->name == r.name && f->bit_offset == r.off + base) found = f;
        ASSERT_NE(found, nullptr) << l.name << "." << r.name;
        EXPECT_EQ(found->bit_width, r.width) << r.name;
    }
}

TEST(MkeyLayout, OffsetsMatchLinuxTable) {
    check_rows(layout::kMkc, kMkcRows);
    check_rows(layout::kCreateMkeyIn, kCreateInRows);
    check_rows(layout::kCreateMkeyIn, kMkcRows, 0x80);  // memory_key_mkey_entry
    check_rows(layout::kKlm, std::vector<Row>{{"byte_count", 0, 32}, {"mkey", 0x20, 32},
                                              {"address", 0x40, 64}});
    check_rows(layout::kCreateMkeyOut, std::vector<Row>{{"mkey_index", 0x48, 24}});
    check_rows(layout::kDestroyMkeyIn, std::vector<Row>{{"mkey_index", 0x48, 24}});
    check_rows(layout::kQuerySpecialContextsOut,
               std::vector<Row>{{"null_mkey", 0x80, 32}, {"resd_lkey", 0x60, 32}});
    EXPECT_EQ(layout::kCreateMkeyIn.bytes(), kCreateMkeyInBytes);
    EXPECT_EQ(kCreateMkeyInBytes, 272u);
}

TEST(MkeyGolden, DirectMttImage) {
    auto a = direct_mkey_attr(0x123456, 0x1000, 0x40000000, 0x200000, 0x4321);
    auto in = encode_create_mkey(a);
    ASSERT_TRUE(in);
    Bytes want(kCreateMkeyInBytes, std::byte{0});
    put(want, 0, {0x02, 0x00});             // opcode CREATE_MKEY
    put(want, 0x0c, {0x40});                // mkey_umem_valid (bit 0x61)
    put(want, 0x10, {0, 0, 0x0d, 0});       // lw 0x08, lr 0x04, access_mode_1_0 = MTT
    put(want, 0x14, {0xff, 0xff, 0xff, 0x56});  // qpn 0xffffff, mkey_7_0 = umem id low byte
    put(want, 0x1c, {0, 0, 0x43, 0x21});    // pd
    put(want, 0x20, {0, 0, 0, 0, 0x40, 0, 0, 0});  // start_addr
    put(want, 0x28, {0, 0, 0, 0, 0, 0x20, 0, 0});  // len
    put(want, 0x44, {0, 0, 0x01, 0});       // translations_octword_size 256 (512 pages / 2)
    put(want, 0x4b, {0x0c});                // log_page_size 12
    put(want, 0x60, {0, 0, 0x01, 0});       // translations_octword_actual_size
    put(want, 0x64, {0, 0x12, 0x34, 0x56}); // mkey_umem_id
    put(want, 0x68, {0, 0, 0, 0, 0, 0, 0x10, 0});  // mkey_umem_offset
    EXPECT_EQ(*in, want);
}

// The umem fields a chain step fills after the umem's registration: an
// image encoded with umem id 0, then filled, is the image encoded with it.
TEST(MkeyGolden, UmemFieldsFilledLaterGiveTheSameImage) {
    auto want = encode_create_mkey(direct_mkey_attr(0x123456, 0x1000, 0x40000000, 0x200000, 0x4321));
    auto in = encode_create_mkey(direct_mkey_attr(0, 0x1000, 0x40000000, 0x200000, 0x4321));
    ASSERT_TRUE(want && in);
    for (const Field& f : direct_mkey_umem_fields()) set_bits(*in, f.bit_offset, f.bit_width, 0x123456);
    EXPECT_EQ(*in, *want);
}

// The KLM mkey fields an indirect mkey's CREATE fills from the chunks'
// direct mkeys (index) and umems (variant byte): an image encoded with
// zeros, then filled, is the image encoded with the mkey values.
TEST(MkeyGolden, KlmMkeyFieldsFilledLaterGiveTheSameImage) {
    auto want = encode_create_mkey(indirect_mkey_attr(0, {{0x1000, 0xabcd01, 0}, {0x1000, 0x123456ef, 0x1000}}, 7));
    auto in = encode_create_mkey(indirect_mkey_attr(0, {{0x1000, 0, 0}, {0x1000, 0, 0x1000}}, 7));
    ASSERT_TRUE(want && in);
    const uint32_t mkeys[] = {0xabcd01, 0x123456ef};
    for (size_t k = 0; k < 2; k++) {
        const KlmMkeyFields f = klm_mkey_fields(k);
        set_bits(*in, f.index.bit_offset, f.index.bit_width, mkey_index_of(mkeys[k]));
        set_bits(*in, f.variant.bit_offset, f.variant.bit_width, mkeys[k] & 0xff);
    }
    EXPECT_EQ(*in, *want);
}

TEST(MkeyGolden, IndirectKlmImage) {
    auto a = indirect_mkey_attr(0x1000, {{0x3000, 0xabcd01, 0x1000}, {0x2000, 0xffffff00, 0x4000}}, 7);
    auto in = encode_create_mkey(a);
    ASSERT_TRUE(in);
    ASSERT_EQ(in->size(), create_mkey_in_bytes(2));
    Bytes want(create_mkey_in_bytes(2), std::byte{0});
    put(want, 0, {0x02, 0x00});
    put(want, 0x10, {0, 0, 0x0e, 0});       // lw, lr, access_mode_1_0 = KLM (2)
    put(want, 0x14, {0xff, 0xff, 0xff, 0x00});
    put(want, 0x1c, {0, 0, 0, 7});
    put(want, 0x20, {0, 0, 0, 0, 0, 0, 0x10, 0});
    put(want, 0x28, {0, 0, 0, 0, 0, 0, 0x50, 0});  // len = sum of byte counts
    put(want, 0x44, {0, 0, 0, 4});          // translations_octword_size aligned to 4
    put(want, 0x60, {0, 0, 0, 2});          // actual size: 2 KLMs
    put(want, 0x110, {0, 0, 0x30, 0, 0, 0xab, 0xcd, 0x01, 0, 0, 0, 0, 0, 0, 0x10, 0});
    put(want, 0x120, {0, 0, 0x20, 0, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0x40, 0});
    EXPECT_EQ(*in, want);
}

TEST(MkeyGolden, OutputsAndDestroy) {
    Bytes out(kCreateMkeyOutBytes, std::byte{0xee});
    encode_create_mkey_out(0xa1b2c3, out);
    Bytes want(kCreateMkeyOutBytes, std::byte{0});
    put(want, 9, {0xa1, 0xb2, 0xc3});
    EXPECT_EQ(out, want);
    EXPECT_EQ(*decode_create_mkey_out(out), 0xa1b2c3u);
    EXPECT_EQ(mkey_value(0xa1b2c3, 0x56), 0xa1b2c356u);
    EXPECT_EQ(mkey_index_of(0xa1b2c356), 0xa1b2c3u);

    Bytes din(kDestroyMkeyInBytes, std::byte{0xee});
    encode_destroy_mkey(0x10203, din);
    Bytes dwant(kDestroyMkeyInBytes, std::byte{0});
    put(dwant, 0, {0x02, 0x02});
    put(dwant, 9, {0x01, 0x02, 0x03});
    EXPECT_EQ(din, dwant);
    EXPECT_EQ(*decode_destroy_mkey_in(din), 0x10203u);

    Bytes q(kQuerySpecialContextsInBytes, std::byte{0xee});
    encode_query_special_contexts(q);
    EXPECT_EQ(q[0], std::byte{0x02});
    EXPECT_EQ(q[1], std::byte{0x03});
    Bytes qo(kQuerySpecialContextsOutBytes, std::byte{0xee});
    encode_query_special_contexts_out({1, 2, 0xffffff00, 4, 5}, qo);
    EXPECT_EQ(qo[16], std::byte{0xff});  // null_mkey at byte 0x10
    EXPECT_EQ(qo[19], std::byte{0x00});
    EXPECT_EQ(*decode_query_special_contexts_out(qo), (SpecialContexts{1, 2, 0xffffff00, 4, 5}));
}

TEST(MkeyRoundTrip, DirectAndIndirect) {
    auto d = direct_mkey_attr(0x42, 0x3000, 0x7000, 0x12345, 0x99);
    d.rw = d.rr = true;
    d.uid = 3;
    d.pg_access = true;
    auto in = encode_create_mkey(d);
    ASSERT_TRUE(in);
    EXPECT_EQ(*decode_create_mkey_in(*in), d);
    EXPECT_TRUE(create_mkey_in_nonzero_reserved(*in).empty());

    std::vector<KlmEntry> e;
    for (uint32_t i = 0; i < 9; i++) e.push_back({0x1000 * (i + 1), 0x100 + i, 0x10000ull * i});
    auto k = indirect_mkey_attr(0x555000, e, 0xabc);
    auto kin = encode_create_mkey(k);
    ASSERT_TRUE(kin);
    auto back = decode_create_mkey_in(*kin);
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, k);
    EXPECT_EQ(back->klm.size(), 9u);
}

TEST(MkeyErrors, ShortBuffersAndOverwideValues) {
    auto k = indirect_mkey_attr(0, {{0x1000, 1, 0}, {0x1000, 2, 0}}, 1);
    Bytes small(create_mkey_in_bytes(2) - 1);
    auto r = encode_create_mkey(k, small);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::ShortBuffer);

    auto in = *encode_create_mkey(k);
    in.resize(create_mkey_in_bytes(1));  // second KLM cut off
    auto d = decode_create_mkey_in(in);
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().code, Errc::ShortBuffer);
    EXPECT_FALSE(decode_create_mkey_in(Bytes(kCreateMkeyInBytes - 1)));
    EXPECT_FALSE(decode_create_mkey_out(Bytes(8)));
    EXPECT_FALSE(decode_destroy_mkey_in(Bytes(15)));
    EXPECT_FALSE(decode_query_special_contexts_out(Bytes(31)));

    auto wide = direct_mkey_attr(1, 0, 0, 0x1000, 1u << 24);  // pd is 24 bits
    auto w = encode_create_mkey(wide);
    ASSERT_FALSE(w);
    EXPECT_EQ(w.error().code, Errc::InvalidArgument);
    EXPECT_NE(w.error().what.find("pd"), std::string::npos) << w.error().what;

    auto mismatch = k;
    mismatch.translations_octword_actual_size = 5;
    EXPECT_FALSE(encode_create_mkey(mismatch));
    auto mtt_with_klm = direct_mkey_attr(1, 0, 0, 0x1000, 1);
    mtt_with_klm.klm.push_back({1, 2, 3});
    EXPECT_FALSE(encode_create_mkey(mtt_with_klm));
}

TEST(MkeyErrors, FirmwareStatusAndReservedBits) {
    Bytes out(kCreateMkeyOutBytes, std::byte{0});
    out[0] = std::byte{0x5};
    out[7] = std::byte{0x9};
    auto e = decode_create_mkey_out(out);
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().code, Errc::Firmware);
    EXPECT_EQ(e.error().syndrome, 9u);
    EXPECT_EQ(e.error().opcode, uint16_t(Opcode::CREATE_MKEY));

    auto in = *encode_create_mkey(direct_mkey_attr(1, 0, 0, 0x1000, 1));
    in[0x50] = std::byte{1};  // reserved_at_280
    EXPECT_EQ(create_mkey_in_nonzero_reserved(in), "reserved_at_280");
    EXPECT_EQ(create_mkey_in_nonzero_reserved(Bytes(10)), "create_mkey_in (short buffer)");
}

}  // namespace
}  // namespace mlx5async::prm
