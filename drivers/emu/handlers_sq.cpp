// CREATE_SQ / MODIFY_SQ / DESTROY_SQ: a send queue of the driver's own
// (DPDK mlx5_devx_cmd_create_sq / _modify_sq; Linux mlx5e's SQs). The
// emulator takes the DevX shape only: a cyclic ring of 64-byte basic blocks
// and its doorbell record in umems (no PAS), completions into a CQ of the
// context, one TIS, the doorbell on a UAR page. What it sends goes to the
// port's wire (datapath/send_queue.cpp).
//
// SQ states (PRM "SQ State Machine"): RST -> RDY, RDY -> ERR or RST,
// ERR -> RST; a WQE the device cannot execute moves a RDY SQ to ERR.
// Going to RST forgets what the ring held: the counters start at 0 again.
//
// Pins: an SQ pins its CQ, both umems, its UAR, its TIS and its PD.
#include <string>

#include "common/prm/opcodes.hpp"
#include "common/prm/sq.hpp"
#include "dispatch.hpp"
#include "queue_checks.hpp"

namespace mlx5async::emu {
namespace {

using prm::SqState;
using prm::Status;

constexpr uint8_t kLogWqeBasicBlock = 6;  // 64-byte basic blocks
constexpr uint8_t kMaxLogWqSize = 15;     // log_max_wq_sz of ConnectX-6 Dx / 7

Result<void> need(const Mailbox& m, size_t in_bytes) {
    if (m.in.size() < in_bytes) return fw_fail(Status::BAD_INP_LEN_ERR, syndrome::kInLenShort, "inlen");
    if (m.out.size() < prm::kSqCmdBytes)
        return fw_fail(Status::BAD_OUTP_LEN_ERR, syndrome::kOutLenShort, "outlen");
    return {};
}

// What the context names is its own: PD, TIS, CQ, UAR.
Result<void> check_names(DeviceState& st, uint32_t ctx, const prm::SqAttr& a) {
    if (auto pd = st.pds.find(a.pd); !pd || pd->ctx != ctx)
        return fw_fail(Status::BAD_RES_ERR, syndrome::kSqBadPd, "pd unknown or another context's");
    auto tis = st.tises.find(a.tis_num_0);
    if (a.tis_lst_sz != 1 || !tis || tis->ctx != ctx)
        return bad_param(syndrome::kSqTis, "tis_lst_sz 1 and tis_num_0 a TIS of the context");
    auto cq = st.cqs.find(a.cqn);
    if (!cq || cq->ctx != ctx || cq->attr.cc)
        return bad_param(syndrome::kSqBadCq, "cqn: a CQ of the context, not collapsed");
    if (!uar_of(st, ctx, a.uar_page)) return bad_param(syndrome::kSqBadUar, "uar_page");
    return {};
}

Result<SqObj> validate_sq(DeviceState& st, uint32_t ctx, const prm::SqAttr& a) {
    if (a.state != uint8_t(SqState::RST)) return bad_param(syndrome::kSqCreateNotRst, "sqc.state not RST");
    if (a.wq_type != prm::kWqTypeCyclic) return bad_param(syndrome::kSqWqType, "wq_type not cyclic");
    if (a.log_wq_stride != kLogWqeBasicBlock)
        return bad_param(syndrome::kSqStride, "log_wq_stride: 64-byte basic blocks (6)");
    if (a.log_wq_sz > kMaxLogWqSize) return bad_param(syndrome::kSqLogSize, "log_wq_sz");
    if (!prm::sq_ts_format_allowed(st.profile.general.sq_ts_format, a.ts_format))
        return bad_param(syndrome::kSqTsFormat, "ts_format not allowed by sq_ts_format");
    MLX5A_CHECK(check_names(st, ctx, a));
    if (!a.wq_umem_valid || !a.dbr_umem_valid)
        return bad_param(syndrome::kSqNoUmem, "ring and doorbell record must be umems");
    SqObj sq;
    sq.ctx = ctx;
    sq.attr = a;
    auto ring = umem_bytes(st, ctx, a.wq_umem_id, a.wq_umem_offset, prm::kWqeBasicBlock << a.log_wq_sz,
                           prm::kWqeBasicBlock,
                           {syndrome::kSqUmemUnknown, syndrome::kSqUmemRange, syndrome::kSqRingAlign});
    if (!ring) return unexpected(ring.error());
    auto dbr = umem_bytes(st, ctx, a.dbr_umem_id, a.dbr_addr, prm::kSqDbrBytes, 8,
                          {syndrome::kSqDbrUmemUnknown, syndrome::kSqDbrRange, syndrome::kSqDbrAlign});
    if (!dbr) return unexpected(dbr.error());
    sq.ring = *ring;
    sq.dbr = *dbr;
    return sq;
}

void pin_sq(DeviceState& st, const SqObj& sq, int delta) {
    if (auto pd = st.pds.find(sq.attr.pd)) pd->refs += delta;
    if (auto t = st.tises.find(sq.attr.tis_num_0)) t->refs += delta;
    if (auto c = st.cqs.find(sq.attr.cqn)) c->refs += delta;
    if (auto u = st.uars.find(sq.attr.uar_page)) u->refs += delta;
    if (auto u = st.umems.find(sq.attr.wq_umem_id)) u->refs += delta;
    if (auto u = st.umems.find(sq.attr.dbr_umem_id)) u->refs += delta;
}

bool legal(SqState from, SqState to) {
    return (from == SqState::RST && to == SqState::RDY) || (from == SqState::RDY && to == SqState::ERR) ||
           (from == SqState::RDY && to == SqState::RST) || (from == SqState::ERR && to == SqState::RST);
}

}  // namespace

Result<void> h_create_sq(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need(m, prm::kCreateSqInBytes));
    if (auto name = prm::create_sq_in_nonzero_reserved(m.in); !name.empty())
        return bad_param(syndrome::kReservedNonZero, "reserved field " + std::string(name) + " not zero");
    auto a = prm::decode_create_sq_in(m.in);
    if (!a) return bad_param(syndrome::kDecodeFailed, a.error().what);
    auto sq = validate_sq(st, m.ctx, *a);
    if (!sq) return unexpected(sq.error());
    auto id = st.sqs.insert(std::move(*sq));
    if (!id) return unexpected(id.error());
    pin_sq(st, *st.sqs.find(*id), +1);
    m.created_id = *id;
    prm::encode_create_sq_out(*id, m.out);
    return {};
}

Result<void> h_modify_sq(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need(m, prm::kModifySqInBytes));
    if (auto name = prm::modify_sq_in_nonzero_reserved(m.in); !name.empty())
        return bad_param(syndrome::kReservedNonZero,
                         "field " + std::string(name) + " not zero (a state-only MODIFY_SQ)");
    auto mod = prm::decode_modify_sq_in(m.in);
    if (!mod) return bad_param(syndrome::kDecodeFailed, mod.error().what);
    auto sq = st.sqs.find(mod->sqn);
    if (!sq || sq->ctx != m.ctx)
        return fw_fail(Status::BAD_RES_ERR, syndrome::kUnknownObject + uint32_t(Kind::Sq), "unknown sqn");
    if (mod->from != uint8_t(sq->state))
        return fw_fail(Status::BAD_RES_STATE_ERR, syndrome::kSqBadState,
                       std::string("sq_state ") + prm::sq_state_name(mod->from) + ", the SQ is " +
                           prm::sq_state_name(uint8_t(sq->state)));
    if (!legal(sq->state, SqState(mod->to)))
        return bad_param(syndrome::kSqIllegalTransition, std::string(prm::sq_state_name(mod->from)) + " -> " +
                                                             prm::sq_state_name(mod->to));
    sq->state = SqState(mod->to);
    if (sq->state == SqState::RST) {
        sq->consumed = 0;
        sq->error.clear();
    }
    prm::encode_modify_sq_out(m.out);
    return {};
}

void remove_sq(DeviceState& st, uint32_t sqn) {
    auto sq = st.sqs.find(sqn);
    if (!sq) return;
    pin_sq(st, *sq, -1);
    st.sqs.erase(sqn);
}

Result<void> h_destroy_sq(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need(m, prm::kSqCmdBytes));
    auto sqn = prm::decode_destroy_sq_in(m.in);
    if (!sqn) return bad_param(syndrome::kDecodeFailed, sqn.error().what);
    auto sq = st.sqs.find(*sqn);
    if (!sq || sq->ctx != m.ctx)
        return fw_fail(Status::BAD_RES_ERR, syndrome::kUnknownObject + uint32_t(Kind::Sq), "unknown sqn");
    remove_sq(st, *sqn);
    prm::encode_modify_sq_out(m.out);
    return {};
}

}  // namespace mlx5async::emu
