#include "counters.hpp"

#include "codec_util.hpp"
#include "counters_layout.hpp"
#include "opcodes.hpp"

namespace mlx5async::prm {

namespace C = layout::virtio_q_counters;
using detail::bind;
using detail::need_bytes;

static_assert(layout::kVirtioQCounters.bytes() == kCountersObjBytes);

namespace {

using VQC = VirtqCounters;
// modify_field_select is not a counter: written 0, not read back.
constexpr detail::Binding<VQC> kCounters[] = {
    bind<&VQC::received_desc>(C::received_desc),
    bind<&VQC::completed_desc>(C::completed_desc),
    bind<&VQC::error_cqes>(C::error_cqes),
    bind<&VQC::bad_desc_errors>(C::bad_desc_errors),
    bind<&VQC::exceed_max_chain>(C::exceed_max_chain),
    bind<&VQC::invalid_buffer>(C::invalid_buffer),
};

GeneralObjIn counters_hdr(Opcode op, uint32_t obj_id) {
    GeneralObjIn h;
    h.opcode = uint16_t(op);
    h.obj_type = uint16_t(ObjType::VIRTIO_Q_COUNTERS);
    h.obj_id = obj_id;
    return h;
}

}  // namespace

// Every member is exactly as wide as its field, so nothing can overflow.
void write_counters_object(const VirtqCounters& c, std::span<std::byte> obj) {
    detail::require_bytes(obj, kCountersObjBytes, "virtio_q_counters");
    detail::zero(obj, kCountersObjBytes);
    detail::write_bound(kCounters, c, obj);
}

Result<VirtqCounters> read_counters_object(std::span<const std::byte> obj) {
    MLX5A_CHECK(need_bytes(obj, kCountersObjBytes, "virtio_q_counters"));
    return detail::read_bound(kCounters, obj);
}

// CREATE carries an all-zero object (no attribute of it is settable).
void encode_create_counters(std::span<std::byte> in) {
    detail::require_bytes(in, kCountersCreateInBytes, "CREATE_GENERAL_OBJECT virtio_q_counters");
    write_general_obj_in(counters_hdr(Opcode::CREATE_GENERAL_OBJECT, 0), in);
    detail::zero(in.subspan(kGeneralObjInHdrBytes), kCountersObjBytes);
}

void encode_query_counters(uint32_t obj_id, std::span<std::byte> in) {
    write_general_obj_in(counters_hdr(Opcode::QUERY_GENERAL_OBJECT, obj_id), in);
}

Result<VirtqCounters> decode_query_counters_out(std::span<const std::byte> out, uint32_t obj_id) {
    constexpr auto kOp = uint16_t(Opcode::QUERY_GENERAL_OBJECT);
    MLX5A_CHECK(check_out(out, kOp, obj_id));
    if (auto r = need_bytes(out, kCountersQueryOutBytes, "QUERY_GENERAL_OBJECT virtio_q_counters out");
        !r) {
        Error e = r.error();
        e.opcode = kOp;
        e.obj_id = obj_id;
        return unexpected(std::move(e));
    }
    return read_counters_object(out.subspan(kGeneralObjOutHdrBytes));
}

}  // namespace mlx5async::prm
