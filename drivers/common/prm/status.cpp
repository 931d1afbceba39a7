#include "status.hpp"

#include <cerrno>
#include <cstdio>

#include "opcodes.hpp"

namespace mlx5async::prm {

const char* status_name(uint8_t status) noexcept {
    switch (static_cast<Status>(status)) {
    case Status::OK: return "OK";
    case Status::INT_ERR: return "INT_ERR";
    case Status::BAD_OP_ERR: return "BAD_OP_ERR";
    case Status::BAD_PARAM_ERR: return "BAD_PARAM_ERR";
    case Status::BAD_SYS_STATE_ERR: return "BAD_SYS_STATE_ERR";
    case Status::BAD_RES_ERR: return "BAD_RES_ERR";
    case Status::RES_BUSY: return "RES_BUSY";
    case Status::NOT_READY: return "NOT_READY";
    case Status::LIM_ERR: return "LIM_ERR";
    case Status::BAD_RES_STATE_ERR: return "BAD_RES_STATE_ERR";
    case Status::IX_ERR: return "IX_ERR";
    case Status::NO_RES_ERR: return "NO_RES_ERR";
    case Status::BAD_QP_STATE_ERR: return "BAD_QP_STATE_ERR";
    case Status::BAD_PKT_ERR: return "BAD_PKT_ERR";
    case Status::BAD_SIZE_OUTS_CQES_ERR: return "BAD_SIZE_OUTS_CQES_ERR";
    case Status::BAD_INP_LEN_ERR: return "BAD_INP_LEN_ERR";
    case Status::BAD_OUTP_LEN_ERR: return "BAD_OUTP_LEN_ERR";
    }
    return "UNKNOWN_STATUS";
}

// Linux mlx5_core cmd_status_to_err(): unknown statuses map to EIO.
int status_to_errno(uint8_t status) noexcept {
    switch (static_cast<Status>(status)) {
    case Status::OK: return 0;
    case Status::INT_ERR: return EIO;
    case Status::BAD_OP_ERR: return EINVAL;
    case Status::BAD_PARAM_ERR: return EINVAL;
    case Status::BAD_SYS_STATE_ERR: return EIO;
    case Status::BAD_RES_ERR: return EINVAL;
    case Status::RES_BUSY: return EBUSY;
    case Status::NOT_READY: return EAGAIN;
    case Status::LIM_ERR: return ENOMEM;
    case Status::BAD_RES_STATE_ERR: return EINVAL;
    case Status::IX_ERR: return EINVAL;
    case Status::NO_RES_ERR: return EAGAIN;
    case Status::BAD_QP_STATE_ERR: return EINVAL;
    case Status::BAD_PKT_ERR: return EINVAL;
    case Status::BAD_SIZE_OUTS_CQES_ERR: return EINVAL;
    case Status::BAD_INP_LEN_ERR: return EIO;
    case Status::BAD_OUTP_LEN_ERR: return EIO;
    }
    return EIO;
}

Error firmware_error(uint8_t status, uint32_t syndrome, uint16_t opcode, uint32_t obj_id,
                     int queue, std::string what) {
    Error e;
    e.code = Errc::Firmware;
    e.sys_errno = status_to_errno(status);
    e.fw_status = status;
    e.syndrome = syndrome;
    e.opcode = opcode;
    e.obj_id = obj_id;
    e.queue = queue;
    e.what = std::move(what);
    return e;
}

std::string describe(const Error& e) {
    char buf[256];
    int n = 0;
    auto add = [&](const char* fmt, auto... a) {
        if (n < static_cast<int>(sizeof buf))
            n += std::snprintf(buf + n, sizeof buf - n, fmt, a...);
    };
    if (e.code != Errc::Firmware) add("%s: ", errc_name(e.code));
    // What the failure concerns: a command (opcode, object, queue) or nothing.
    bool about_command = e.opcode || e.obj_id || e.queue >= 0 || e.code == Errc::Firmware;
    if (e.opcode) add("%s", opcode_name(e.opcode));
    else if (about_command) add("%s", "-");
    if (e.obj_id) add(" obj 0x%x", e.obj_id);
    if (e.queue >= 0) add(" queue %d", e.queue);
    if (!about_command && e.sys_errno) {
        std::string s(buf);
        return s + (e.what.empty() ? "" : e.what + ": ") + "errno " + std::to_string(e.sys_errno);
    }
    if (!about_command) return std::string(buf) + e.what;
    if (e.code == Errc::Firmware)
        add(": %s (0x%x) syndrome 0x%x", status_name(e.fw_status), e.fw_status, e.syndrome);
    else if (e.sys_errno)
        add(": errno %d", e.sys_errno);
    std::string s(buf);
    if (!e.what.empty()) s += (e.code == Errc::Firmware ? " (" + e.what + ")" : ": " + e.what);
    return s;
}

}  // namespace mlx5async::prm
