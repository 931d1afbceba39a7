#include "send_queue.hpp"

#include <endian.h>

#include <atomic>
#include <cstring>
#include <string>
#include <variant>
#include <vector>

#include "../state.hpp"
#include "common/prm/sq.hpp"
#include "cq.hpp"
#include "wire.hpp"

namespace mlx5async::emu::dp {
namespace {

using prm::CqeSyndrome;

uint16_t send_counter(const SqObj& sq) {
    auto* w = reinterpret_cast<uint32_t*>(sq.dbr + prm::kSqDbrSendCounter);
    return uint16_t(be32toh(std::atomic_ref<uint32_t>(*w).load(std::memory_order_acquire)));
}

// `n` basic blocks from block `at` of the ring, across its end.
std::vector<std::byte> blocks(const SqObj& sq, uint16_t at, uint16_t n) {
    const uint32_t mask = (1u << sq.attr.log_wq_sz) - 1;
    std::vector<std::byte> out(size_t(n) * prm::kWqeBasicBlock);
    for (uint16_t i = 0; i < n; ++i)
        std::memcpy(out.data() + size_t(i) * prm::kWqeBasicBlock,
                    sq.ring + size_t((at + i) & mask) * prm::kWqeBasicBlock, prm::kWqeBasicBlock);
    return out;
}

struct Refused {
    CqeSyndrome syndrome;
    std::string why;
};

// One WQE at the ring's counter, `posted` blocks ahead of it: its frame
// and its extent, or why the device refuses it.
struct Taken {
    prm::InlineSend send;
    uint16_t blocks = 0;
};
std::variant<Taken, Refused> take_wqe(const SqObj& sq, uint32_t sqn, uint16_t posted, size_t max_frame) {
    const uint16_t at = sq.consumed;
    auto head = blocks(sq, at, 1);
    auto ctrl = prm::decode_wqe_ctrl(head);
    if (!ctrl) return Refused{CqeSyndrome::LOCAL_QP_OP_ERR, ctrl.error().what};
    if (ctrl->wqe_index != at)
        return Refused{CqeSyndrome::LOCAL_QP_OP_ERR, "wqe_index " + std::to_string(ctrl->wqe_index) +
                                                         ", the ring's counter is " + std::to_string(at)};
    if (ctrl->sqn != sqn)
        return Refused{CqeSyndrome::LOCAL_QP_OP_ERR, "WQE names SQ " + std::to_string(ctrl->sqn)};
    if (ctrl->ds < 2 || ctrl->ds > prm::kMaxWqeDs)
        return Refused{CqeSyndrome::LOCAL_LENGTH_ERR, "ds " + std::to_string(ctrl->ds)};
    const uint16_t n = prm::wqe_basic_blocks(ctrl->ds);
    if (n > posted)
        return Refused{CqeSyndrome::LOCAL_LENGTH_ERR, "a WQE of " + std::to_string(n) +
                                                          " basic blocks, the record posts " + std::to_string(posted)};
    auto bytes = blocks(sq, at, n);
    auto s = prm::decode_inline_send(bytes);
    if (!s) return Refused{CqeSyndrome::LOCAL_QP_OP_ERR, s.error().what};
    if (s->trailing_ds)
        return Refused{CqeSyndrome::LOCAL_QP_OP_ERR, std::to_string(s->trailing_ds) +
                                                         " segments after the inline frame: data segments are "
                                                         "not emulated (inline the whole frame)"};
    if (s->frame.size() < prm::kEthHeaderBytes || s->frame.size() > max_frame)
        return Refused{CqeSyndrome::LOCAL_LENGTH_ERR, "a frame of " + std::to_string(s->frame.size()) +
                                                          " bytes (the port passes 14.." + std::to_string(max_frame) + ")"};
    return Taken{std::move(*s), n};
}

void fail_sq(CqObj& cq, uint32_t sqn, SqObj& sq, const Refused& r, SendStats& s) {
    sq.state = prm::SqState::ERR;
    sq.error = "WQE " + std::to_string(sq.consumed) + ": " + r.why;
    prm::Cqe c;
    c.opcode = uint8_t(prm::CqeOpcode::REQ_ERR);
    c.syndrome = uint8_t(r.syndrome);
    c.qpn = sqn;
    c.wqe_counter = sq.consumed;
    if (cq_has_room(cq)) post_cqe(cq, c), ++sq.completions;
    ++s.errors;
}

// Sends what `sq` has posted, up to a WQE the device refuses.
void drain(DeviceState& st, uint32_t sqn, SqObj& sq, size_t max_frame, Wire& wire, SendStats& s) {
    auto cq = st.cqs.find(sq.attr.cqn);
    if (!cq) return;  // pinned: not reached
    const uint16_t size = uint16_t(1u << sq.attr.log_wq_sz);
    while (sq.state == prm::SqState::RDY) {
        const uint16_t posted = uint16_t(send_counter(sq) - sq.consumed);
        if (posted == 0) return;
        if (posted > size) {
            fail_sq(*cq, sqn, sq, {CqeSyndrome::LOCAL_LENGTH_ERR, "the doorbell record is " + std::to_string(posted) +
                                                                      " basic blocks ahead of a ring of " + std::to_string(size)},
                    s);
            return;
        }
        auto w = take_wqe(sq, sqn, posted, max_frame);
        if (auto* r = std::get_if<Refused>(&w)) return fail_sq(*cq, sqn, sq, *r, s);
        auto& t = std::get<Taken>(w);
        if (t.send.ctrl.ce == prm::kWqeCeCqeAlways && !cq_has_room(*cq))
            return fail_sq(*cq, sqn, sq, {CqeSyndrome::LOCAL_QP_OP_ERR, "its CQ is full (overrun)"}, s);
        wire.transmit(t.send.frame);
        ++sq.sent;
        ++s.frames;
        const uint16_t index = sq.consumed;
        sq.consumed = uint16_t(sq.consumed + t.blocks);
        if (t.send.ctrl.ce == prm::kWqeCeCqeAlways) {
            prm::Cqe c;
            c.opcode = uint8_t(prm::CqeOpcode::REQ);
            c.qpn = sqn;
            c.wqe_counter = index;
            post_cqe(*cq, c);
            ++sq.completions;
        }
    }
}

}  // namespace

SendStats& SendStats::operator+=(const SendStats& o) {
    doorbells += o.doorbells;
    frames += o.frames;
    errors += o.errors;
    return *this;
}

void send_doorbell(DeviceState& st, uint32_t uar_id, size_t max_frame, Wire& wire, SendStats& s) {
    ++s.doorbells;
    st.sqs.for_each([&](uint32_t sqn, SqObj& sq) {
        if (sq.attr.uar_page == uar_id) drain(st, sqn, sq, max_frame, wire, s);
    });
}

}  // namespace mlx5async::emu::dp
