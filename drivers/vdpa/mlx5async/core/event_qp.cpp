#include "event_qp.hpp"

#include <endian.h>

#include <atomic>
#include <cstring>

#include "common/prm/event_qp.hpp"

namespace mlx5async::core {
namespace {

// Big-endian 32-bit words shared with the device: one store each.
void store_be32(std::byte* p, uint32_t v) {
    std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(p)).store(htobe32(v),
                                                                      std::memory_order_release);
}

Error step_error(const devx::EntryResult& e, uint16_t ring, const char* what) {
    for (const auto& s : e.steps)
        if (!s.ok()) {
            Error err = s.error();
            err.what = "virtq " + std::to_string(ring) + ": " + what + ": " + err.what;
            return err;
        }
    return Error::make(Errc::Firmware, "virtq " + std::to_string(ring) + ": " + what);
}

// An RC QP without a send queue, migrated (both event QPs of a virtq).
prm::QpAttr receive_only_rc_qp(uint32_t pdn, prm::QpRqType rq) {
    prm::QpAttr a;
    a.st = uint8_t(prm::QpServiceType::RC);
    a.pm_state = uint8_t(prm::QpPmState::MIGRATED);
    a.pd = pdn;
    a.no_sq = true;
    a.rq_type = uint8_t(rq);
    return a;
}

}  // namespace

Result<std::vector<EventQp>> EventQp::create(devx::Engine& engine, const devx::Context& ctx,
                                             uint32_t pdn, uint32_t uar_page, uint32_t eqn,
                                             std::span<const uint16_t> rings, uint8_t log_n,
                                             std::chrono::milliseconds timeout,
                                             std::vector<devx::PageBuffer>& late) {
    if (log_n > kMaxLog) log_n = kMaxLog;
    std::vector<EventQp> qps(rings.size());
    // Memory first: receive queue, CQ, doorbell records (registered host memory).
    MLX5A_CHECK(register_umems(qps, engine, ctx, rings, timeout, late));
    for (auto& q : qps) {
        q.log_n_ = log_n;
        // CQE 0 says "WQE 0xffff completed": the first real completion (WQE 0)
        // then counts as one (DPDK mlx5_vdpa_cq_create does the same).
        std::byte* cqe = q.mem_.data() + kCqOffset;
        prm::encode_cqe({.wqe_counter = 0xffff, .opcode = uint8_t(prm::CqeOpcode::INVALID), .owner = true},
                        std::span<std::byte, prm::kCqeBytes>(cqe, prm::kCqeBytes));
    }
    MLX5A_CHECK(create_cqs(qps, engine, ctx, uar_page, eqn, rings, timeout));
    MLX5A_CHECK(create_qps(qps, engine, ctx, pdn, uar_page, rings, timeout));
    MLX5A_CHECK(connect_qps(qps, engine, rings, timeout));
    // Every receive WQE posted: the device may raise 2^log_n interrupts before
    // we repost.
    for (auto& q : qps) store_be32(q.mem_.data() + kQpDbrOffset, 1u << q.log_n_);
    return qps;
}

// One batch of registrations (in parallel on the engine's workers).
Result<void> EventQp::register_umems(Qps& qps, devx::Engine& engine, const devx::Context& ctx,
                                     std::span<const uint16_t> rings, std::chrono::milliseconds timeout,
                                     std::vector<devx::PageBuffer>& late) {
    std::vector<devx::PageBuffer> bufs;
    devx::Batch regs;
    for (size_t i = 0; i < qps.size(); i++) {
        auto m = devx::PageBuffer::alloc(kUmemBytes);
        MLX5A_CHECK(m);
        bufs.push_back(std::move(*m));
        regs.add(devx::Command::reg_umem(ctx, bufs.back().data(), kUmemBytes, IBV_ACCESS_LOCAL_WRITE,
                                         rings[i]));
    }
    auto res = engine.run(std::move(regs), timeout);
    Result<void> first = {};
    for (size_t i = 0; i < qps.size(); i++) {
        auto& s = res.entries[i].steps.at(0);
        if (s.ok()) {
            qps[i].mem_ = std::move(s.umem);
            qps[i].mem_.own(bufs[i]);
            continue;
        }
        if (s.state != devx::StepState::Failed) late.push_back(std::move(bufs[i]));
        if (first) first = unexpected(step_error(res.entries[i], rings[i], "event QP umem"));
    }
    return first;
}

// The CQs (collapsed: the device rewrites CQE 0 for every completion).
Result<void> EventQp::create_cqs(Qps& qps, devx::Engine& engine, const devx::Context& ctx,
                                 uint32_t uar_page, uint32_t eqn, std::span<const uint16_t> rings,
                                 std::chrono::milliseconds timeout) {
    devx::Batch cqs;
    for (size_t i = 0; i < qps.size(); i++) {
        prm::CqAttr a;
        a.cc = true;
        a.log_cq_size = qps[i].log_n_;
        a.uar_page = uar_page;
        a.c_eqn = eqn;
        a.dbr_umem_valid = true;
        a.dbr_umem_id = qps[i].mem_.id();
        a.dbr_addr = kDbrOffset;
        a.cq_umem_valid = true;
        a.cq_umem_id = qps[i].mem_.id();
        a.cq_umem_offset = kCqOffset;
        std::vector<std::byte> in(prm::kCreateCqInBytes);
        MLX5A_CHECK(prm::encode_create_cq(a, in));
        cqs.add(devx::Command::create_obj(ctx, std::move(in), prm::kEventQpCmdBytes, rings[i]));
    }
    auto cr = engine.run(std::move(cqs), timeout);
    for (size_t i = 0; i < qps.size(); i++) {
        auto& e = cr.entries[i];
        if (!e.ok()) return unexpected(step_error(e, rings[i], "CREATE_CQ"));
        qps[i].cq_ = std::move(e.steps[0].obj);
    }
    return {};
}

// The firmware QP (no SQ, zero-length RQ: the device owns it) and ours (a
// receive queue of 2^log_n 16-byte WQEs completing into the CQ).
Result<void> EventQp::create_qps(Qps& qps, devx::Engine& engine, const devx::Context& ctx,
                                 uint32_t pdn, uint32_t uar_page, std::span<const uint16_t> rings,
                                 std::chrono::milliseconds timeout) {
    devx::Batch qpb;
    for (size_t i = 0; i < qps.size(); i++) {
        prm::QpAttr fw = receive_only_rc_qp(pdn, prm::QpRqType::ZERO_LEN);
        std::vector<std::byte> fin(prm::kCreateQpInBytes);
        MLX5A_CHECK(prm::encode_create_qp(fw, fin));
        qpb.add(devx::Command::create_obj(ctx, std::move(fin), prm::kEventQpCmdBytes, rings[i]));

        prm::QpAttr sw = receive_only_rc_qp(pdn, prm::QpRqType::REGULAR);
        sw.log_rq_size = qps[i].log_n_;
        sw.log_rq_stride = 0;  // 16-byte WQEs
        sw.uar_page = uar_page;
        sw.cqn_rcv = qps[i].cqn();
        sw.cqn_snd = qps[i].cqn();
        sw.dbr_umem_valid = true;
        sw.dbr_umem_id = qps[i].mem_.id();
        sw.dbr_addr = kQpDbrOffset;
        sw.wq_umem_valid = true;
        sw.wq_umem_id = qps[i].mem_.id();
        sw.wq_umem_offset = kRqOffset;
        std::vector<std::byte> sin(prm::kCreateQpInBytes);
        MLX5A_CHECK(prm::encode_create_qp(sw, sin));
        qpb.add(devx::Command::create_obj(ctx, std::move(sin), prm::kEventQpCmdBytes, rings[i]));
    }
    auto qr = engine.run(std::move(qpb), timeout);
    for (size_t i = 0; i < qps.size(); i++) {
        auto& f = qr.entries[2 * i];
        auto& s = qr.entries[2 * i + 1];
        if (f.ok()) qps[i].fw_qp_ = std::move(f.steps[0].obj);
        if (s.ok()) qps[i].sw_qp_ = std::move(s.steps[0].obj);
        if (!f.ok()) return unexpected(step_error(f, rings[i], "CREATE_QP (firmware QP)"));
        if (!s.ok()) return unexpected(step_error(s, rings[i], "CREATE_QP (driver QP)"));
    }
    return {};
}

// Each pair connected: RST->INIT->RTR->RTS on both, one chain per QP.
Result<void> EventQp::connect_qps(Qps& qps, devx::Engine& engine, std::span<const uint16_t> rings,
                                  std::chrono::milliseconds timeout) {
    devx::Batch conn;
    for (size_t i = 0; i < qps.size(); i++) {
        for (int side = 0; side < 2; side++) {
            const devx::DevxObj& self = side ? qps[i].sw_qp_ : qps[i].fw_qp_;
            const devx::DevxObj& peer = side ? qps[i].fw_qp_ : qps[i].sw_qp_;
            devx::Entry e;
            e.queue = rings[i];
            for (auto t : {prm::QpTransition::RST2INIT, prm::QpTransition::INIT2RTR,
                           prm::QpTransition::RTR2RTS}) {
                prm::QpModify m;
                m.transition = t;
                m.qpn = self.obj_id();
                if (t == prm::QpTransition::RST2INIT) m.vhca_port_num = 1;
                if (t == prm::QpTransition::INIT2RTR) {
                    m.remote_qpn = peer.obj_id();
                    m.mtu = 1;  // 256 bytes: the messages carry nothing
                    m.log_msg_max = 30;
                    m.fl = true;  // both ends on this function: force loopback
                }
                if (t == prm::QpTransition::RTR2RTS) m.retry_count = 7, m.rnr_retry = 7;
                std::vector<std::byte> in(prm::kQpModifyInBytes);
                MLX5A_CHECK(prm::encode_qp_modify(m, in));
                e.steps.push_back(devx::Command::modify_obj(self, std::move(in), prm::kEventQpCmdBytes, rings[i]));
            }
            conn.add(std::move(e));
        }
    }
    auto mr = engine.run(std::move(conn), timeout);
    for (size_t i = 0; i < mr.entries.size(); i++)
        if (!mr.entries[i].ok())
            return unexpected(step_error(mr.entries[i], rings[i / 2],
                                         i % 2 ? "connecting the driver QP" : "connecting the firmware QP"));
    return {};
}

uint16_t EventQp::poll() {
    const std::byte* cqe = mem_.data() + kCqOffset;
    // wqe_counter (be16 at byte 60) of the collapsed CQE 0: one load.
    uint16_t raw = std::atomic_ref<const uint16_t>(*reinterpret_cast<const uint16_t*>(cqe + 60))
                       .load(std::memory_order_acquire);
    uint16_t comp = uint16_t(be16toh(raw) + 1 - qp_pi_);
    if (!comp) return 0;
    cq_ci_ += comp;
    store_be32(mem_.data() + kDbrOffset, cq_ci_ & 0xffffff);
    qp_pi_ = uint16_t(qp_pi_ + comp);
    store_be32(mem_.data() + kQpDbrOffset, uint32_t(uint16_t(qp_pi_ + (1u << log_n_))));
    return comp;
}

void EventQp::arm(void* uar_base) {
    uint32_t w = prm::cq_arm_word({.sn = arm_sn_, .cmd = prm::CqArmCmd::NEXT, .ci = cq_ci_ & 0xffffff});
    store_be32(mem_.data() + kDbrOffset + 4, w);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // record before the register
    auto* reg = reinterpret_cast<uint64_t*>(static_cast<std::byte*>(uar_base) + prm::kUarCqDoorbellOffset);
    std::atomic_ref<uint64_t>(*reg).store(htobe64(prm::cq_uar_doorbell(w, cqn())),
                                          std::memory_order_release);
}

}  // namespace mlx5async::core
