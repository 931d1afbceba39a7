// Field table of virtio_q_counters (VIRTIO_Q_COUNTERS general object,
// obj_type 0x001c), names and offsets as prm-virtq-fields.tsv. Linux
// mlx5_ifc_vdpa.h sizes it 0x400 bits; DPDK 22.11 mlx5_prm.h has the same
// value fields and a shorter trailing reserved_at_180 (0x50 bits).
#pragma once

#include "field.hpp"

namespace mlx5async::prm::layout {

namespace virtio_q_counters {
inline constexpr Field modify_field_select{"modify_field_select", 0x0, 64};
inline constexpr Field reserved_at_40{"reserved_at_40", 0x40, 64};
inline constexpr Field received_desc{"received_desc", 0x80, 64};
inline constexpr Field completed_desc{"completed_desc", 0xc0, 64};
inline constexpr Field error_cqes{"error_cqes", 0x100, 32};
inline constexpr Field bad_desc_errors{"bad_desc_errors", 0x120, 32};
inline constexpr Field exceed_max_chain{"exceed_max_chain", 0x140, 32};
inline constexpr Field invalid_buffer{"invalid_buffer", 0x160, 32};
inline constexpr Field reserved_at_180{"reserved_at_180", 0x180, 0x280};

inline constexpr const Field* kFields[] = {
    &modify_field_select, &reserved_at_40, &received_desc, &completed_desc,
    &error_cqes, &bad_desc_errors, &exceed_max_chain, &invalid_buffer, &reserved_at_180,
};
static_assert(tiles(kFields, 0x400));

namespace dpdk {
inline constexpr Field reserved_at_180{"reserved_at_180", 0x180, 0x50};
inline constexpr const Field* kFields[] = {&reserved_at_180};
}  // namespace dpdk
}  // namespace virtio_q_counters

inline constexpr Layout kVirtioQCounters{"virtio_q_counters", 0x400, virtio_q_counters::kFields};

}  // namespace mlx5async::prm::layout
