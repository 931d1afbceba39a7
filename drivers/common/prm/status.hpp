// PRM command status codes (general_obj_out_cmd_hdr.status), their names and
// the errno Linux mlx5_core maps each to (reference: prm-virtq-enums.tsv).
#pragma once

#include <cstdint>
#include <string>

#include "../base/error.hpp"

namespace mlx5async::prm {

enum class Status : uint8_t {
    OK = 0x0,
    INT_ERR = 0x1,
    BAD_OP_ERR = 0x2,
    BAD_PARAM_ERR = 0x3,
    BAD_SYS_STATE_ERR = 0x4,
    BAD_RES_ERR = 0x5,
    RES_BUSY = 0x6,
    NOT_READY = 0x7,  // Linux 6.12+ (MLX5_CMD_STAT_NOT_READY), -EAGAIN
    LIM_ERR = 0x8,
    BAD_RES_STATE_ERR = 0x9,
    IX_ERR = 0xa,
    NO_RES_ERR = 0xf,
    BAD_QP_STATE_ERR = 0x10,
    BAD_PKT_ERR = 0x30,
    BAD_SIZE_OUTS_CQES_ERR = 0x40,
    BAD_INP_LEN_ERR = 0x50,
    BAD_OUTP_LEN_ERR = 0x51,
};

// "BAD_RES_STATE_ERR"; "UNKNOWN_STATUS" for values outside the table.
const char* status_name(uint8_t status) noexcept;
inline const char* status_name(Status s) noexcept { return status_name(static_cast<uint8_t>(s)); }
// Positive errno (EINVAL, EIO, EBUSY ...), as mlx5_core's cmd_status_to_err.
int status_to_errno(uint8_t status) noexcept;

// An Error for a firmware failure, sys_errno filled from the status.
Error firmware_error(uint8_t status, uint32_t syndrome, uint16_t opcode, uint32_t obj_id,
                     int queue = -1, std::string what = {});

// to_string(Error) with opcode and status names:
// "MODIFY_GENERAL_OBJECT obj 0x12 queue 3: BAD_RES_STATE_ERR (0x9) syndrome 0x1234".
std::string describe(const Error& e);

}  // namespace mlx5async::prm
