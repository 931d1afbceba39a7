// QUERY_HCA_CAP, QUERY_NIC_VPORT_CONTEXT and VIRTIO_Q_COUNTERS (obj_type 0x001c).
#include "common/prm/caps.hpp"
#include "common/prm/counters.hpp"
#include "common/prm/field.hpp"
#include "common/prm/general_obj.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/vport.hpp"
#include "dispatch.hpp"

namespace mlx5async::emu {
namespace {

using prm::Status;

Result<void> need_in(const Mailbox& m, size_t n) {
    if (m.in.size() < n) return fw_fail(Status::BAD_INP_LEN_ERR, syndrome::kInLenShort, "inlen");
    return {};
}

Result<void> need_out(const Mailbox& m, size_t n) {
    if (m.out.size() < n)
        return fw_fail(Status::BAD_OUTP_LEN_ERR, syndrome::kOutLenShort, "outlen");
    return {};
}

uint32_t hdr_obj_id(const Mailbox& m) { return uint32_t(prm::get_bits(m.in, 64, 32)); }

}  // namespace

Result<void> h_query_hca_cap(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need_in(m, prm::kQueryHcaCapInBytes));
    MLX5A_CHECK(need_out(m, prm::kQueryHcaCapOutBytes));
    uint16_t op_mod = uint16_t(prm::get_bits(m.in, 48, 16));
    uint16_t cap_type = op_mod >> 1;
    auto cap = m.out.subspan(16, prm::kCapBytes);
    prm::write_general_obj_out({0, 0, 0}, m.out);
    if (cap_type == prm::kCapTypeGeneral)
        prm::write_general_caps(st.profile.general, cap);
    else if (cap_type == prm::kCapTypeVirtioEmulation)
        prm::write_virtio_emulation_caps(st.profile.virtio, cap);
    else
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kBadOpMod, "unsupported cap type");
    return {};
}

// The function's own vport only: a VF has no right to another's (the
// firmware's BAD_PARAM for other_vport from an unprivileged function).
Result<void> h_query_nic_vport_context(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need_out(m, prm::kQueryNicVportContextOutBytes));
    bool other = false;
    auto vport = prm::decode_query_nic_vport_context_in(m.in, other);
    if (!vport) {
        if (vport.error().code == Errc::ShortBuffer)
            return fw_fail(Status::BAD_INP_LEN_ERR, syndrome::kInLenShort, "inlen");
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kReservedNonZero, vport.error().what);
    }
    if (other || *vport)
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kOtherVport, "other_vport");
    prm::NicVportContext c;
    c.mtu = uint16_t(st.profile.mtu + prm::kEthHardMtuOverhead);
    c.permanent_mac = st.profile.mac;
    prm::encode_query_nic_vport_context_out(c, m.out);
    return {};
}

Result<void> h_create_counters(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need_in(m, prm::kCountersCreateInBytes));
    MLX5A_CHECK(check_general_obj_hdr(m.in));
    // Every field of the object is read-only at create: all of it must be 0.
    auto obj = m.in.subspan(prm::kGeneralObjInHdrBytes, prm::kCountersObjBytes);
    for (std::byte b : obj)
        if (b != std::byte{0})
            return fw_fail(Status::BAD_PARAM_ERR, syndrome::kReservedNonZero,
                           "counters object not zero");
    auto id = st.counters.insert(CountersObj{m.ctx, {}, 0});
    if (!id) return unexpected(id.error());
    m.created_id = *id;
    prm::write_general_obj_out({0, 0, *id}, m.out);
    return {};
}

Result<void> h_query_counters(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need_in(m, prm::kGeneralObjInHdrBytes));
    MLX5A_CHECK(check_general_obj_hdr(m.in));
    MLX5A_CHECK(need_out(m, prm::kCountersQueryOutBytes));
    auto c = st.counters.find(hdr_obj_id(m));
    if (!c) return unexpected(c.error());
    prm::write_general_obj_out({0, 0, hdr_obj_id(m)}, m.out);
    prm::write_counters_object(c->values, m.out.subspan(prm::kGeneralObjOutHdrBytes));
    return {};
}

Result<void> h_destroy_counters(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need_in(m, prm::kGeneralObjInHdrBytes));
    MLX5A_CHECK(check_general_obj_hdr(m.in));
    auto c = st.counters.find(hdr_obj_id(m));
    if (!c) return unexpected(c.error());
    if (c->refs)
        return fw_fail(Status::RES_BUSY, syndrome::kObjectInUse, "counters used by a virtq");
    st.counters.erase(hdr_obj_id(m));
    prm::write_general_obj_out({0, 0, 0}, m.out);
    return {};
}

}  // namespace mlx5async::emu
