// vhost-user frontend side of the protocol (QEMU docs/interop/vhost-user.rst):
// message encoding, fd passing over the Unix socket, typed requests, replies
// and REPLY_ACK. No DPDK library: rte_vhost.h for its constants only. Every
// failure throws VugError naming the request.
#pragma once

#include <rte_vhost.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/base/vhost_user.hpp"
#include "common/base/virtio_uapi.h"  // generated from the uapi headers

namespace vug {

struct VugError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

using Req = mlx5async::vhost_user::Request;
using namespace mlx5async::vhost_user;  // the request names
const char* req_name(uint32_t req);

// Protocol feature bits (GET/SET_PROTOCOL_FEATURES), from rte_vhost.h.
namespace pf {
constexpr int MQ = VHOST_USER_PROTOCOL_F_MQ, LOG_SHMFD = VHOST_USER_PROTOCOL_F_LOG_SHMFD,
              RARP = VHOST_USER_PROTOCOL_F_RARP, REPLY_ACK = VHOST_USER_PROTOCOL_F_REPLY_ACK,
              CONFIG = VHOST_USER_PROTOCOL_F_CONFIG, STATUS = VHOST_USER_PROTOCOL_F_STATUS;
}
// Virtio / vhost feature bits (GET/SET_FEATURES): the uapi headers' (and
// rte_vhost.h's VHOST_USER_F_PROTOCOL_FEATURES).
namespace vf {
constexpr int NET_MQ = VIRTIO_NET_F_MQ, LOG_ALL = VHOST_F_LOG_ALL,
              PROTOCOL_FEATURES = VHOST_USER_F_PROTOCOL_FEATURES, VERSION_1 = VIRTIO_F_VERSION_1;
}
// Device status bits (SET_STATUS), linux/virtio_config.h.
namespace st {
constexpr uint8_t ACK = VIRTIO_CONFIG_S_ACKNOWLEDGE, DRIVER = VIRTIO_CONFIG_S_DRIVER,
                  DRIVER_OK = VIRTIO_CONFIG_S_DRIVER_OK, FEATURES_OK = VIRTIO_CONFIG_S_FEATURES_OK;
}

constexpr uint32_t kVringFlagLog = 1u << VHOST_VRING_F_LOG;  // SET_VRING_ADDR flags: log used ring writes
constexpr int kMaxRegions = 8;

struct MemRegion {
    uint64_t guest_phys_addr;
    uint64_t memory_size;
    uint64_t userspace_addr;
    uint64_t mmap_offset;
};

struct VringAddr {
    uint32_t index;
    uint32_t flags;
    uint64_t desc_user_addr;
    uint64_t used_user_addr;
    uint64_t avail_user_addr;
    uint64_t log_guest_addr;
};

// One connection to a vhost-user backend (the server side of the socket).
class Conn {
public:
    Conn() = default;
    ~Conn() { close(); }
    Conn(const Conn&) = delete;
    Conn& operator=(const Conn&) = delete;

    void connect(const std::string& path);
    void close();
    bool connected() const { return fd_ >= 0; }

    // The protocol features both sides agreed on (after SET_PROTOCOL_FEATURES);
    // REPLY_ACK among them makes every set request ask for an ack.
    void set_negotiated_protocol(uint64_t f) { proto_ = f; }
    uint64_t negotiated_protocol() const { return proto_; }
    bool has(int proto_bit) const { return proto_ >> proto_bit & 1; }

    uint64_t get_u64(Req req);                 // GET_FEATURES, GET_QUEUE_NUM ...
    void set_u64(Req req, uint64_t v);         // SET_FEATURES, SET_STATUS ...
    void set_owner();
    void set_vring_state(Req req, uint32_t index, uint32_t num);  // NUM, BASE, ENABLE
    uint32_t get_vring_base(uint32_t index);
    void set_vring_addr(const VringAddr& a);
    // KICK / CALL / ERR: fd < 0 sends the "no fd" (polling) flag.
    void set_vring_fd(Req req, uint32_t index, int fd);
    void set_mem_table(const std::vector<MemRegion>& regions, const std::vector<int>& fds);
    void set_log_base(uint64_t size, uint64_t offset, int fd);

    uint64_t requests_sent() const { return sent_; }

private:
    struct Reply {
        uint32_t request = 0, flags = 0, size = 0;
        uint8_t payload[512] = {};
    };
    void send(uint32_t req, const void* payload, uint32_t size, const std::vector<int>& fds,
              bool need_reply);
    Reply recv(uint32_t req);
    // A set request: asks for an ack when REPLY_ACK was negotiated, and
    // fails on a non-zero ack.
    void set_request(uint32_t req, const void* payload, uint32_t size,
                     const std::vector<int>& fds = {});
    [[noreturn]] void fail(uint32_t req, const std::string& what) const;

    int fd_ = -1;
    uint64_t proto_ = 0;
    uint64_t sent_ = 0;
};

}  // namespace vug
