#include "dispatch.hpp"

#include <cstring>

#include "common/prm/field.hpp"
#include "common/prm/general_obj.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"
#include "syndrome.hpp"

namespace mlx5async::emu {
namespace {

using prm::ObjType;
using prm::Opcode;

constexpr uint16_t op(Opcode o) { return uint16_t(o); }
constexpr uint16_t ty(ObjType t) { return uint16_t(t); }

constexpr Route kRoutes[] = {
    {op(Opcode::QUERY_HCA_CAP), kAnyObjType, &h_query_hca_cap},
    {op(Opcode::CREATE_MKEY), kAnyObjType, &h_create_mkey},
    {op(Opcode::DESTROY_MKEY), kAnyObjType, &h_destroy_mkey},
    {op(Opcode::QUERY_SPECIAL_CONTEXTS), kAnyObjType, &h_query_special_contexts},
    {op(Opcode::QUERY_NIC_VPORT_CONTEXT), kAnyObjType, &h_query_nic_vport_context},
    {op(Opcode::ALLOC_TRANSPORT_DOMAIN), kAnyObjType, &h_alloc_transport_domain},
    {op(Opcode::DEALLOC_TRANSPORT_DOMAIN), kAnyObjType, &h_dealloc_transport_domain},
    {op(Opcode::CREATE_TIS), kAnyObjType, &h_create_tis},
    {op(Opcode::DESTROY_TIS), kAnyObjType, &h_destroy_tis},
    {op(Opcode::CREATE_CQ), kAnyObjType, &h_create_cq},
    {op(Opcode::DESTROY_CQ), kAnyObjType, &h_destroy_cq},
    {op(Opcode::CREATE_QP), kAnyObjType, &h_create_qp},
    {op(Opcode::DESTROY_QP), kAnyObjType, &h_destroy_qp},
    {op(Opcode::RST2INIT_QP), kAnyObjType, &h_modify_qp},
    {op(Opcode::INIT2RTR_QP), kAnyObjType, &h_modify_qp},
    {op(Opcode::RTR2RTS_QP), kAnyObjType, &h_modify_qp},
    {op(Opcode::CREATE_SQ), kAnyObjType, &h_create_sq},
    {op(Opcode::MODIFY_SQ), kAnyObjType, &h_modify_sq},
    {op(Opcode::DESTROY_SQ), kAnyObjType, &h_destroy_sq},
    {op(Opcode::CREATE_GENERAL_OBJECT), ty(ObjType::VIRTIO_NET_Q), &h_create_virtq},
    {op(Opcode::MODIFY_GENERAL_OBJECT), ty(ObjType::VIRTIO_NET_Q), &h_modify_virtq},
    {op(Opcode::QUERY_GENERAL_OBJECT), ty(ObjType::VIRTIO_NET_Q), &h_query_virtq},
    {op(Opcode::DESTROY_GENERAL_OBJECT), ty(ObjType::VIRTIO_NET_Q), &h_destroy_virtq},
    {op(Opcode::CREATE_GENERAL_OBJECT), ty(ObjType::VIRTIO_Q_COUNTERS), &h_create_counters},
    {op(Opcode::QUERY_GENERAL_OBJECT), ty(ObjType::VIRTIO_Q_COUNTERS), &h_query_counters},
    {op(Opcode::DESTROY_GENERAL_OBJECT), ty(ObjType::VIRTIO_Q_COUNTERS), &h_destroy_counters},
};

bool is_general_obj_opcode(uint16_t opcode) {
    return opcode >= op(Opcode::CREATE_GENERAL_OBJECT) &&
           opcode <= op(Opcode::DESTROY_GENERAL_OBJECT);
}

// The route for the command, or a BAD_OP_ERR / BAD_PARAM_ERR failure.
Result<Handler> route(std::span<const std::byte> in) {
    uint16_t opcode = uint16_t(prm::get_bits(in, 0, 16));
    bool general = is_general_obj_opcode(opcode);
    uint16_t obj_type = general ? uint16_t(prm::get_bits(in, 48, 16)) : kAnyObjType;
    bool opcode_known = false;
    for (const Route& r : kRoutes) {
        if (r.opcode != opcode) continue;
        opcode_known = true;
        if (r.obj_type == obj_type) return r.fn;
    }
    if (!opcode_known)
        return fw_fail(prm::Status::BAD_OP_ERR, syndrome::kBadOpcode, "unknown opcode");
    return fw_fail(prm::Status::BAD_PARAM_ERR, syndrome::kBadObjType, "unsupported obj_type");
}

}  // namespace

void write_failure(std::span<std::byte> out, uint8_t status, uint32_t syndrome) {
    std::memset(out.data(), 0, out.size());
    prm::set_bits(out, 0, 8, status);
    prm::set_bits(out, 32, 32, syndrome);
}

Result<void> check_general_obj_hdr(std::span<const std::byte> in) {
    // op_param (bits 0x60..0x7f) is unused by the objects emulated here.
    if (prm::get_bits(in, 96, 32) != 0)
        return fw_fail(prm::Status::BAD_PARAM_ERR, syndrome::kHdrReservedNonZero,
                       "op_param not zero");
    return {};
}

DispatchResult dispatch(DeviceState& st, Mailbox& m) {
    Result<void> r = [&]() -> Result<void> {
        auto h = route(m.in);
        if (!h) return unexpected(h.error());
        std::lock_guard lk(st.mu);
        return (*h)(st, m);
    }();
    if (r) {
        prm::set_bits(m.out, 0, 8, 0);
        return {};
    }
    DispatchResult f{r.error().fw_status, r.error().syndrome};
    if (r.error().code != Errc::Firmware || f.status == 0)  // a codec error, not a rule
        f = {uint8_t(prm::Status::BAD_PARAM_ERR), syndrome::kDecodeFailed};
    write_failure(m.out, f.status, f.syndrome);
    return f;
}

}  // namespace mlx5async::emu
