#include "virtq.hpp"

#include <array>
#include <string>
#include <type_traits>

#include "codec_util.hpp"
#include "opcodes.hpp"
#include "virtq_layout.hpp"

namespace mlx5async::prm {

namespace L = layout::virtio_net_q_object;
using detail::need_bytes;

static_assert(layout::kVirtioNetQObject.bytes() == kVirtqObjBytes);

const char* virtq_state_name(VirtqState s) noexcept {
    switch (s) {
    case VirtqState::INIT: return "INIT";
    case VirtqState::RDY: return "RDY";
    case VirtqState::SUSPEND: return "SUSPEND";
    case VirtqState::ERR: return "ERR";
    }
    return "UNKNOWN_STATE";
}

namespace {
// Virtio-net feature bit (virtio 1.x §5.1.3) -> PRM mask bit (Linux
// mlx5_vnet.c's mapping).
struct FeatureMap {
    unsigned virtio_bit, prm_bit;
};
constexpr FeatureMap kFeatureMap[] = {
    {15, queue_feature_bits::MRG_RXBUF},  {13, queue_feature_bits::HOST_ECN},
    {9, queue_feature_bits::GUEST_ECN},   {8, queue_feature_bits::GUEST_TSO6},
    {7, queue_feature_bits::GUEST_TSO4},  {1, queue_feature_bits::GUEST_CSUM},
    {0, queue_feature_bits::CSUM},        {12, queue_feature_bits::HOST_TSO6},
    {11, queue_feature_bits::HOST_TSO4},
};
}  // namespace

uint16_t queue_feature_mask(uint64_t f) noexcept {
    uint16_t mask = 0;
    for (const FeatureMap& m : kFeatureMap)
        if ((f >> m.virtio_bit) & 1) mask |= uint16_t(1u << m.prm_bit);
    return mask;
}

uint64_t virtio_net_features_of(uint16_t mask) noexcept {
    uint64_t f = 0;
    for (const FeatureMap& m : kFeatureMap)
        if ((mask >> m.prm_bit) & 1) f |= 1ull << m.virtio_bit;
    return f;
}

namespace {

using detail::bind;
using Binding = detail::Binding<VirtqAttr>;

template <size_t N, auto M>
constexpr Binding bind_umem(const Field& f) {
    return {&f, [](const VirtqAttr& a) { return static_cast<uint64_t>(a.umem[N].*M); },
            [](VirtqAttr& a, uint64_t v) {
                a.umem[N].*M = static_cast<std::remove_cvref_t<decltype(a.umem[N].*M)>>(v);
            }};
}

using A = VirtqAttr;
using U = VirtqUmem;
constexpr Binding kBindings[] = {
    bind<&A::modify_field_select>(L::modify_field_select),
    bind<&A::vhca_id>(L::vhca_id),
    bind<&A::queue_feature_bit_mask_12_3>(L::queue_feature_bit_mask_12_3),
    bind<&A::dirty_bitmap_dump_enable>(L::dirty_bitmap_dump_enable),
    bind<&A::vhost_log_page>(L::vhost_log_page),
    bind<&A::state>(L::state),
    bind<&A::queue_feature_bit_mask_2_0>(L::queue_feature_bit_mask_2_0),
    bind<&A::tisn_or_qpn>(L::tisn_or_qpn),
    bind<&A::dirty_bitmap_mkey>(L::dirty_bitmap_mkey),
    bind<&A::dirty_bitmap_size>(L::dirty_bitmap_size),
    bind<&A::dirty_bitmap_addr>(L::dirty_bitmap_addr),
    bind<&A::hw_available_index>(L::hw_available_index),
    bind<&A::hw_used_index>(L::hw_used_index),
    bind<&A::virtio_q_type>(L::virtio_q_type),
    bind<&A::event_mode>(L::event_mode),
    bind<&A::queue_index>(L::queue_index),
    bind<&A::full_emulation>(L::full_emulation),
    bind<&A::virtio_version_1_0>(L::virtio_version_1_0),
    bind<&A::offload_type>(L::offload_type),
    bind<&A::event_qpn_or_msix>(L::event_qpn_or_msix),
    bind<&A::doorbell_stride_index>(L::doorbell_stride_index),
    bind<&A::queue_size>(L::queue_size),
    bind<&A::device_emulation_id>(L::device_emulation_id),
    bind<&A::desc_addr>(L::desc_addr),
    bind<&A::used_addr>(L::used_addr),
    bind<&A::available_addr>(L::available_addr),
    bind<&A::virtio_q_mkey>(L::virtio_q_mkey),
    bind<&A::max_tunnel_desc>(L::max_tunnel_desc),
    bind<&A::error_type>(L::error_type),
    bind_umem<0, &U::id>(L::umem_1_id),
    bind_umem<0, &U::size>(L::umem_1_size),
    bind_umem<0, &U::offset>(L::umem_1_offset),
    bind_umem<1, &U::id>(L::umem_2_id),
    bind_umem<1, &U::size>(L::umem_2_size),
    bind_umem<1, &U::offset>(L::umem_2_offset),
    bind_umem<2, &U::id>(L::umem_3_id),
    bind_umem<2, &U::size>(L::umem_3_size),
    bind_umem<2, &U::offset>(L::umem_3_offset),
    bind<&A::counter_set_id>(L::counter_set_id),
    bind<&A::pd>(L::pd),
    bind<&A::queue_period_mode>(L::dpdk::queue_period_mode),
    bind<&A::queue_period_us>(L::dpdk::queue_period_us),
    bind<&A::queue_max_count>(L::dpdk::queue_max_count),
    bind<&A::desc_group_mkey>(L::desc_group_mkey),
};

// Every value field of the Linux table is bound, plus the carried DPDK ones.
static_assert(detail::binds_all_values(kBindings, layout::kVirtioNetQObject,
                                       std::size(L::kCarried)));

std::string qualified(const Field& f) {
    std::string s = "virtio_net_q_object.";
    if (f.bit_offset >= L::kContext) s += "virtio_q_context.";
    return s + std::string(f.name);
}

Result<void> write_hdr_and_object(uint16_t opcode, uint32_t obj_id, const VirtqAttr& a,
                                  std::span<std::byte> in) {
    if (in.size() < kVirtqCmdInBytes)
        return fail(Errc::ShortBuffer, std::string(opcode_name(opcode)) +
                                           " virtio_net_q_object: buffer of " +
                                           std::to_string(in.size()) + " bytes, need " +
                                           std::to_string(kVirtqCmdInBytes));
    GeneralObjIn h;
    h.opcode = opcode;
    h.obj_type = uint16_t(ObjType::VIRTIO_NET_Q);
    h.obj_id = obj_id;
    write_general_obj_in(h, in);
    return write_virtq_object(a, in.subspan(kGeneralObjInHdrBytes));
}

}  // namespace

Result<void> write_virtq_object(const VirtqAttr& a, std::span<std::byte> obj) {
    if (obj.size() < kVirtqObjBytes)
        return fail(Errc::ShortBuffer, "virtio_net_q_object: buffer of " +
                                           std::to_string(obj.size()) + " bytes, need " +
                                           std::to_string(kVirtqObjBytes));
    if (const Binding* b = detail::first_overwide(kBindings, a))
        return fail(Errc::InvalidArgument,
                    qualified(*b->field) + ": value " + detail::hex(b->get(a)) +
                        " does not fit " + std::to_string(b->field->bit_width) + " bits");
    detail::zero(obj, kVirtqObjBytes);
    detail::write_bound(kBindings, a, obj);
    return {};
}

Result<VirtqAttr> read_virtq_object(std::span<const std::byte> obj) {
    MLX5A_CHECK(need_bytes(obj, kVirtqObjBytes, "virtio_net_q_object"));
    return detail::read_bound(kBindings, obj);
}

namespace {

// The bits of virtio_net_q_object that must be zero: its reserved fields,
// less those DPDK's layout carries values in. Built once: the emulator
// checks every MODIFY against it (the field-by-field scan was the costliest
// function of a zero-latency batch).
const std::array<std::byte, kVirtqObjBytes>& virtq_reserved_mask() {
    static const auto mask = [] {
        std::array<std::byte, kVirtqObjBytes> m{};
        for (const Field* f : layout::kVirtioNetQObject.fields) {
            if (!f->reserved()) continue;
            for (uint32_t o = f->bit_offset; o < f->end();) {
                uint32_t w = std::min<uint32_t>(f->end() - o, 32 - (o % 32));
                set_bits(m, o, w, width_mask(w));
                o += w;
            }
        }
        for (const Field* f : L::kCarried) detail::set_field(m, *f, 0);
        return m;
    }();
    return mask;
}

}  // namespace

std::string_view virtq_object_nonzero_reserved(std::span<const std::byte> obj) {
    if (obj.size() < kVirtqObjBytes) return "virtio_net_q_object (short buffer)";
    const auto& mask = virtq_reserved_mask();
    std::byte any{0};
    for (size_t i = 0; i < kVirtqObjBytes; ++i) any |= obj[i] & mask[i];
    if (any == std::byte{0}) return {};
    // Which field, for the error: the scan, on a copy without the carried values.
    std::array<std::byte, kVirtqObjBytes> copy;
    std::copy_n(obj.begin(), kVirtqObjBytes, copy.begin());
    // DPDK's queue_period_* live in Linux's reserved_at_340: values, not padding.
    for (const Field* f : L::kCarried) detail::set_field(copy, *f, 0);
    const Field* f = first_nonzero_reserved(layout::kVirtioNetQObject, copy);
    return f ? f->name : std::string_view{};
}

const VirtqCreateIdFields& virtq_create_id_fields() {
    constexpr uint32_t kObj = uint32_t(kGeneralObjInHdrBytes * 8);  // the object after the header
    static const VirtqCreateIdFields f{
        {L::umem_1_id.at(kObj), L::umem_2_id.at(kObj), L::umem_3_id.at(kObj)},
        L::counter_set_id.at(kObj),
        L::event_qpn_or_msix.at(kObj)};
    return f;
}

Result<void> encode_create_virtq(const VirtqAttr& a, std::span<std::byte> in) {
    return write_hdr_and_object(uint16_t(Opcode::CREATE_GENERAL_OBJECT), 0, a, in);
}

Result<void> encode_modify_virtq(uint32_t obj_id, const VirtqAttr& a, std::span<std::byte> in) {
    if (uint64_t unknown = a.modify_field_select & ~modify_bits::kAllKnown) {
        return fail(Errc::InvalidArgument,
                    "virtio_net_q_object.modify_field_select: unknown bits " + detail::hex(unknown));
    }
    return write_hdr_and_object(uint16_t(Opcode::MODIFY_GENERAL_OBJECT), obj_id, a, in);
}

void encode_query_virtq(uint32_t obj_id, std::span<std::byte> in) {
    GeneralObjIn h;
    h.opcode = uint16_t(Opcode::QUERY_GENERAL_OBJECT);
    h.obj_type = uint16_t(ObjType::VIRTIO_NET_Q);
    h.obj_id = obj_id;
    write_general_obj_in(h, in);
}

Result<VirtqAttr> decode_query_virtq_out(std::span<const std::byte> out, uint32_t obj_id,
                                         int queue) {
    constexpr auto kOp = uint16_t(Opcode::QUERY_GENERAL_OBJECT);
    MLX5A_CHECK(check_out(out, kOp, obj_id, queue));
    auto r = need_bytes(out, kVirtqQueryOutBytes, "QUERY_GENERAL_OBJECT virtio_net_q_object out");
    if (!r) {
        Error e = r.error();
        e.opcode = kOp;
        e.obj_id = obj_id;
        e.queue = queue;
        return unexpected(std::move(e));
    }
    return read_virtq_object(out.subspan(kGeneralObjOutHdrBytes));
}

}  // namespace mlx5async::prm
