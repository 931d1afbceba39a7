// VIRTIO_Q_COUNTERS general object (obj_type 0x001c).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "../base/result.hpp"
#include "general_obj.hpp"

namespace mlx5async::prm {

struct VirtqCounters {
    uint64_t received_desc = 0;
    uint64_t completed_desc = 0;
    uint32_t error_cqes = 0;
    uint32_t bad_desc_errors = 0;
    uint32_t exceed_max_chain = 0;
    uint32_t invalid_buffer = 0;

    bool operator==(const VirtqCounters&) const = default;
};

inline constexpr size_t kCountersObjBytes = 128;  // Linux layout; DPDK's is shorter (tsv)
inline constexpr size_t kCountersCreateInBytes = kGeneralObjInHdrBytes + kCountersObjBytes;
inline constexpr size_t kCountersQueryOutBytes = kGeneralObjOutHdrBytes + kCountersObjBytes;

void write_counters_object(const VirtqCounters& c, std::span<std::byte> obj);
Result<VirtqCounters> read_counters_object(std::span<const std::byte> obj);
void encode_create_counters(std::span<std::byte> in);
void encode_query_counters(uint32_t obj_id, std::span<std::byte> in);
Result<VirtqCounters> decode_query_counters_out(std::span<const std::byte> out, uint32_t obj_id = 0);

}  // namespace mlx5async::prm
