// CREATE_CQ / DESTROY_CQ, CREATE_QP / DESTROY_QP and the RC transitions
// RST2INIT / INIT2RTR / RTR2RTS: the objects behind a virtq's interrupts in
// QP event mode (DPDK mlx5_vdpa_event.c, Linux mlx5_vdpa mlx5_vnet.c). The
// emulator takes the DevX shape only: CQ buffer, QP receive queue and
// doorbell records in umems (no PAS), the arm doorbell on a UAR page.
//
// Pins: a CQ pins its umems and UAR; a QP its PD, umems, UAR and CQs; a
// virtq its firmware QP (handlers_virtq.cpp); the driver QP connected to a
// firmware QP that a virtq names is busy too (the live interrupt path).
#include "common/prm/event_qp.hpp"
#include "common/prm/opcodes.hpp"
#include "dispatch.hpp"
#include "queue_checks.hpp"

namespace mlx5async::emu {
namespace {

using prm::QpState;
using prm::Status;

constexpr uint8_t kMaxLogCqSize = 22;  // log_max_cq_sz of ConnectX-6 Dx / 7
constexpr uint64_t kRqStrideUnit = 16;  // stride = 16 << log_rq_stride bytes

Result<void> need(const Mailbox& m, size_t in_bytes) {
    if (m.in.size() < in_bytes)
        return fw_fail(Status::BAD_INP_LEN_ERR, syndrome::kInLenShort, "inlen");
    if (m.out.size() < prm::kEventQpCmdBytes)
        return fw_fail(Status::BAD_OUTP_LEN_ERR, syndrome::kOutLenShort, "outlen");
    return {};
}

Result<CqObj> validate_cq(DeviceState& st, uint32_t ctx, const prm::CqAttr& a) {
    if (a.cqe_sz != 0) return bad_param(syndrome::kCqCqeSize, "cqe_sz: only 64-byte CQEs");
    if (a.log_cq_size > kMaxLogCqSize) return bad_param(syndrome::kCqLogSize, "log_cq_size");
    if (!a.cq_umem_valid || !a.dbr_umem_valid)
        return bad_param(syndrome::kCqNoUmem, "CQ buffer and doorbell record must be umems");
    if (!uar_of(st, ctx, a.uar_page)) return bad_param(syndrome::kCqBadUar, "uar_page");
    if (a.c_eqn < kFirstCompEqn || a.c_eqn >= kFirstCompEqn + kCompVectors)
        return bad_param(syndrome::kCqBadEqn, "c_eqn is not a completion EQ");
    CqObj cq;
    cq.ctx = ctx;
    cq.attr = a;
    auto buf = umem_bytes(st, ctx, a.cq_umem_id, a.cq_umem_offset, prm::kCqeBytes << a.log_cq_size,
                          prm::kCqeBytes, {syndrome::kCqUmemUnknown, syndrome::kCqUmemRange,
                                           syndrome::kCqBufAlign});
    if (!buf) return unexpected(buf.error());
    auto dbr = umem_bytes(st, ctx, a.dbr_umem_id, a.dbr_addr, prm::kCqDbrBytes, 8,
                          {syndrome::kCqDbrUmemUnknown, syndrome::kCqDbrRange, syndrome::kCqDbrAlign});
    if (!dbr) return unexpected(dbr.error());
    cq.buf = *buf;
    cq.dbr = *dbr;
    return cq;
}

void pin_cq(DeviceState& st, const CqObj& cq, int delta) {
    if (auto u = st.umems.find(cq.attr.cq_umem_id)) u->refs += delta;
    if (auto u = st.umems.find(cq.attr.dbr_umem_id)) u->refs += delta;
    if (auto u = st.uars.find(cq.attr.uar_page)) u->refs += delta;
}

// A firmware QP: "managed by FW", no SQ, zero-length RQ, nothing else.
Result<void> validate_firmware_qp(const prm::QpAttr& a) {
    if (!a.no_sq || a.cqn_rcv || a.cqn_snd || a.uar_page || a.dbr_umem_valid || a.wq_umem_valid)
        return bad_param(syndrome::kQpFirmwareShape,
                         "a ZERO_LEN-RQ QP has no SQ, CQ, UAR or umem (managed by FW)");
    return {};
}

// The driver's QP: a receive queue in a umem, no send queue.
Result<QpObj> validate_driver_qp(DeviceState& st, uint32_t ctx, const prm::QpAttr& a) {
    if (!a.no_sq) return bad_param(syndrome::kQpSqUnsupported, "send queue not emulated");
    if (!uar_of(st, ctx, a.uar_page)) return bad_param(syndrome::kQpBadUar, "uar_page");
    if (!cq_of(st, ctx, a.cqn_rcv) || (a.cqn_snd && !cq_of(st, ctx, a.cqn_snd)))
        return bad_param(syndrome::kQpBadCq, "cqn_rcv/cqn_snd");
    if (!a.wq_umem_valid || !a.dbr_umem_valid)
        return bad_param(syndrome::kQpNoUmem, "receive queue and doorbell record must be umems");
    uint64_t rq_bytes = (kRqStrideUnit << a.log_rq_stride) << a.log_rq_size;
    auto rq = umem_bytes(st, ctx, a.wq_umem_id, a.wq_umem_offset, rq_bytes, 1,
                         {syndrome::kQpUmemUnknown, syndrome::kQpUmemRange, 0});
    if (!rq) return unexpected(rq.error());
    auto dbr = umem_bytes(st, ctx, a.dbr_umem_id, a.dbr_addr, prm::kQpDbrBytes, 8,
                          {syndrome::kQpDbrUmemUnknown, syndrome::kQpDbrRange, syndrome::kQpDbrAlign});
    if (!dbr) return unexpected(dbr.error());
    QpObj qp;
    qp.dbr = *dbr;
    return qp;
}

Result<QpObj> validate_qp(DeviceState& st, uint32_t ctx, const prm::QpAttr& a) {
    if (a.st != uint8_t(prm::QpServiceType::RC)) return bad_param(syndrome::kQpServiceType, "st");
    if (auto pd = st.pds.find(a.pd); !pd || pd->ctx != ctx)
        return fw_fail(Status::BAD_RES_ERR, syndrome::kQpBadPd, "pd unknown or another context's");
    QpObj qp;
    if (a.rq_type == uint8_t(prm::QpRqType::ZERO_LEN)) {
        MLX5A_CHECK(validate_firmware_qp(a));
        qp.firmware = true;
    } else if (a.rq_type == uint8_t(prm::QpRqType::REGULAR)) {
        auto d = validate_driver_qp(st, ctx, a);
        if (!d) return unexpected(d.error());
        qp = std::move(*d);
    } else {
        return bad_param(syndrome::kQpRqType, "rq_type");
    }
    qp.ctx = ctx;
    qp.attr = a;
    return qp;
}

void pin_qp(DeviceState& st, const QpObj& qp, int delta) {
    if (auto pd = st.pds.find(qp.attr.pd)) pd->refs += delta;
    if (qp.firmware) return;
    if (auto u = st.uars.find(qp.attr.uar_page)) u->refs += delta;
    if (auto c = st.cqs.find(qp.attr.cqn_rcv)) c->refs += delta;
    if (qp.attr.cqn_snd)
        if (auto c = st.cqs.find(qp.attr.cqn_snd)) c->refs += delta;
    if (auto u = st.umems.find(qp.attr.wq_umem_id)) u->refs += delta;
    if (auto u = st.umems.find(qp.attr.dbr_umem_id)) u->refs += delta;
}

// The QP is the interrupt path of a live virtq: named by one, or connected
// to a firmware QP that one names.
bool qp_in_use(DeviceState& st, uint32_t qpn, const QpObj& qp) {
    if (qp.refs) return true;
    auto peer = st.qps.find(qp.remote_qpn);  // 0 or stale: not connected
    return peer && peer->remote_qpn == qpn && peer->refs;
}

QpState source_state(prm::QpTransition t) {
    switch (t) {
        case prm::QpTransition::RST2INIT: return QpState::RST;
        case prm::QpTransition::INIT2RTR: return QpState::INIT;
        case prm::QpTransition::RTR2RTS: return QpState::RTR;
    }
    return QpState::ERR;
}

QpState target_state(prm::QpTransition t) {
    return QpState(uint8_t(source_state(t)) + 1);  // RST 0 -> INIT 1 -> RTR 2 -> RTS 3
}

// INIT2RTR: the peer is another QP of this context and PD.
Result<void> check_remote(DeviceState& st, uint32_t qpn, const QpObj& qp, uint32_t remote) {
    if (remote == qpn) return bad_param(syndrome::kQpRemoteSelf, "remote_qpn is the QP itself");
    auto peer = st.qps.find(remote);
    if (!peer) return bad_param(syndrome::kQpRemoteUnknown, "remote_qpn names no QP");
    if (peer->ctx != qp.ctx) return bad_param(syndrome::kQpRemoteOtherContext, "remote QP of another context");
    if (peer->attr.pd != qp.attr.pd) return bad_param(syndrome::kQpRemoteOtherPd, "remote QP of another PD");
    return {};
}

}  // namespace

Result<void> h_create_cq(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need(m, prm::kCreateCqInBytes));
    if (auto name = prm::create_cq_in_nonzero_reserved(m.in); !name.empty())
        return bad_param(syndrome::kReservedNonZero, "reserved field " + std::string(name) + " not zero");
    auto a = prm::decode_create_cq_in(m.in);
    if (!a) return bad_param(syndrome::kDecodeFailed, a.error().what);
    auto cq = validate_cq(st, m.ctx, *a);
    if (!cq) return unexpected(cq.error());
    auto id = st.cqs.insert(*cq);
    if (!id) return unexpected(id.error());
    pin_cq(st, *cq, +1);
    m.created_id = *id;
    prm::encode_create_cq_out(*id, m.out);
    return {};
}

void remove_cq(DeviceState& st, uint32_t cqn) {
    auto cq = st.cqs.find(cqn);
    if (!cq) return;
    pin_cq(st, *cq, -1);
    st.events.drop_object(kCqEventObjType, cqn);
    st.cqs.erase(cqn);
}

Result<void> h_destroy_cq(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need(m, prm::kEventQpCmdBytes));
    auto cqn = prm::decode_destroy_cq_in(m.in);
    if (!cqn) return bad_param(syndrome::kDecodeFailed, cqn.error().what);
    auto cq = st.cqs.find(*cqn);
    if (!cq) return unexpected(cq.error());
    if (cq->refs) return fw_fail(Status::RES_BUSY, syndrome::kObjectInUse, "CQ used by a QP");
    remove_cq(st, *cqn);
    prm::encode_qp_modify_out(m.out);  // status OK, nothing else
    return {};
}

Result<void> h_create_qp(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need(m, prm::kCreateQpInBytes));
    if (auto name = prm::create_qp_in_nonzero_reserved(m.in); !name.empty())
        return bad_param(syndrome::kReservedNonZero, "reserved field " + std::string(name) + " not zero");
    auto a = prm::decode_create_qp_in(m.in);
    if (!a) return bad_param(syndrome::kDecodeFailed, a.error().what);
    auto qp = validate_qp(st, m.ctx, *a);
    if (!qp) return unexpected(qp.error());
    auto id = st.qps.insert(*qp);
    if (!id) return unexpected(id.error());
    pin_qp(st, *qp, +1);
    m.created_id = *id;
    prm::encode_create_qp_out(*id, m.out);
    return {};
}

void remove_qp(DeviceState& st, uint32_t qpn) {
    auto qp = st.qps.find(qpn);
    if (!qp) return;
    pin_qp(st, *qp, -1);
    st.qps.erase(qpn);
}

Result<void> h_destroy_qp(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need(m, prm::kEventQpCmdBytes));
    auto qpn = prm::decode_destroy_qp_in(m.in);
    if (!qpn) return bad_param(syndrome::kDecodeFailed, qpn.error().what);
    auto qp = st.qps.find(*qpn);
    if (!qp) return unexpected(qp.error());
    if (qp_in_use(st, *qpn, *qp))
        return fw_fail(Status::RES_BUSY, syndrome::kObjectInUse, "QP carries a virtq's interrupts");
    remove_qp(st, *qpn);
    prm::encode_qp_modify_out(m.out);
    return {};
}

// RST2INIT_QP / INIT2RTR_QP / RTR2RTS_QP (the opcode is the transition).
Result<void> h_modify_qp(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need(m, prm::kQpModifyInBytes));
    auto mod = prm::decode_qp_modify_in(m.in);
    if (!mod) return bad_param(syndrome::kDecodeFailed, mod.error().what);
    auto qp = st.qps.find(mod->qpn);
    if (!qp || qp->ctx != m.ctx)
        return fw_fail(Status::BAD_RES_ERR, syndrome::kUnknownObject + uint32_t(Kind::Qp), "unknown qpn");
    if (qp->state != source_state(mod->transition))
        return fw_fail(Status::BAD_RES_STATE_ERR, syndrome::kQpBadState,
                       std::string(prm::qp_transition_name(mod->transition)) + " from the wrong state");
    if (mod->transition == prm::QpTransition::INIT2RTR)
        MLX5A_CHECK(check_remote(st, mod->qpn, *qp, mod->remote_qpn));
    if (mod->transition == prm::QpTransition::INIT2RTR) qp->remote_qpn = mod->remote_qpn;
    qp->state = target_state(mod->transition);
    prm::encode_qp_modify_out(m.out);
    return {};
}

}  // namespace mlx5async::emu
