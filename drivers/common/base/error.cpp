#include "error.hpp"

#include <cerrno>
#include <cstdio>

namespace mlx5async {

const char* errc_name(Errc c) noexcept {
    switch (c) {
    case Errc::Ok: return "ok";
    case Errc::InvalidArgument: return "invalid argument";
    case Errc::ShortBuffer: return "short buffer";
    case Errc::Firmware: return "firmware";
    case Errc::System: return "system";
    case Errc::Timeout: return "timeout";
    case Errc::Busy: return "busy";
    case Errc::NotFound: return "not found";
    case Errc::NotSupported: return "not supported";
    case Errc::Cancelled: return "cancelled";
    case Errc::State: return "state";
    }
    return "?";
}

std::string to_string(const Error& e) {
    char buf[256];
    int n = std::snprintf(buf, sizeof buf, "%s", errc_name(e.code));
    auto add = [&](const char* fmt, auto... a) {
        if (n < static_cast<int>(sizeof buf))
            n += std::snprintf(buf + n, sizeof buf - n, fmt, a...);
    };
    if (e.opcode) add(" opcode 0x%x", e.opcode);
    if (e.obj_id) add(" obj 0x%x", e.obj_id);
    if (e.queue >= 0) add(" queue %d", e.queue);
    if (e.code == Errc::Firmware) add(" status 0x%x syndrome 0x%x", e.fw_status, e.syndrome);
    if (e.sys_errno) add(" errno %d", e.sys_errno);
    std::string s(buf);
    if (!e.what.empty()) s += ": " + e.what;
    return s;
}

int to_errno(const Error& e) noexcept {
    if (e.sys_errno > 0) return -e.sys_errno;
    switch (e.code) {
    case Errc::Ok: return 0;
    case Errc::InvalidArgument:
    case Errc::ShortBuffer: return -EINVAL;
    case Errc::Firmware: return -EIO;
    case Errc::System: return -EIO;
    case Errc::Timeout: return -ETIMEDOUT;
    case Errc::Busy: return -EBUSY;
    case Errc::NotFound: return -ENODEV;
    case Errc::NotSupported: return -ENOTSUP;
    case Errc::Cancelled: return -ECANCELED;
    case Errc::State: return -EPERM;
    }
    return -EIO;
}

}  // namespace mlx5async
