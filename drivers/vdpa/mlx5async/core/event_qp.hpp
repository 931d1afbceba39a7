// A virtq's interrupt objects in QP event mode (as Linux mlx5_vdpa and DPDK
// mlx5_vdpa_event.c): a collapsed CQ, a firmware QP the virtq names in
// event_qpn_or_msix, and our RC QP connected to it. Each interrupt the
// device raises consumes one receive WQE of our QP and rewrites CQE 0 with
// that WQE's counter; the armed CQ then raises a completion event on the
// device's DevX event channel. One umem holds the receive queue, the CQ and
// both doorbell records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/base/result.hpp"
#include "common/devx/engine.hpp"
#include "common/devx/raii.hpp"

namespace mlx5async::core {

class EventQp {
public:
    // Page-aligned parts of the umem: the receive queue (16 << log bytes,
    // one page at most), the doorbell records, then the CQ (64 << log bytes:
    // collapsed or not, the device owns all of it).
    static constexpr uint8_t kMaxLog = 8;  // 256 WQEs / CQEs
    static constexpr size_t kRqOffset = 0;
    static constexpr size_t kDbrOffset = 4096;  // CQ dbrec, then the QP dbrec 64 bytes on
    static constexpr size_t kQpDbrOffset = kDbrOffset + 64;
    static constexpr size_t kCqOffset = 8192;
    static constexpr size_t kUmemBytes = kCqOffset + (64u << kMaxLog);

    EventQp() = default;
    EventQp(EventQp&&) = default;
    EventQp& operator=(EventQp&&) = default;

    // Event QPs in the making, in a batch the caller shares: each ring's
    // umem registration a step of a chain the caller places (plan, then
    // reg_umem), then one chain per ring (add: its CQ, both QPs, both QPs'
    // RST->INIT->RTR->RTS, each naming what the steps before made and the
    // umem), then taken from the batch's result.
    struct Build {
        struct At {
            size_t entry = 0;
            uint16_t step = 0;
        };
        std::vector<uint16_t> rings;
        std::vector<devx::PageBuffer> bufs;     // each ring's umem memory
        std::vector<std::optional<At>> umem_at;  // where each ring's umem is registered
        uint8_t log_n = 0;
        size_t at = 0;  // first chain in the batch
        // Ring r's index in `rings`, or nullopt: no event QP to make for r.
        std::optional<size_t> index_of(uint16_t r) const;
        // Registers ring i's umem; the caller adds it to a chain of the batch
        // and records where in umem_at[i].
        devx::Command reg_umem(const devx::Context& ctx, size_t i) const;
        // Where a command of the batch takes ring r's firmware QP number
        // into `f` (its chain's CREATE_QP), or nullopt: no chain for r.
        std::optional<devx::Command::IdFrom> fw_qpn_from(uint16_t r, const prm::Field& f) const;
    };
    // The umems' memory: 2^log_n receive WQEs each (at most kMaxLog), CQE 0
    // set to "nothing yet".
    static Result<Build> plan(std::span<const uint16_t> rings, uint8_t log_n);
    // The chains, each after the chain that registers its umem; a ring whose
    // umem has no place in the batch is InvalidArgument (nothing added).
    static Result<void> add(devx::Batch& b, const devx::Context& ctx, uint32_t pdn, uint32_t uar_page,
                            uint32_t eqn, Build& build);
    // The pairs in ring order, their receive WQEs posted; a ring whose chain
    // did not complete (or whose umem's did not) gets none (false), leaves
    // its buffer in `late` (a registration may still pin it), and the first
    // such names its ring and command in `err`.
    // A ring whose umem was registered but whose chain did not complete
    // leaves the umem (its buffer owned) in `parked` instead: the objects the
    // chain made name it until they go (with the batch's result, or with a
    // job that comes back after the deadline).
    static std::vector<EventQp> take(Build& build, devx::BatchResult& res, std::vector<devx::PageBuffer>& late,
                                     std::vector<devx::Umem>& parked, Result<void>& err);

    explicit operator bool() const { return bool(fw_qp_); }
    const devx::DevxObj& cq() const { return cq_; }
    uint32_t cqn() const { return cq_.obj_id(); }
    uint32_t fw_qpn() const { return fw_qp_.obj_id(); }

    // Event thread only (one thread per device touches these).
    // Completions since the last poll (0 if none); updates the CQ consumer
    // index and reposts as many receive WQEs.
    uint16_t poll();
    // Arms the CQ for the next completion: the arm word into the CQ's doorbell
    // record, then the doorbell register of the UAR page at `uar_base`.
    void arm(void* uar_base);
    // After each completion event (the sequence number of the next arm).
    void next_arm_sn() { arm_sn_ = uint8_t((arm_sn_ + 1) & 3); }

private:
    devx::Umem mem_;  // last destroyed
    devx::DevxObj cq_;
    devx::DevxObj fw_qp_;  // named by the virtq: destroyed after it
    devx::DevxObj sw_qp_;
    uint8_t log_n_ = 0;
    uint32_t cq_ci_ = 0;
    uint16_t qp_pi_ = 0;
    uint8_t arm_sn_ = 0;
};

}  // namespace mlx5async::core
