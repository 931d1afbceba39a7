// Field tables of the command headers: general_obj_in_cmd_hdr,
// general_obj_out_cmd_hdr and the generic command in/out header (mbox_in /
// mbox_out in Linux mlx5_core). Names and offsets as prm-virtq-fields.tsv;
// cross-checked against Linux mlx5_ifc.h and DPDK mlx5_prm.h.
#pragma once

#include "field.hpp"

namespace mlx5async::prm::layout {

namespace general_obj_in_cmd_hdr {
inline constexpr Field opcode{"opcode", 0x0, 16};
inline constexpr Field uid{"uid", 0x10, 16};
inline constexpr Field vhca_tunnel_id{"vhca_tunnel_id", 0x20, 16};
inline constexpr Field obj_type{"obj_type", 0x30, 16};
inline constexpr Field obj_id{"obj_id", 0x40, 32};
// op_param is a union at 0x60: the create view tiles the table, the query
// view (alias_object, obj_offset) is listed in kViews.
inline constexpr Field create_alias_object{"op_param.create.alias_object", 0x60, 1};
inline constexpr Field create_reserved_at_1{"op_param.create.reserved_at_1", 0x61, 2};
inline constexpr Field log_obj_range{"op_param.create.log_obj_range", 0x63, 5};
inline constexpr Field create_reserved_at_8{"op_param.create.reserved_at_8", 0x68, 24};
inline constexpr Field query_alias_object{"op_param.query.alias_object", 0x60, 1};
inline constexpr Field query_obj_offset{"op_param.query.obj_offset", 0x61, 31};

inline constexpr const Field* kFields[] = {
    &opcode, &uid, &vhca_tunnel_id, &obj_type, &obj_id,
    &create_alias_object, &create_reserved_at_1, &log_obj_range, &create_reserved_at_8,
};
static_assert(tiles(kFields, 128));
inline constexpr const Field* kViews[] = {&query_alias_object, &query_obj_offset};

// DPDK 22.11 mlx5_prm.h names of the same bits (uid + vhca_tunnel_id are
// one reserved_at_10; op_param is {reserved_at_60, log_obj_range,
// reserved_at_58} | obj_offset).
namespace dpdk {
inline constexpr Field reserved_at_10{"reserved_at_10", 0x10, 32};
inline constexpr Field reserved_at_60{"reserved_at_60", 0x60, 3};
inline constexpr Field log_obj_range{"log_obj_range", 0x63, 5};
inline constexpr Field reserved_at_58{"reserved_at_58", 0x68, 24};
inline constexpr Field obj_offset{"obj_offset", 0x60, 32};
inline constexpr const Field* kFields[] = {&reserved_at_10, &reserved_at_60, &log_obj_range,
                                           &reserved_at_58, &obj_offset};
}  // namespace dpdk
}  // namespace general_obj_in_cmd_hdr

inline constexpr Layout kGeneralObjInCmdHdr{"general_obj_in_cmd_hdr", 128,
                                            general_obj_in_cmd_hdr::kFields};

namespace general_obj_out_cmd_hdr {
inline constexpr Field status{"status", 0x0, 8};
inline constexpr Field reserved_at_8{"reserved_at_8", 0x8, 24};
inline constexpr Field syndrome{"syndrome", 0x20, 32};
inline constexpr Field obj_id{"obj_id", 0x40, 32};
inline constexpr Field reserved_at_60{"reserved_at_60", 0x60, 32};

inline constexpr const Field* kFields[] = {&status, &reserved_at_8, &syndrome, &obj_id,
                                           &reserved_at_60};
static_assert(tiles(kFields, 128));
}  // namespace general_obj_out_cmd_hdr

inline constexpr Layout kGeneralObjOutCmdHdr{"general_obj_out_cmd_hdr", 128,
                                             general_obj_out_cmd_hdr::kFields};

// The first two dwords of every command input (Linux mbox_in): the
// dispatcher reads opcode and op_mod before it knows the command.
namespace mbox_in {
inline constexpr Field opcode{"opcode", 0x0, 16};
inline constexpr Field uid{"uid", 0x10, 16};
inline constexpr Field reserved_at_20{"reserved_at_20", 0x20, 16};
inline constexpr Field op_mod{"op_mod", 0x30, 16};

inline constexpr const Field* kFields[] = {&opcode, &uid, &reserved_at_20, &op_mod};
static_assert(tiles(kFields, 64));
}  // namespace mbox_in

inline constexpr Layout kMboxIn{"mbox_in", 64, mbox_in::kFields};

// The first two dwords of every command output (Linux mbox_out).
namespace mbox_out {
inline constexpr Field status{"status", 0x0, 8};
inline constexpr Field reserved_at_8{"reserved_at_8", 0x8, 24};
inline constexpr Field syndrome{"syndrome", 0x20, 32};

inline constexpr const Field* kFields[] = {&status, &reserved_at_8, &syndrome};
static_assert(tiles(kFields, 64));
}  // namespace mbox_out

inline constexpr Layout kMboxOut{"mbox_out", 64, mbox_out::kFields};

}  // namespace mlx5async::prm::layout
