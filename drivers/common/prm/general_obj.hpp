// General-object command headers (CREATE/MODIFY/QUERY/DESTROY_GENERAL_OBJECT)
// and the generic command output header shared by every PRM command.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "../base/result.hpp"

namespace mlx5async::prm {

inline constexpr size_t kGeneralObjInHdrBytes = 16;   // general_obj_in_cmd_hdr
inline constexpr size_t kGeneralObjOutHdrBytes = 16;  // general_obj_out_cmd_hdr

struct GeneralObjIn {
    uint16_t opcode = 0;
    uint16_t uid = 0;
    uint16_t vhca_tunnel_id = 0;
    uint16_t obj_type = 0;
    uint32_t obj_id = 0;
    uint8_t log_obj_range = 0;  // op_param.create.log_obj_range
};

// Every PRM command output starts with status(8) reserved(24) syndrome(32);
// general-object outputs add obj_id at dword 2.
struct GeneralObjOut {
    uint8_t status = 0;
    uint32_t syndrome = 0;
    uint32_t obj_id = 0;
};

void write_general_obj_in(const GeneralObjIn& h, std::span<std::byte> buf);
Result<GeneralObjIn> read_general_obj_in(std::span<const std::byte> buf);
void write_general_obj_out(const GeneralObjOut& h, std::span<std::byte> buf);
Result<GeneralObjOut> read_general_obj_out(std::span<const std::byte> buf);

// Any command's first dword (opcode at bits 0..15) and op_mod (bits 48..63),
// for the emulator's dispatcher.
Result<uint16_t> read_opcode(std::span<const std::byte> in);
Result<uint16_t> read_op_mod(std::span<const std::byte> in);

// The status/syndrome of any command output, as an Error when status != OK
// (opcode/obj_id/queue copied into it).
Result<void> check_out(std::span<const std::byte> out, uint16_t opcode, uint32_t obj_id,
                       int queue = -1);

// DESTROY_GENERAL_OBJECT input for (obj_type, obj_id); size kGeneralObjInHdrBytes.
void encode_destroy_general_obj(uint16_t obj_type, uint32_t obj_id, std::span<std::byte> in);

}  // namespace mlx5async::prm
