// The vhost-user message header and request numbers (QEMU's
// docs/interop/vhost-user.rst, "Message specification" and "Front-end
// message types"), which no installed header defines: DPDK keeps its own
// copy private (lib/vhost/vhost_user.h, which only the driver's message
// hooks read, from the driver SDK). The test frontend (tools/vhost-user-guest)
// and the Python harness, which have no DPDK, take them from here.
// Protocol feature bits are rte_vhost.h's (VHOST_USER_PROTOCOL_F_*).
#pragma once

#include <cstdint>

namespace mlx5async::vhost_user {

// Every message: request, flags, payload size (little-endian u32 each),
// then the payload.
struct MsgHeader {
    uint32_t request;
    uint32_t flags;
    uint32_t size;
};
inline constexpr uint32_t kHeaderBytes = sizeof(MsgHeader);
inline constexpr uint32_t kVersion = 0x1;           // flags bits 0-1
inline constexpr uint32_t kFlagReply = 1u << 2;      // a reply
inline constexpr uint32_t kFlagNeedReply = 1u << 3;  // REPLY_ACK asked

enum Request : uint32_t {
    GET_FEATURES = 1,
    SET_FEATURES = 2,
    SET_OWNER = 3,
    RESET_OWNER = 4,
    SET_MEM_TABLE = 5,
    SET_LOG_BASE = 6,
    SET_LOG_FD = 7,
    SET_VRING_NUM = 8,
    SET_VRING_ADDR = 9,
    SET_VRING_BASE = 10,
    GET_VRING_BASE = 11,
    SET_VRING_KICK = 12,
    SET_VRING_CALL = 13,
    SET_VRING_ERR = 14,
    GET_PROTOCOL_FEATURES = 15,
    SET_PROTOCOL_FEATURES = 16,
    GET_QUEUE_NUM = 17,
    SET_VRING_ENABLE = 18,
    SEND_RARP = 19,
    GET_CONFIG = 24,
    SET_CONFIG = 25,
    SET_STATUS = 39,
    GET_STATUS = 40,
};

}  // namespace mlx5async::vhost_user
