#include "protocol.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace vug {

namespace {

constexpr uint64_t kVringNoFd = 1ull << 8;  // SET_VRING_KICK/CALL payload: no fd passed
constexpr size_t kHeader = kHeaderBytes;

struct VringState {
    uint32_t index;
    uint32_t num;
};
struct LogBase {
    uint64_t mmap_size;
    uint64_t mmap_offset;
};

std::string errstr(int e) { return std::strerror(e); }

}  // namespace

const char* req_name(uint32_t req) {
    switch (req) {
    case GET_FEATURES: return "GET_FEATURES";
    case SET_FEATURES: return "SET_FEATURES";
    case SET_OWNER: return "SET_OWNER";
    case RESET_OWNER: return "RESET_OWNER";
    case SET_MEM_TABLE: return "SET_MEM_TABLE";
    case SET_LOG_BASE: return "SET_LOG_BASE";
    case SET_LOG_FD: return "SET_LOG_FD";
    case SET_VRING_NUM: return "SET_VRING_NUM";
    case SET_VRING_ADDR: return "SET_VRING_ADDR";
    case SET_VRING_BASE: return "SET_VRING_BASE";
    case GET_VRING_BASE: return "GET_VRING_BASE";
    case SET_VRING_KICK: return "SET_VRING_KICK";
    case SET_VRING_CALL: return "SET_VRING_CALL";
    case SET_VRING_ERR: return "SET_VRING_ERR";
    case GET_PROTOCOL_FEATURES: return "GET_PROTOCOL_FEATURES";
    case SET_PROTOCOL_FEATURES: return "SET_PROTOCOL_FEATURES";
    case GET_QUEUE_NUM: return "GET_QUEUE_NUM";
    case SET_VRING_ENABLE: return "SET_VRING_ENABLE";
    case SEND_RARP: return "SEND_RARP";
    case GET_CONFIG: return "GET_CONFIG";
    case SET_CONFIG: return "SET_CONFIG";
    case SET_STATUS: return "SET_STATUS";
    case GET_STATUS: return "GET_STATUS";
    default: return "UNKNOWN_REQUEST";
    }
}

void Conn::fail(uint32_t req, const std::string& what) const {
    throw VugError(std::string(req_name(req)) + ": " + what);
}

void Conn::connect(const std::string& path) {
    close();
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (path.size() >= sizeof(sa.sun_path)) throw VugError("connect " + path + ": path too long");
    std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw VugError("socket: " + errstr(errno));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
        int e = errno;
        ::close(fd);
        throw VugError("connect " + path + ": " + errstr(e));
    }
    fd_ = fd;
    proto_ = 0;
}

void Conn::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    proto_ = 0;
}

void Conn::send(uint32_t req, const void* payload, uint32_t size, const std::vector<int>& fds,
                bool need_reply) {
    if (fd_ < 0) fail(req, "not connected");
    uint32_t hdr[3] = {req, kVersion | (need_reply ? kFlagNeedReply : 0), size};
    iovec iov[2] = {{hdr, kHeader}, {const_cast<void*>(payload), size}};
    msghdr mh{};
    mh.msg_iov = iov;
    mh.msg_iovlen = size ? 2 : 1;
    alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int) * kMaxRegions)] = {};
    if (!fds.empty()) {
        if (fds.size() > size_t(kMaxRegions)) fail(req, "too many fds");
        mh.msg_control = ctrl;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
        cmsghdr* c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    size_t total = kHeader + size;
    ssize_t n;
    do n = ::sendmsg(fd_, &mh, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0) fail(req, "send: " + errstr(errno));
    if (size_t(n) != total) {
        // Unix stream sockets send small messages whole; a short send means
        // the backend is gone.
        fail(req, "short send (" + std::to_string(n) + " of " + std::to_string(total) + " bytes)");
    }
    sent_++;
}

Conn::Reply Conn::recv(uint32_t req) {
    Reply r;
    auto read_all = [&](void* buf, size_t len, const char* part) {
        size_t got = 0;
        while (got < len) {
            ssize_t n = ::read(fd_, static_cast<char*>(buf) + got, len - got);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) fail(req, std::string("reading reply ") + part + ": " + errstr(errno));
            if (n == 0)
                fail(req, std::string("connection closed by the backend (short reply: ") +
                              std::to_string(got) + " of " + std::to_string(len) + " bytes of " +
                              part + ")");
            got += size_t(n);
        }
    };
    uint32_t hdr[3];
    read_all(hdr, kHeader, "header");
    r.request = hdr[0];
    r.flags = hdr[1];
    r.size = hdr[2];
    if (r.request != req)
        fail(req, std::string("reply is for ") + req_name(r.request) + " (" +
                      std::to_string(r.request) + ")");
    if (!(r.flags & kFlagReply) || (r.flags & 0x3) != kVersion)
        fail(req, "reply has bad flags 0x" + [&] {
            char b[16];
            std::snprintf(b, sizeof b, "%x", r.flags);
            return std::string(b);
        }());
    if (r.size > sizeof(r.payload)) fail(req, "reply payload too large: " + std::to_string(r.size));
    read_all(r.payload, r.size, "payload");
    return r;
}

void Conn::set_request(uint32_t req, const void* payload, uint32_t size,
                       const std::vector<int>& fds) {
    bool ack = has(pf::REPLY_ACK);
    send(req, payload, size, fds, ack);
    if (!ack) return;
    Reply r = recv(req);
    if (r.size != sizeof(uint64_t)) fail(req, "ack of " + std::to_string(r.size) + " bytes, expected 8");
    uint64_t v;
    std::memcpy(&v, r.payload, sizeof v);
    if (v != 0) fail(req, "NACK (" + std::to_string(v) + ")");
}

uint64_t Conn::get_u64(Req req) {
    send(req, nullptr, 0, {}, false);
    Reply r = recv(req);
    if (r.size != sizeof(uint64_t))
        fail(req, "short reply (" + std::to_string(r.size) + " bytes, expected 8)");
    uint64_t v;
    std::memcpy(&v, r.payload, sizeof v);
    return v;
}

void Conn::set_u64(Req req, uint64_t v) { set_request(req, &v, sizeof v); }

void Conn::set_owner() { set_request(SET_OWNER, nullptr, 0); }

void Conn::set_vring_state(Req req, uint32_t index, uint32_t num) {
    VringState s{index, num};
    set_request(req, &s, sizeof s);
}

uint32_t Conn::get_vring_base(uint32_t index) {
    VringState s{index, 0};
    send(GET_VRING_BASE, &s, sizeof s, {}, false);
    Reply r = recv(GET_VRING_BASE);
    if (r.size != sizeof(VringState))
        fail(GET_VRING_BASE, "short reply (" + std::to_string(r.size) + " bytes, expected 8)");
    std::memcpy(&s, r.payload, sizeof s);
    if (s.index != index)
        fail(GET_VRING_BASE, "reply for ring " + std::to_string(s.index) + ", asked ring " +
                                 std::to_string(index));
    return s.num;
}

void Conn::set_vring_addr(const VringAddr& a) { set_request(SET_VRING_ADDR, &a, sizeof a); }

void Conn::set_vring_fd(Req req, uint32_t index, int fd) {
    uint64_t v = index & 0xff;
    if (fd < 0) v |= kVringNoFd;
    set_request(req, &v, sizeof v, fd < 0 ? std::vector<int>{} : std::vector<int>{fd});
}

void Conn::set_mem_table(const std::vector<MemRegion>& regions, const std::vector<int>& fds) {
    if (regions.empty() || regions.size() > size_t(kMaxRegions) || regions.size() != fds.size())
        fail(SET_MEM_TABLE, "need 1.." + std::to_string(kMaxRegions) + " regions, one fd each");
    uint8_t buf[8 + sizeof(MemRegion) * kMaxRegions] = {};
    uint32_t n = uint32_t(regions.size());
    std::memcpy(buf, &n, sizeof n);  // num_regions, then 4 bytes of padding
    std::memcpy(buf + 8, regions.data(), sizeof(MemRegion) * n);
    set_request(SET_MEM_TABLE, buf, uint32_t(8 + sizeof(MemRegion) * n), fds);
}

void Conn::set_log_base(uint64_t size, uint64_t offset, int fd) {
    // With LOG_SHMFD the backend answers SET_LOG_BASE itself once the log is
    // mapped (QEMU waits for it); that reply stands in for REPLY_ACK.
    LogBase lb{size, offset};
    if (!has(pf::LOG_SHMFD)) fail(SET_LOG_BASE, "backend did not offer LOG_SHMFD");
    send(SET_LOG_BASE, &lb, sizeof lb, {fd}, false);
    Reply r = recv(SET_LOG_BASE);
    if (r.size == sizeof(uint64_t)) {
        uint64_t v;
        std::memcpy(&v, r.payload, sizeof v);
        if (v != 0) fail(SET_LOG_BASE, "NACK (" + std::to_string(v) + ")");
    } else if (r.size != 0) {
        fail(SET_LOG_BASE, "unexpected reply of " + std::to_string(r.size) + " bytes");
    }
}

}  // namespace vug
