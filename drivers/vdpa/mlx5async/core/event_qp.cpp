#include "event_qp.hpp"

#include <endian.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "common/prm/event_qp.hpp"
#include "common/prm/status.hpp"

namespace mlx5async::core {
namespace {

// Big-endian 32-bit words shared with the device: one store each.
void store_be32(std::byte* p, uint32_t v) {
    std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(p)).store(htobe32(v),
                                                                      std::memory_order_release);
}

// The step of a chain that failed, or that its deadline found in flight
// (the last one not done and not cancelled).
size_t failed_step(const devx::EntryResult& e) {
    size_t at = 0;
    for (size_t k = 0; k < e.steps.size(); k++)
        if (!e.steps[k].ok() && e.steps[k].state != devx::StepState::Cancelled) at = k;
    return at;
}

Error step_error(const devx::StepResult& s, uint16_t ring, const char* what) {
    Error err = s.error();
    err.what = "virtq " + std::to_string(ring) + ": " + what + ": " + prm::describe(err);
    return err;
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

namespace {

// A ring's chain, by step index: the CQ, both QPs, then the firmware QP's
// three transitions and ours.
enum Step : uint16_t { kCq, kFwQp, kSwQp, kFwRst2Init, kSwRst2Init = kFwRst2Init + 3 };

// Where a command takes the umem's id into `f`: the step of another chain
// that registers it.
devx::Command::IdFrom umem_id(const prm::Field& f, const EventQp::Build::At& umem) {
    return {f, umem.step, int32_t(umem.entry)};
}

// The CQ (collapsed: the device rewrites CQE 0 for every completion) in
// the umem `umem` registers.
Result<devx::Command> create_cq(const devx::Context& ctx, uint32_t uar_page, uint32_t eqn, uint8_t log_n,
                                const EventQp::Build::At& umem, uint16_t ring) {
    prm::CqAttr a;
    a.cc = true;
    a.log_cq_size = log_n;
    a.uar_page = uar_page;
    a.c_eqn = eqn;
    a.dbr_umem_valid = true;
    a.dbr_addr = EventQp::kDbrOffset;
    a.cq_umem_valid = true;
    a.cq_umem_offset = EventQp::kCqOffset;
    std::vector<std::byte> in(prm::kCreateCqInBytes);
    MLX5A_CHECK(prm::encode_create_cq(a, in));
    auto c = devx::Command::create_obj(ctx, std::move(in), prm::kEventQpCmdBytes, ring);
    const auto f = prm::create_cq_umem_fields();
    c.ids_from = {umem_id(f.dbr_umem_id, umem), umem_id(f.cq_umem_id, umem)};
    return c;
}

// The firmware QP (no SQ, zero-length RQ: the device owns it) and ours (a
// receive queue of 2^log_n 16-byte WQEs in the umem, completing into the CQ).
Result<devx::Command> create_qp(const devx::Context& ctx, uint32_t pdn, uint32_t uar_page, uint8_t log_n,
                                bool ours, const EventQp::Build::At& umem, uint16_t ring) {
    prm::QpAttr a = receive_only_rc_qp(pdn, ours ? prm::QpRqType::REGULAR : prm::QpRqType::ZERO_LEN);
    if (ours) {
        a.log_rq_size = log_n;
        a.log_rq_stride = 0;  // 16-byte WQEs
        a.uar_page = uar_page;
        a.dbr_umem_valid = true;
        a.dbr_addr = EventQp::kQpDbrOffset;
        a.wq_umem_valid = true;
        a.wq_umem_offset = EventQp::kRqOffset;
    }
    std::vector<std::byte> in(prm::kCreateQpInBytes);
    MLX5A_CHECK(prm::encode_create_qp(a, in));
    auto c = devx::Command::create_obj(ctx, std::move(in), prm::kEventQpCmdBytes, ring);
    if (ours) {
        const auto f = prm::create_qp_made_fields();
        c.ids_from = {{f.cqn_rcv, kCq}, {f.cqn_snd, kCq}, umem_id(f.dbr_umem_id, umem),
                      umem_id(f.wq_umem_id, umem)};
    }
    return c;
}

// RST->INIT->RTR->RTS of the QP step `self` created, connected to `peer`'s.
Result<void> connect(devx::Entry& e, const devx::Context& ctx, Step self, Step peer, uint16_t ring) {
    const auto f = prm::qp_modify_made_fields();
    for (auto t : {prm::QpTransition::RST2INIT, prm::QpTransition::INIT2RTR, prm::QpTransition::RTR2RTS}) {
        prm::QpModify m;
        m.transition = t;
        if (t == prm::QpTransition::RST2INIT) m.vhca_port_num = 1;
        if (t == prm::QpTransition::INIT2RTR) {
            m.mtu = 1;  // 256 bytes: the messages carry nothing
            m.log_msg_max = 30;
            m.fl = true;  // both ends on this function: force loopback
        }
        if (t == prm::QpTransition::RTR2RTS) m.retry_count = 7, m.rnr_retry = 7;
        std::vector<std::byte> in(prm::kQpModifyInBytes);
        MLX5A_CHECK(prm::encode_qp_modify(m, in));
        auto c = devx::Command::modify_made(ctx, self, std::move(in), prm::kEventQpCmdBytes, ring);
        c.ids_from = {{f.qpn, self}};
        if (t == prm::QpTransition::INIT2RTR) c.ids_from.push_back({f.remote_qpn, peer});
        e.steps.push_back(std::move(c));
    }
    return {};
}

const char* step_name(size_t step) {
    if (step == kCq) return "CREATE_CQ";
    if (step == kFwQp) return "CREATE_QP (firmware QP)";
    if (step == kSwQp) return "CREATE_QP (driver QP)";
    return step < kSwRst2Init ? "connecting the firmware QP" : "connecting the driver QP";
}

}  // namespace

Result<EventQp::Build> EventQp::plan(std::span<const uint16_t> rings, uint8_t log_n) {
    Build out;
    out.rings.assign(rings.begin(), rings.end());
    out.log_n = std::min(log_n, kMaxLog);
    out.umem_at.resize(rings.size());
    const std::vector<size_t> sizes(rings.size(), kUmemBytes);
    auto bufs = devx::PageBuffer::alloc_many(sizes);
    MLX5A_CHECK(bufs);
    for (devx::PageBuffer& m : *bufs) {
        // CQE 0 says "WQE 0xffff completed": the first real completion (WQE 0)
        // then counts as one (DPDK mlx5_vdpa_cq_create does the same).
        prm::encode_cqe({.wqe_counter = 0xffff, .opcode = uint8_t(prm::CqeOpcode::INVALID), .owner = true},
                        std::span<std::byte, prm::kCqeBytes>(m.data() + kCqOffset, prm::kCqeBytes));
    }
    out.bufs = std::move(*bufs);
    return out;
}

std::optional<size_t> EventQp::Build::index_of(uint16_t r) const {
    auto it = std::find(rings.begin(), rings.end(), r);
    if (it == rings.end()) return std::nullopt;
    return size_t(it - rings.begin());
}

devx::Command EventQp::Build::reg_umem(const devx::Context& ctx, size_t i) const {
    return devx::Command::reg_umem(ctx, bufs.at(i).data(), kUmemBytes, IBV_ACCESS_LOCAL_WRITE, rings.at(i));
}

Result<void> EventQp::add(devx::Batch& b, const devx::Context& ctx, uint32_t pdn, uint32_t uar_page,
                          uint32_t eqn, Build& build) {
    std::vector<devx::Entry> chains;
    for (size_t i = 0; i < build.rings.size(); i++) {
        const uint16_t r = build.rings[i];
        if (!build.umem_at[i])
            return fail(Errc::InvalidArgument, "virtq " + std::to_string(r) + ": event QP umem not in the batch");
        const Build::At& umem = *build.umem_at[i];
        devx::Entry e;
        e.queue = r;
        auto cq = create_cq(ctx, uar_page, eqn, build.log_n, umem, r);
        MLX5A_CHECK(cq);
        e.steps.push_back(std::move(*cq));
        for (bool ours : {false, true}) {
            auto qp = create_qp(ctx, pdn, uar_page, build.log_n, ours, umem, r);
            MLX5A_CHECK(qp);
            e.steps.push_back(std::move(*qp));
        }
        MLX5A_CHECK(connect(e, ctx, kFwQp, kSwQp, r));
        MLX5A_CHECK(connect(e, ctx, kSwQp, kFwQp, r));
        chains.push_back(std::move(e));
    }
    build.at = b.size();
    for (auto& e : chains) b.add(std::move(e));
    return {};
}

std::optional<devx::Command::IdFrom> EventQp::Build::fw_qpn_from(uint16_t r, const prm::Field& f) const {
    auto i = index_of(r);
    if (!i) return std::nullopt;
    return devx::Command::IdFrom{f, kFwQp, int32_t(at + *i)};
}

std::vector<EventQp> EventQp::take(Build& build, devx::BatchResult& res, std::vector<devx::PageBuffer>& late,
                                   std::vector<devx::Umem>& parked, Result<void>& first) {
    std::vector<EventQp> qps(build.rings.size());
    for (size_t i = 0; i < build.rings.size(); i++) {
        auto& e = res.entries.at(build.at + i);
        const Build::At& at = build.umem_at.at(i).value();
        auto& umem = res.entries.at(at.entry).steps.at(at.step);
        if (umem.ok() && !e.ok()) {
            devx::Umem u = std::move(umem.umem);
            u.own(build.bufs[i]);
            parked.push_back(std::move(u));
        } else if (!umem.ok() && umem.state != devx::StepState::Failed) {
            late.push_back(std::move(build.bufs[i]));  // unanswered: the kernel may still pin it
        }
        if (!umem.ok() || !e.ok()) {
            const size_t k = failed_step(e);
            if (first)
                first = unexpected(umem.ok() ? step_error(e.steps.at(k), build.rings[i], step_name(k))
                                             : step_error(umem, build.rings[i], "event QP umem"));
            continue;
        }
        EventQp& q = qps[i];
        q.log_n_ = build.log_n;
        q.mem_ = std::move(umem.umem);
        q.mem_.own(build.bufs[i]);
        q.cq_ = std::move(e.steps[kCq].obj);
        q.fw_qp_ = std::move(e.steps[kFwQp].obj);
        q.sw_qp_ = std::move(e.steps[kSwQp].obj);
        // Every receive WQE posted: the device may raise 2^log_n interrupts
        // before we repost.
        store_be32(q.mem_.data() + kQpDbrOffset, 1u << q.log_n_);
    }
    return qps;
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
