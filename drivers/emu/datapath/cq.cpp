#include "cq.hpp"

#include <endian.h>

#include <array>
#include <atomic>
#include <cstring>

namespace mlx5async::emu::dp {
namespace {

constexpr uint32_t kCiMask = 0xffffff;  // CQ indexes are 24-bit

uint32_t load_be32(const std::byte* p) {
    auto* w = reinterpret_cast<uint32_t*>(const_cast<std::byte*>(p));
    return be32toh(std::atomic_ref<uint32_t>(*w).load(std::memory_order_acquire));
}

}  // namespace

bool cq_has_room(const CqObj& cq) {
    if (cq.attr.cc || cq.attr.oi) return true;
    const uint32_t ci = load_be32(cq.dbr) & kCiMask;
    return ((cq.produced - ci) & kCiMask) < (1u << cq.attr.log_cq_size);
}

// Bytes 60..63 (wqe_counter, signature, op_own) last, as one release store:
// a poller reading that word (DPDK's collapsed CQ) never sees a new counter
// with an old opcode or owner bit.
void post_cqe(CqObj& cq, prm::Cqe c) {
    const uint32_t size_mask = (1u << cq.attr.log_cq_size) - 1;
    std::byte* slot = cq.buf + prm::kCqeBytes * (cq.attr.cc ? 0 : (cq.produced & size_mask));
    c.owner = (cq.produced >> cq.attr.log_cq_size) & 1;
    std::array<std::byte, prm::kCqeBytes> img;
    prm::encode_cqe(c, img);
    std::memcpy(slot, img.data(), 60);
    uint32_t tail;
    std::memcpy(&tail, img.data() + 60, 4);
    std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(slot + 60)).store(tail, std::memory_order_release);
    cq.produced = (cq.produced + 1) & kCiMask;
}

}  // namespace mlx5async::emu::dp
