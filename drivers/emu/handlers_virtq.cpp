// VIRTIO_NET_Q (obj_type 0x000d): CREATE / MODIFY / QUERY / DESTROY.
#include <bit>

#include "common/prm/field.hpp"
#include "common/prm/general_obj.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/virtq.hpp"
#include "dispatch.hpp"
#include "guest_memory.hpp"
#include "virtq_fsm.hpp"
#include "datapath/datapath.hpp"

namespace mlx5async::emu {
namespace {

using prm::Status;
using prm::VirtqAttr;
namespace mb = prm::modify_bits;

constexpr uint16_t kVirtqType = uint16_t(prm::ObjType::VIRTIO_NET_Q);
constexpr uint32_t kStateBitOffset = 156;  // virtio_net_q_object.state

Result<void> need_in(const Mailbox& m, size_t n) {
    if (m.in.size() < n) return fw_fail(Status::BAD_INP_LEN_ERR, syndrome::kInLenShort, "inlen");
    return {};
}

// Header + object image of CREATE/MODIFY: inlen, reserved bits, decode.
Result<VirtqAttr> decode_virtq_in(const Mailbox& m) {
    MLX5A_CHECK(need_in(m, prm::kVirtqCmdInBytes));
    MLX5A_CHECK(check_general_obj_hdr(m.in));
    auto obj = m.in.subspan(prm::kGeneralObjInHdrBytes, prm::kVirtqObjBytes);
    if (auto name = prm::virtq_object_nonzero_reserved(obj); !name.empty())
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kReservedNonZero,
                       "reserved field " + std::string(name) + " not zero");
    if (prm::get_bits(obj, kStateBitOffset, 4) > uint8_t(prm::VirtqState::ERR))
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kBadStateValue, "state value");
    return prm::read_virtq_object(obj);
}

const prm::VirtioEmulationCaps& caps(const DeviceState& st) { return st.profile.virtio; }

// Whether cap bit mask `mask` has bit `value` (values past its width: no).
bool has_cap_bit(uint64_t mask, unsigned value) { return value < 64 && ((mask >> value) & 1); }

Result<void> check_type_and_mode(const DeviceState& st, const VirtqAttr& a) {
    if (!has_cap_bit(caps(st).virtio_queue_type, unsigned(a.virtio_q_type)))
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kQueueTypeUnsupported, "virtio_q_type");
    if (!has_cap_bit(caps(st).event_mode, unsigned(a.event_mode)))
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kEventModeUnsupported, "event_mode");
    return {};
}

// umem_N size = a * queue_size + b (virtio_emulation_cap), inside the registration.
Result<void> check_umems(DeviceState& st, const VirtqAttr& a) {
    for (int n = 0; n < 3; ++n) {
        auto u = st.umems.find(a.umem[n].id);
        if (!u) return unexpected(u.error());
        if (a.umem[n].size < caps(st).umem_size(n, a.queue_size))
            return fw_fail(Status::BAD_PARAM_ERR, syndrome::kUmemTooSmall + uint32_t(n),
                           "umem_" + std::to_string(n + 1) + " too small");
        if (a.umem[n].offset + a.umem[n].size > u->size)
            return fw_fail(Status::BAD_PARAM_ERR, syndrome::kUmemRange + uint32_t(n),
                           "umem_" + std::to_string(n + 1) + " past its registration");
    }
    return {};
}

// event_mode QP: event_qpn_or_msix names a firmware QP (ZERO_LEN RQ) of the
// virtq's context and PD, which sends the interrupts (datapath/interrupts).
// NO_MSIX names nothing; MSIX is accepted where the caps offer it (cx7) but
// the emulator has no MSI-X target (doc/emulator.md "Interrupts").
Result<void> check_event_qp(const DeviceState& st, uint32_t ctx, const VirtqAttr& a) {
    if (a.event_mode != prm::EventMode::QP) return {};
    auto qp = st.qps.find(a.event_qpn_or_msix);
    if (!qp || qp->ctx != ctx)
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kVirtqEventQpUnknown,
                       "event_qpn_or_msix names no QP of this context");
    if (!qp->firmware)
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kVirtqEventQpNotFirmware,
                       "event QP is not a firmware (ZERO_LEN RQ) QP");
    if (qp->attr.pd != a.pd)
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kVirtqEventQpOtherPd, "event QP of another PD");
    return {};
}

// A non-empty dirty bitmap is reachable through an mkey of the context.
// (mkey 0 with size 0: no bitmap; logging with it then fails, ERR 0x08.)
Result<void> check_dirty_bitmap(const DeviceState& st, uint32_t ctx, const VirtqAttr& a) {
    if (!a.dirty_bitmap_mkey && !a.dirty_bitmap_size) return {};
    const MkeyObj* mk = find_mkey(st, a.dirty_bitmap_mkey);
    if (!mk || mk->ctx != ctx)
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kVirtqDirtyMkeyUnknown,
                       "dirty_bitmap_mkey is not an mkey of this context");
    if (a.dirty_bitmap_size &&
        !translate(st, a.dirty_bitmap_mkey, a.dirty_bitmap_addr, a.dirty_bitmap_size))
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kVirtqDirtyBitmapRange,
                       "dirty bitmap outside dirty_bitmap_mkey");
    return {};
}

Result<void> validate_create(DeviceState& st, uint32_t ctx, const VirtqAttr& a) {
    if (a.state != prm::VirtqState::INIT)
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kCreateStateNotInit, "create state");
    if (a.queue_index >= caps(st).max_num_virtio_queues)
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kQueueIndexRange, "queue_index");
    if (a.queue_size == 0)
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kQueueSizeZero, "queue_size 0");
    if (!std::has_single_bit(a.queue_size))
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kQueueSizeNotPow2, "queue_size");
    MLX5A_CHECK(check_type_and_mode(st, a));
    if (a.desc_group_mkey && !caps(st).desc_group_mkey_supported)
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kDescGroupMkeyUnsupported,
                       "desc_group_mkey");
    if (auto pd = st.pds.find(a.pd); !pd) return unexpected(pd.error());
    MLX5A_CHECK(check_umems(st, a));
    if (a.counter_set_id)
        if (auto c = st.counters.find(a.counter_set_id); !c) return unexpected(c.error());
    // Rings must be reachable through a non-zero virtio_q_mkey (guest_memory.hpp).
    if (a.virtio_q_mkey) MLX5A_CHECK(check_virtq_rings(st, a));
    // A TX queue (odd index) sends through the TIS it names, when it names one.
    if (a.tisn_or_qpn && (a.queue_index & 1) && !st.tises.find(a.tisn_or_qpn))
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kVirtqTisUnknown,
                       "tisn_or_qpn names no TIS");
    MLX5A_CHECK(check_event_qp(st, ctx, a));
    MLX5A_CHECK(check_dirty_bitmap(st, ctx, a));
    return {};
}

// The virtq pins the firmware QP it sends its interrupts through.
void pin_event_qp(DeviceState& st, const VirtqAttr& a, int delta) {
    if (a.event_mode != prm::EventMode::QP) return;
    if (auto q = st.qps.find(a.event_qpn_or_msix)) q->refs += delta;
}

void pin(DeviceState& st, const VirtqAttr& a, int delta) {
    st.pds.find(a.pd)->refs += delta;
    for (const auto& u : a.umem) st.umems.find(u.id)->refs += delta;
    if (a.counter_set_id) st.counters.find(a.counter_set_id)->refs += delta;
    if (a.virtio_q_mkey) find_mkey(st, a.virtio_q_mkey)->refs += delta;
    if (a.tisn_or_qpn && (a.queue_index & 1))
        if (auto t = st.tises.find(a.tisn_or_qpn)) t->refs += delta;
    pin_event_qp(st, a, delta);
}

Result<void> validate_modify(const DeviceState& st, const VirtqObj& vq, const VirtqAttr& a) {
    uint64_t sel = a.modify_field_select;
    if (sel & ~mb::kAllKnown)
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kUnknownModifyBits, "modify_field_select");
    if ((sel & mb::DESC_GROUP_MKEY) && !caps(st).desc_group_mkey_supported)
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kDescGroupMkeyUnsupported,
                       "desc_group_mkey");
    if (vq.state() == prm::VirtqState::ERR)
        return fw_fail(Status::BAD_RES_STATE_ERR, syndrome::kStateIsErr, "virtq in ERR");
    // PRM: fields other than state only in INIT or SUSPEND. Dirty-bitmap
    // parameters and dump enable are the exception: DPDK's mlx5 vDPA driver
    // sets them on RDY queues when live migration starts (LOG_ALL), on
    // ConnectX-6 Dx firmware.
    bool idle = vq.state() == prm::VirtqState::INIT || vq.state() == prm::VirtqState::SUSPEND;
    constexpr uint64_t kAnyState = mb::STATE | mb::DIRTY_BITMAP_PARAMS | mb::DIRTY_BITMAP_DUMP_ENABLE;
    if ((sel & ~kAnyState) && !idle)
        return fw_fail(Status::BAD_RES_STATE_ERR, syndrome::kFieldsOutsideInitSuspend,
                       "non-state fields outside INIT/SUSPEND");
    if (sel & (mb::Q_TYPE | mb::EVENT_MODE)) {
        VirtqAttr probe = vq.attr;
        if (sel & mb::Q_TYPE) probe.virtio_q_type = a.virtio_q_type;
        if (sel & mb::EVENT_MODE) probe.event_mode = a.event_mode;
        MLX5A_CHECK(check_type_and_mode(st, probe));
    }
    if (sel & mb::STATE)
        MLX5A_CHECK(check_transition(vq.state(), {a.state}, caps(st).freeze_to_rdy_supported));
    return {};
}

void apply_fields(VirtqAttr& d, const VirtqAttr& a, uint64_t sel) {
    if (sel & mb::DIRTY_BITMAP_PARAMS) {
        d.dirty_bitmap_mkey = a.dirty_bitmap_mkey;
        d.dirty_bitmap_size = a.dirty_bitmap_size;
        d.dirty_bitmap_addr = a.dirty_bitmap_addr;
        d.vhost_log_page = a.vhost_log_page;
    }
    if (sel & mb::DIRTY_BITMAP_DUMP_ENABLE) d.dirty_bitmap_dump_enable = a.dirty_bitmap_dump_enable;
    if (sel & mb::QUEUE_PERIOD) {
        d.queue_period_mode = a.queue_period_mode;
        d.queue_period_us = a.queue_period_us;
        d.queue_max_count = a.queue_max_count;
    }
    if (sel & mb::VIRTIO_Q_ADDRS) {
        d.desc_addr = a.desc_addr;
        d.used_addr = a.used_addr;
        d.available_addr = a.available_addr;
    }
    if (sel & mb::VIRTIO_Q_AVAIL_IDX) d.hw_available_index = a.hw_available_index;
    if (sel & mb::VIRTIO_Q_USED_IDX) d.hw_used_index = a.hw_used_index;
    if (sel & mb::Q_TYPE) d.virtio_q_type = a.virtio_q_type;
    if (sel & mb::QUEUE_VIRTIO_VERSION) d.virtio_version_1_0 = a.virtio_version_1_0;
    if (sel & mb::VIRTIO_Q_MKEY) d.virtio_q_mkey = a.virtio_q_mkey;
    if (sel & mb::QUEUE_FEATURES) {
        d.queue_feature_bit_mask_12_3 = a.queue_feature_bit_mask_12_3;
        d.queue_feature_bit_mask_2_0 = a.queue_feature_bit_mask_2_0;
    }
    if (sel & mb::EVENT_MODE) {
        d.event_mode = a.event_mode;
        d.event_qpn_or_msix = a.event_qpn_or_msix;
    }
    if (sel & mb::DESC_GROUP_MKEY) d.desc_group_mkey = a.desc_group_mkey;
}

// The object as the MODIFY would leave it: a non-zero virtio_q_mkey must
// exist, and on the way to RDY the rings must translate through it; a new
// event QP or dirty bitmap must be valid.
Result<void> check_modify_refs(const DeviceState& st, const VirtqObj& vq, const VirtqAttr& a) {
    uint64_t sel = a.modify_field_select;
    VirtqAttr after = vq.attr;
    apply_fields(after, a, sel);
    if (sel & mb::EVENT_MODE) MLX5A_CHECK(check_event_qp(st, vq.ctx, after));
    if (sel & mb::DIRTY_BITMAP_PARAMS) MLX5A_CHECK(check_dirty_bitmap(st, vq.ctx, after));
    if (!after.virtio_q_mkey) return {};
    bool to_rdy = (sel & mb::STATE) && a.state == prm::VirtqState::RDY;
    if (to_rdy) return check_virtq_rings(st, after);
    if ((sel & mb::VIRTIO_Q_MKEY) && !find_mkey(st, after.virtio_q_mkey))
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kVirtqMkeyUnknown, "virtio_q_mkey unknown");
    return {};
}

// The virtq pins the mkey it holds: move the pin when the MODIFY changed it.
void repin_mkey(DeviceState& st, uint32_t old_mkey, uint32_t new_mkey) {
    if (old_mkey == new_mkey) return;
    if (MkeyObj* o = old_mkey ? find_mkey(st, old_mkey) : nullptr) o->refs--;
    if (MkeyObj* n = new_mkey ? find_mkey(st, new_mkey) : nullptr) n->refs++;
}

void write_ok(Mailbox& m, uint32_t obj_id) {
    prm::write_general_obj_out({0, 0, obj_id}, m.out);
}

}  // namespace

Result<void> h_create_virtq(DeviceState& st, Mailbox& m) {
    auto a = decode_virtq_in(m);
    if (!a) return unexpected(a.error());
    MLX5A_CHECK(validate_create(st, m.ctx, *a));
    VirtqObj vq;
    vq.ctx = m.ctx;
    vq.attr = *a;
    vq.attr.modify_field_select = 0;
    vq.attr.error_type = 0;
    auto id = st.virtqs.insert(std::move(vq));
    if (!id) return unexpected(id.error());
    pin(st, *a, +1);
    m.created_id = *id;
    write_ok(m, *id);
    return {};
}

Result<void> h_modify_virtq(DeviceState& st, Mailbox& m) {
    auto a = decode_virtq_in(m);
    if (!a) return unexpected(a.error());
    uint32_t id = uint32_t(prm::get_bits(m.in, 64, 32));
    auto vq = st.virtqs.find(id);
    if (!vq) return unexpected(vq.error());
    MLX5A_CHECK(validate_modify(st, *vq, *a));
    MLX5A_CHECK(check_modify_refs(st, *vq, *a));
    uint64_t sel = a->modify_field_select;
    const bool kicks_pending = vq->kicks.pending != 0;
    if (sel & mb::STATE)
        MLX5A_CHECK(transition(*vq, {a->state}, caps(st).freeze_to_rdy_supported));
    uint32_t old_mkey = vq->attr.virtio_q_mkey;
    if (sel & mb::EVENT_MODE) pin_event_qp(st, vq->attr, -1);
    apply_fields(vq->attr, *a, sel);
    if (sel & mb::EVENT_MODE) pin_event_qp(st, vq->attr, +1);
    repin_mkey(st, old_mkey, vq->attr.virtio_q_mkey);
    // Datapath: runs under st.mu too, so a SUSPEND returning here is exact.
    // Entering RDY replays the kicks recorded meanwhile (vdpa_sim's
    // pending_kick); without any, the ring waits for its next doorbell.
    if ((sel & mb::STATE) && a->state == prm::VirtqState::RDY && kicks_pending && st.datapath)
        st.datapath->notify();
    write_ok(m, id);
    return {};
}

Result<void> h_query_virtq(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need_in(m, prm::kGeneralObjInHdrBytes));
    MLX5A_CHECK(check_general_obj_hdr(m.in));
    if (m.out.size() < prm::kVirtqQueryOutBytes)
        return fw_fail(Status::BAD_OUTP_LEN_ERR, syndrome::kOutLenShort, "outlen");
    uint32_t id = uint32_t(prm::get_bits(m.in, 64, 32));
    auto vq = st.virtqs.find(id);
    if (!vq) return unexpected(vq.error());
    write_ok(m, id);
    VirtqAttr out = vq->attr;
    out.modify_field_select = 0;
    MLX5A_CHECK(prm::write_virtq_object(out, m.out.subspan(prm::kGeneralObjOutHdrBytes)));
    return {};
}

void remove_virtq(DeviceState& st, uint32_t id) {
    auto vq = st.virtqs.find(id);
    if (!vq) return;
    pin(st, vq->attr, -1);
    st.events.drop_object(kVirtqType, id);
    st.virtqs.erase(id);
}

Result<void> h_destroy_virtq(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need_in(m, prm::kGeneralObjInHdrBytes));
    MLX5A_CHECK(check_general_obj_hdr(m.in));
    uint32_t id = uint32_t(prm::get_bits(m.in, 64, 32));
    if (auto vq = st.virtqs.find(id); !vq) return unexpected(vq.error());
    remove_virtq(st, id);
    write_ok(m, 0);
    return {};
}

}  // namespace mlx5async::emu
