// Errors as data, shared by every DPDK-free layer.
#pragma once

#include <cstdint>
#include <string>

namespace mlx5async {

// What went wrong, independent of where. Firmware failures keep their PRM
// status and syndrome alongside.
enum class Errc : uint8_t {
    Ok = 0,
    InvalidArgument,  // caller passed something malformed
    ShortBuffer,      // a PRM buffer shorter than its layout
    Firmware,         // command reached the device, status != OK
    System,           // a syscall / rdma-core call failed (sys_errno set)
    Timeout,          // deadline passed before completion
    Busy,             // throttle full (async query EBUSY)
    NotFound,         // no such device / object
    NotSupported,     // capability missing
    Cancelled,        // engine shut down before completion
    State,            // driver-side state does not allow the operation
};

const char* errc_name(Errc c) noexcept;

struct Error {
    Errc code = Errc::Ok;
    int sys_errno = 0;        // errno for System, or errno the status maps to
    uint8_t fw_status = 0;    // PRM status byte (general_obj_out_cmd_hdr.status)
    uint32_t syndrome = 0;    // PRM syndrome
    uint16_t opcode = 0;      // PRM opcode of the failed command, 0 if none
    uint32_t obj_id = 0;      // object the command addressed, 0 if none
    int queue = -1;           // virtq index when known
    std::string what;         // short human context ("umem 3 too small" ...)

    static Error make(Errc c, std::string msg) {
        Error e;
        e.code = c;
        e.what = std::move(msg);
        return e;
    }
    static Error sys(int err, std::string msg) {
        Error e;
        e.code = Errc::System;
        e.sys_errno = err;
        e.what = std::move(msg);
        return e;
    }
};

// One line: "firmware: MODIFY_GENERAL_OBJECT obj 0x12 queue 3:
// BAD_RES_STATE_ERR (0x9) syndrome 0x1234 (what)".
std::string to_string(const Error& e);

// Negative errno, used only at C ABI boundaries.
int to_errno(const Error& e) noexcept;

}  // namespace mlx5async
