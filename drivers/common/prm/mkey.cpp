#include "mkey.hpp"

#include <string>

#include "codec_util.hpp"
#include "general_obj.hpp"
#include "general_obj_layout.hpp"
#include "mkey_layout.hpp"
#include "opcodes.hpp"

namespace mlx5async::prm {

namespace In = layout::create_mkey_in;
namespace M = layout::mkc;
using detail::bind;
using detail::need_bytes;

namespace {

using A = MkeyAttr;
using Binding = detail::Binding<MkeyAttr>;

constexpr const Field& at(const Field& f) { return In::in_mkc(f); }

// access_mode is split over two mkc fields: bound separately below.
constexpr Binding kBindings[] = {
    bind<&A::uid>(In::uid),
    bind<&A::pg_access>(In::pg_access),
    bind<&A::umem_valid>(In::mkey_umem_valid),
    bind<&A::translations_octword_actual_size>(In::translations_octword_actual_size),
    bind<&A::umem_id>(In::mkey_umem_id),
    bind<&A::umem_offset>(In::mkey_umem_offset),
    bind<&A::umr_en>(at(M::umr_en)),
    bind<&A::a>(at(M::a)),
    bind<&A::rw>(at(M::rw)),
    bind<&A::rr>(at(M::rr)),
    bind<&A::lw>(at(M::lw)),
    bind<&A::lr>(at(M::lr)),
    bind<&A::qpn>(at(M::qpn)),
    bind<&A::mkey_7_0>(at(M::mkey_7_0)),
    bind<&A::length64>(at(M::length64)),
    bind<&A::pd>(at(M::pd)),
    bind<&A::start_addr>(at(M::start_addr)),
    bind<&A::len>(at(M::len)),
    bind<&A::translations_octword_size>(at(M::translations_octword_size)),
    bind<&A::log_page_size>(at(M::log_page_size)),
};

Result<void> invalid(std::string what) { return fail(Errc::InvalidArgument, std::move(what)); }

Result<void> check_encodable(const MkeyAttr& a) {
    if (const Binding* b = detail::first_overwide(kBindings, a))
        return invalid("create_mkey_in." + std::string(b->field->name) + ": value " +
                       detail::hex(b->get(a)) + " does not fit " +
                       std::to_string(b->field->bit_width) + " bits");
    if (uint8_t(a.access_mode) > 0x1f) return invalid("create_mkey_in.mkc.access_mode: over 5 bits");
    bool listed = a.access_mode == MkeyAccessMode::KLM || a.access_mode == MkeyAccessMode::KSM;
    if (!listed && !a.klm.empty())
        return invalid("create_mkey_in: KLM entries with access mode " +
                       std::to_string(unsigned(a.access_mode)));
    if (listed && a.translations_octword_actual_size != a.klm.size())
        return invalid("create_mkey_in.translations_octword_actual_size: " +
                       std::to_string(a.translations_octword_actual_size) + " for " +
                       std::to_string(a.klm.size()) + " KLM entries");
    return {};
}

void write_klm(const KlmEntry& k, std::span<std::byte> e) {
    set<layout::klm::byte_count>(e, k.byte_count);
    set<layout::klm::mkey>(e, k.mkey);
    set<layout::klm::address>(e, k.address);
}

KlmEntry read_klm(std::span<const std::byte> e) {
    return {uint32_t(get<layout::klm::byte_count>(e)), uint32_t(get<layout::klm::mkey>(e)),
            get<layout::klm::address>(e)};
}

}  // namespace

std::span<const Field> direct_mkey_umem_fields() {
    static constexpr Field kFields[] = {In::mkey_umem_id, at(M::mkey_7_0)};
    return kFields;
}

KlmMkeyFields klm_mkey_fields(size_t entry) {
    const uint32_t at = uint32_t(kCreateMkeyInBytes * 8 + entry * kKlmBytes * 8) + layout::klm::mkey.bit_offset;
    return {{"klm.mkey_index", at, 24}, {"klm.mkey_7_0", at + 24, 8}};
}

MkeyAttr direct_mkey_attr(uint32_t umem_id, uint64_t umem_offset, uint64_t start_addr,
                          uint64_t len, uint32_t pd) {
    constexpr uint64_t kPage = 1ull << kMkeyPageShift;
    MkeyAttr a;
    a.access_mode = MkeyAccessMode::MTT;
    a.umem_valid = true;
    a.umem_id = umem_id;
    a.umem_offset = umem_offset;
    a.mkey_7_0 = uint8_t(umem_id & 0xff);
    a.pd = pd;
    a.start_addr = start_addr;
    a.len = len;
    // One 8-byte MTT entry per page, two per octword.
    uint64_t pages = (len + kPage - 1) / kPage;
    a.translations_octword_size = uint32_t((pages + 1) / 2);
    a.translations_octword_actual_size = a.translations_octword_size;
    a.log_page_size = kMkeyPageShift;
    return a;
}

MkeyAttr indirect_mkey_attr(uint64_t start_addr, std::vector<KlmEntry> entries, uint32_t pd) {
    MkeyAttr a;
    a.access_mode = MkeyAccessMode::KLM;
    a.pd = pd;
    a.start_addr = start_addr;
    for (const KlmEntry& e : entries) a.len += e.byte_count;
    a.translations_octword_actual_size = uint32_t(entries.size());
    a.translations_octword_size = uint32_t((entries.size() + 3) / 4 * 4);  // DPDK aligns to 4
    a.klm = std::move(entries);
    return a;
}

Result<void> encode_create_mkey(const MkeyAttr& a, std::span<std::byte> in) {
    size_t want = create_mkey_in_bytes(a.klm.size());
    if (in.size() < want)
        return fail(Errc::ShortBuffer, "create_mkey_in: buffer of " + std::to_string(in.size()) +
                                           " bytes, need " + std::to_string(want));
    MLX5A_CHECK(check_encodable(a));
    detail::zero(in, want);
    set<In::opcode>(in, uint16_t(Opcode::CREATE_MKEY));
    detail::write_bound(kBindings, a, in);
    detail::set_field(in, at(M::access_mode_1_0), uint8_t(a.access_mode) & 0x3);
    detail::set_field(in, at(M::access_mode_4_2), uint8_t(a.access_mode) >> 2);
    for (size_t i = 0; i < a.klm.size(); ++i)
        write_klm(a.klm[i], in.subspan(kCreateMkeyInBytes + i * kKlmBytes, kKlmBytes));
    return {};
}

Result<std::vector<std::byte>> encode_create_mkey(const MkeyAttr& a) {
    std::vector<std::byte> in(create_mkey_in_bytes(a.klm.size()));
    MLX5A_CHECK(encode_create_mkey(a, in));
    return in;
}

Result<MkeyAttr> decode_create_mkey_in(std::span<const std::byte> in) {
    MLX5A_CHECK(need_bytes(in, kCreateMkeyInBytes, "create_mkey_in"));
    MkeyAttr a = detail::read_bound(kBindings, in);
    a.access_mode = MkeyAccessMode(detail::get_field(in, at(M::access_mode_1_0)) |
                                   (detail::get_field(in, at(M::access_mode_4_2)) << 2));
    if (a.access_mode != MkeyAccessMode::KLM && a.access_mode != MkeyAccessMode::KSM) return a;
    size_t n = a.translations_octword_actual_size;
    if (n > (in.size() - kCreateMkeyInBytes) / kKlmBytes)
        return fail(Errc::ShortBuffer, "create_mkey_in.klm_pas_mtt: " + std::to_string(n) +
                                           " entries need " +
                                           std::to_string(create_mkey_in_bytes(n)) +
                                           " bytes, buffer of " + std::to_string(in.size()));
    a.klm.reserve(n);
    for (size_t i = 0; i < n; ++i)
        a.klm.push_back(read_klm(in.subspan(kCreateMkeyInBytes + i * kKlmBytes, kKlmBytes)));
    return a;
}

std::string_view create_mkey_in_nonzero_reserved(std::span<const std::byte> in) {
    if (in.size() < kCreateMkeyInBytes) return "create_mkey_in (short buffer)";
    for (const Field* f : In::kFields)
        if (f->reserved() && !bits_zero(in, *f)) return f->name;
    return {};
}

void encode_create_mkey_out(uint32_t mkey_index, std::span<std::byte> out) {
    detail::require_bytes(out, kCreateMkeyOutBytes, "create_mkey_out");
    detail::zero(out, kCreateMkeyOutBytes);
    set<layout::create_mkey_out::mkey_index>(out, mkey_index);
}

Result<uint32_t> decode_create_mkey_out(std::span<const std::byte> out) {
    constexpr auto kOp = uint16_t(Opcode::CREATE_MKEY);
    MLX5A_CHECK(check_out(out, kOp, 0));
    MLX5A_CHECK(need_bytes(out, kCreateMkeyOutBytes, "create_mkey_out"));
    return uint32_t(get<layout::create_mkey_out::mkey_index>(out));
}

void encode_destroy_mkey(uint32_t mkey_index, std::span<std::byte> in) {
    detail::require_bytes(in, kDestroyMkeyInBytes, "destroy_mkey_in");
    detail::zero(in, kDestroyMkeyInBytes);
    set<layout::destroy_mkey_in::opcode>(in, uint16_t(Opcode::DESTROY_MKEY));
    set<layout::destroy_mkey_in::mkey_index>(in, mkey_index);
}

Result<uint32_t> decode_destroy_mkey_in(std::span<const std::byte> in) {
    MLX5A_CHECK(need_bytes(in, kDestroyMkeyInBytes, "destroy_mkey_in"));
    return uint32_t(get<layout::destroy_mkey_in::mkey_index>(in));
}

void encode_query_special_contexts(std::span<std::byte> in) {
    detail::require_bytes(in, kQuerySpecialContextsInBytes, "query_special_contexts_in");
    detail::zero(in, kQuerySpecialContextsInBytes);
    set<layout::mbox_in::opcode>(in, uint16_t(Opcode::QUERY_SPECIAL_CONTEXTS));
}

namespace Q = layout::query_special_contexts_out;

void encode_query_special_contexts_out(const SpecialContexts& s, std::span<std::byte> out) {
    detail::require_bytes(out, kQuerySpecialContextsOutBytes, "query_special_contexts_out");
    detail::zero(out, kQuerySpecialContextsOutBytes);
    set<Q::dump_fill_mkey>(out, s.dump_fill_mkey);
    set<Q::resd_lkey>(out, s.resd_lkey);
    set<Q::null_mkey>(out, s.null_mkey);
    set<Q::terminate_scatter_list_mkey>(out, s.terminate_scatter_list_mkey);
    set<Q::repeated_mkey>(out, s.repeated_mkey);
}

Result<SpecialContexts> decode_query_special_contexts_out(std::span<const std::byte> out) {
    MLX5A_CHECK(check_out(out, uint16_t(Opcode::QUERY_SPECIAL_CONTEXTS), 0));
    MLX5A_CHECK(need_bytes(out, kQuerySpecialContextsOutBytes, "query_special_contexts_out"));
    SpecialContexts s;
    s.dump_fill_mkey = uint32_t(get<Q::dump_fill_mkey>(out));
    s.resd_lkey = uint32_t(get<Q::resd_lkey>(out));
    s.null_mkey = uint32_t(get<Q::null_mkey>(out));
    s.terminate_scatter_list_mkey = uint32_t(get<Q::terminate_scatter_list_mkey>(out));
    s.repeated_mkey = uint32_t(get<Q::repeated_mkey>(out));
    return s;
}

}  // namespace mlx5async::prm
