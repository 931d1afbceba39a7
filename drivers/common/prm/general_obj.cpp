#include "general_obj.hpp"

#include "codec_util.hpp"
#include "general_obj_layout.hpp"
#include "opcodes.hpp"
#include "status.hpp"

namespace mlx5async::prm {

namespace in = layout::general_obj_in_cmd_hdr;
namespace out = layout::general_obj_out_cmd_hdr;
using detail::need_bytes;

static_assert(layout::kGeneralObjInCmdHdr.bytes() == kGeneralObjInHdrBytes);
static_assert(layout::kGeneralObjOutCmdHdr.bytes() == kGeneralObjOutHdrBytes);

// Typed fields are narrower than or equal to their PRM fields, except
// log_obj_range (5 bits): its high bits are dropped, as documented by width.
void write_general_obj_in(const GeneralObjIn& h, std::span<std::byte> buf) {
    detail::require_bytes(buf, kGeneralObjInHdrBytes, "general_obj_in_cmd_hdr");
    detail::zero(buf, kGeneralObjInHdrBytes);
    set<in::opcode>(buf, h.opcode);
    set<in::uid>(buf, h.uid);
    set<in::vhca_tunnel_id>(buf, h.vhca_tunnel_id);
    set<in::obj_type>(buf, h.obj_type);
    set<in::obj_id>(buf, h.obj_id);
    set<in::log_obj_range>(buf, h.log_obj_range);
}

Result<GeneralObjIn> read_general_obj_in(std::span<const std::byte> buf) {
    MLX5A_CHECK(need_bytes(buf, kGeneralObjInHdrBytes, "general_obj_in_cmd_hdr"));
    GeneralObjIn h;
    h.opcode = uint16_t(get<in::opcode>(buf));
    h.uid = uint16_t(get<in::uid>(buf));
    h.vhca_tunnel_id = uint16_t(get<in::vhca_tunnel_id>(buf));
    h.obj_type = uint16_t(get<in::obj_type>(buf));
    h.obj_id = uint32_t(get<in::obj_id>(buf));
    h.log_obj_range = uint8_t(get<in::log_obj_range>(buf));
    return h;
}

void write_general_obj_out(const GeneralObjOut& h, std::span<std::byte> buf) {
    detail::require_bytes(buf, kGeneralObjOutHdrBytes, "general_obj_out_cmd_hdr");
    detail::zero(buf, kGeneralObjOutHdrBytes);
    set<out::status>(buf, h.status);
    set<out::syndrome>(buf, h.syndrome);
    set<out::obj_id>(buf, h.obj_id);
}

Result<GeneralObjOut> read_general_obj_out(std::span<const std::byte> buf) {
    MLX5A_CHECK(need_bytes(buf, kGeneralObjOutHdrBytes, "general_obj_out_cmd_hdr"));
    GeneralObjOut h;
    h.status = uint8_t(get<out::status>(buf));
    h.syndrome = uint32_t(get<out::syndrome>(buf));
    h.obj_id = uint32_t(get<out::obj_id>(buf));
    return h;
}

Result<uint16_t> read_opcode(std::span<const std::byte> buf) {
    MLX5A_CHECK(need_bytes(buf, 4, "mbox_in (opcode)"));
    return uint16_t(get<layout::mbox_in::opcode>(buf));
}

Result<uint16_t> read_op_mod(std::span<const std::byte> buf) {
    MLX5A_CHECK(need_bytes(buf, layout::kMboxIn.bytes(), "mbox_in (op_mod)"));
    return uint16_t(get<layout::mbox_in::op_mod>(buf));
}

Result<void> check_out(std::span<const std::byte> buf, uint16_t opcode, uint32_t obj_id,
                       int queue) {
    if (auto r = need_bytes(buf, layout::kMboxOut.bytes(), "mbox_out"); !r) {
        Error e = r.error();
        e.opcode = opcode;
        e.obj_id = obj_id;
        e.queue = queue;
        return unexpected(std::move(e));
    }
    auto status = uint8_t(get<layout::mbox_out::status>(buf));
    if (status == uint8_t(Status::OK)) return {};
    return unexpected(firmware_error(status, uint32_t(get<layout::mbox_out::syndrome>(buf)),
                                     opcode, obj_id, queue));
}

void encode_destroy_general_obj(uint16_t obj_type, uint32_t obj_id, std::span<std::byte> buf) {
    GeneralObjIn h;
    h.opcode = uint16_t(Opcode::DESTROY_GENERAL_OBJECT);
    h.obj_type = obj_type;
    h.obj_id = obj_id;
    write_general_obj_in(h, buf);
}

}  // namespace mlx5async::prm
