// A send queue of the driver's own on the function, for the frames the
// device sends on a VM's behalf (its RARP announce, announcer.hpp): a CQ,
// the SQ naming the device's TIS, both in one umem with their doorbell
// records, and a UAR page for the send doorbell. Made at probe with
// blocking DevX commands (CREATE_CQ, CREATE_SQ, MODIFY_SQ RST -> RDY, as
// DPDK's mlx5_devx_sq_create builds a Tx queue): never on a downtime path.
// Each frame is one WQE with the frame inline in its Ethernet segment and
// a CQE (prm/sq.hpp).
//
// Not thread-safe: the announcer's lock serialises every call.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "common/base/result.hpp"
#include "common/devx/raii.hpp"

namespace mlx5async::core {

class AnnounceSq {
public:
    // 64 basic blocks of 64 bytes (32 announce frames in flight), as many
    // CQEs: the CQ never overruns.
    static constexpr uint8_t kLogBlocks = 6;
    static constexpr size_t kRingOffset = 0;
    static constexpr size_t kCqOffset = 4096;
    static constexpr size_t kCqDbrOffset = 8192;
    static constexpr size_t kSqDbrOffset = kCqDbrOffset + 64;
    static constexpr size_t kUmemBytes = kCqDbrOffset + 4096;

    struct Counters {
        uint64_t posted = 0;     // frames whose doorbell rang
        uint64_t completed = 0;  // their CQEs
        uint64_t errors = 0;     // error CQEs (the SQ was reset after each)
        uint64_t full = 0;       // frames not posted: the ring had no room
    };

    AnnounceSq() = default;
    AnnounceSq(AnnounceSq&&) = default;
    AnnounceSq& operator=(AnnounceSq&&) = default;

    // `eqn`: the completion EQ its CQ reports to; `sq_ts_format`: the HCA
    // cap (the SQ takes the format it allows).
    static Result<AnnounceSq> open(const devx::Context& ctx, uint32_t pdn, uint32_t tisn, uint32_t eqn,
                                   uint8_t sq_ts_format);

    // Posts `frame` (at least an Ethernet header, at most what one WQE holds
    // inline) and rings the doorbell. Busy when the ring has no room.
    Result<void> post(std::span<const std::byte> frame);
    // Takes the CQEs written since the last poll. An error CQE is returned
    // (its syndrome and WQE), after the SQ is reset for the next frame.
    Result<void> poll();

    const Counters& counters() const { return counters_; }
    uint32_t sqn() const { return sq_.obj_id(); }
    uint32_t cqn() const { return cq_.obj_id(); }
    explicit operator bool() const { return bool(sq_); }

private:
    Result<void> reset_after_error();
    Result<void> modify(uint8_t from, uint8_t to);

    // Destroyed in reverse: the SQ, then the CQ it names, the umem, the UAR.
    devx::Uar uar_;
    devx::Umem mem_;
    devx::DevxObj cq_;
    devx::DevxObj sq_;
    uint16_t pi_ = 0;     // basic blocks posted (the doorbell record's counter)
    uint16_t acked_ = 0;  // basic blocks completed
    uint32_t cq_ci_ = 0;  // CQEs taken
    std::array<uint8_t, 1u << kLogBlocks> blocks_at_{};  // each WQE's length, by its first block
    Counters counters_;
};

}  // namespace mlx5async::core
