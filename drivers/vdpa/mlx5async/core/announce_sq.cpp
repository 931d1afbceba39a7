#include "announce_sq.hpp"

#include <endian.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/prm/event_qp.hpp"
#include "common/prm/sq.hpp"
#include "common/prm/status.hpp"

namespace mlx5async::core {
namespace {

constexpr uint16_t kBlocks = 1u << AnnounceSq::kLogBlocks;
constexpr uint32_t kCiMask = 0xffffff;

// Big-endian words shared with the device: one store each.
void store_be32(std::byte* p, uint32_t v) {
    std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(p)).store(htobe32(v), std::memory_order_release);
}

Error named(Error e, const char* what) {
    e.what = std::string("announce SQ: ") + what + ": " + prm::describe(e);
    return e;
}

}  // namespace

Result<AnnounceSq> AnnounceSq::open(const devx::Context& ctx, uint32_t pdn, uint32_t tisn, uint32_t eqn,
                                    uint8_t sq_ts_format) {
    AnnounceSq q;
    auto uar = devx::Uar::alloc(ctx);
    if (!uar) return unexpected(named(uar.error(), "UAR page"));
    q.uar_ = std::move(*uar);
    auto mem = devx::Umem::reg(ctx, kUmemBytes);
    if (!mem) return unexpected(named(mem.error(), "umem"));
    q.mem_ = std::move(*mem);
    // Every CQE invalid and owned by the device for the first pass.
    for (uint16_t i = 0; i < kBlocks; ++i)
        prm::encode_cqe({.opcode = uint8_t(prm::CqeOpcode::INVALID), .owner = true},
                        std::span<std::byte, prm::kCqeBytes>(q.mem_.data() + kCqOffset + i * prm::kCqeBytes,
                                                             prm::kCqeBytes));
    prm::CqAttr c;
    c.log_cq_size = kLogBlocks;
    c.uar_page = q.uar_.page_id();
    c.c_eqn = eqn;
    c.dbr_umem_valid = c.cq_umem_valid = true;
    c.dbr_umem_id = c.cq_umem_id = q.mem_.id();
    c.dbr_addr = kCqDbrOffset;
    c.cq_umem_offset = kCqOffset;
    std::vector<std::byte> cin(prm::kCreateCqInBytes), cout(prm::kEventQpCmdBytes);
    MLX5A_CHECK(prm::encode_create_cq(c, cin));
    auto cq = devx::DevxObj::create(ctx, cin, cout);
    if (!cq) return unexpected(named(cq.error(), "CREATE_CQ"));
    q.cq_ = std::move(*cq);
    prm::SqAttr s;
    s.flush_in_error_en = true;
    s.state = uint8_t(prm::SqState::RST);
    s.ts_format = uint8_t(prm::sq_ts_format_for_cap(sq_ts_format));
    s.cqn = q.cq_.obj_id();
    s.tis_lst_sz = 1;
    s.tis_num_0 = tisn;
    s.wq_type = prm::kWqTypeCyclic;
    s.pd = pdn;
    s.uar_page = q.uar_.page_id();
    s.dbr_addr = kSqDbrOffset;
    s.log_wq_stride = 6;  // 64-byte basic blocks
    s.log_wq_sz = kLogBlocks;
    s.dbr_umem_valid = s.wq_umem_valid = true;
    s.dbr_umem_id = s.wq_umem_id = q.mem_.id();
    s.wq_umem_offset = kRingOffset;
    std::vector<std::byte> sin(prm::kCreateSqInBytes), sout(prm::kSqCmdBytes);
    MLX5A_CHECK(prm::encode_create_sq(s, sin));
    auto sq = devx::DevxObj::create(ctx, sin, sout);
    if (!sq) return unexpected(named(sq.error(), "CREATE_SQ"));
    q.sq_ = std::move(*sq);
    MLX5A_CHECK(q.modify(uint8_t(prm::SqState::RST), uint8_t(prm::SqState::RDY)));
    return q;
}

Result<void> AnnounceSq::modify(uint8_t from, uint8_t to) {
    std::vector<std::byte> in(prm::kModifySqInBytes), out(prm::kSqCmdBytes);
    MLX5A_CHECK(prm::encode_modify_sq({sq_.obj_id(), from, to}, in));
    errno = 0;
    const int rc = sq_.api()->obj_modify(sq_.get(), in.data(), in.size(), out.data(), out.size());
    const int err = errno;
    if (auto st = prm::decode_modify_sq_out(out); !st) return unexpected(named(st.error(), "MODIFY_SQ"));
    if (rc != 0) return unexpected(named(Error::sys(err ? err : EIO, "mlx5dv_devx_obj_modify"), "MODIFY_SQ"));
    return {};
}

Result<void> AnnounceSq::post(std::span<const std::byte> frame) {
    const uint16_t blocks = prm::wqe_basic_blocks(prm::inline_send_ds(frame.size()));
    if (uint16_t(pi_ - acked_) + blocks > kBlocks) {
        ++counters_.full;
        return fail(Errc::Busy, "announce SQ: " + std::to_string(uint16_t(pi_ - acked_)) +
                                    " basic blocks not completed by the device: no room");
    }
    std::vector<std::byte> wqe(size_t(blocks) * prm::kWqeBasicBlock);
    MLX5A_CHECK(prm::encode_inline_send(pi_, sq_.obj_id(), /*signaled=*/true, frame, wqe));
    std::byte* ring = mem_.data() + kRingOffset;
    for (uint16_t i = 0; i < blocks; ++i)
        std::memcpy(ring + size_t((pi_ + i) & (kBlocks - 1)) * prm::kWqeBasicBlock,
                    wqe.data() + size_t(i) * prm::kWqeBasicBlock, prm::kWqeBasicBlock);
    blocks_at_[pi_ & (kBlocks - 1)] = uint8_t(blocks);
    pi_ = uint16_t(pi_ + blocks);
    // The WQE before the record, the record before the register (DPDK
    // mlx5_tx_dbrec_cond_wmb): the device reads the ring once rung.
    store_be32(mem_.data() + kSqDbrOffset + prm::kSqDbrSendCounter, pi_);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    uint64_t first8;
    std::memcpy(&first8, wqe.data(), sizeof first8);
    auto* reg = static_cast<uint64_t*>(uar_.get()->reg_addr);  // UAR + 0x800
    std::atomic_ref<uint64_t>(*reg).store(first8, std::memory_order_release);
    ++counters_.posted;
    return {};
}

Result<void> AnnounceSq::poll() {
    Result<void> first = {};
    bool took = false;
    while (true) {
        std::byte* slot = mem_.data() + kCqOffset + size_t(cq_ci_ & (kBlocks - 1)) * prm::kCqeBytes;
        // The device publishes bytes 60..63 (op_own is byte 63) last, as one
        // 32-bit word: acquire that same word so the rest of the CQE is visible.
        const uint32_t tail = std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(slot + 60))
                                  .load(std::memory_order_acquire);
        std::byte tail_bytes[4];
        std::memcpy(tail_bytes, &tail, sizeof tail);
        const auto op_own = uint8_t(tail_bytes[3]);
        const bool owner = op_own & 1;
        if ((op_own >> 4) == uint8_t(prm::CqeOpcode::INVALID) || owner != bool((cq_ci_ >> kLogBlocks) & 1))
            break;
        const prm::Cqe c = prm::decode_cqe(std::span<const std::byte, prm::kCqeBytes>(slot, prm::kCqeBytes));
        cq_ci_ = (cq_ci_ + 1) & kCiMask;
        took = true;
        if (c.opcode == uint8_t(prm::CqeOpcode::REQ)) {
            ++counters_.completed;
            acked_ = uint16_t(c.wqe_counter + blocks_at_[c.wqe_counter & (kBlocks - 1)]);
            continue;
        }
        ++counters_.errors;
        if (first)
            first = fail(Errc::Firmware, "announce SQ " + std::to_string(sq_.obj_id()) + ": WQE " +
                                             std::to_string(c.wqe_counter) + " failed, CQE opcode " +
                                             std::to_string(c.opcode) + " syndrome " + std::to_string(c.syndrome) +
                                             " vendor syndrome " + std::to_string(c.vendor_err_synd));
    }
    if (took) store_be32(mem_.data() + kCqDbrOffset, cq_ci_ & kCiMask);
    if (!first) MLX5A_CHECK(reset_after_error());
    return first;
}

// ERR -> RST -> RDY: the ring starts over at 0 (what it held is gone).
Result<void> AnnounceSq::reset_after_error() {
    MLX5A_CHECK(modify(uint8_t(prm::SqState::ERR), uint8_t(prm::SqState::RST)));
    pi_ = acked_ = 0;
    store_be32(mem_.data() + kSqDbrOffset + prm::kSqDbrSendCounter, 0);
    return modify(uint8_t(prm::SqState::RST), uint8_t(prm::SqState::RDY));
}

}  // namespace mlx5async::core
