// The guest side of one vhost-user device: a session on the socket, guest
// memory with 2 x pairs split rings, and the request sequences real
// frontends send (QEMU start / stop / live migration, virtio_user quitting).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "guest_mem.hpp"
#include "irq.hpp"
#include "protocol.hpp"

namespace vug {

struct Options {
    std::string socket;
    bool stay = false;  // a broken connection answers an error and waits for `reconnect`
    int pairs = 1;
    int ring_size = 256;
    int mem_mb = 64;
    int regions = 1;
    uint64_t gpa_base = 0;
    int64_t region_gap = 0;  // bytes between regions' guest addresses; < 0 overlaps them
    int base = 0;  // initial ring index of every ring
    std::string script;
};

// A mistake in a command (bad argument, wrong moment): answered, not fatal.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class Frontend {
public:
    explicit Frontend(const Options& o);

    // Connects (if needed) and negotiates: GET_FEATURES, GET/SET_PROTOCOL_
    // FEATURES, SET_OWNER, GET_QUEUE_NUM.
    void open_session();
    // "normal": SET_FEATURES, SET_MEM_TABLE, rings, ENABLE, SET_STATUS.
    // "dst": QEMU's migration destination order: ENABLE per ring first,
    // SET_FEATURES, SET_STATUS(..FEATURES_OK), SET_MEM_TABLE, rings,
    // SET_STATUS(DRIVER_OK).
    void start(bool dst_order);
    // The handshake and SET_FEATURES only: a frontend that negotiated and
    // went idle.
    void negotiate();
    // SET_STATUS with any value (a frontend repeating DRIVER_OK, say).
    void status(uint8_t s);
    // QEMU stop: SET_STATUS(0) if negotiated, GET_VRING_BASE per ring, no
    // SET_VRING_ENABLE(0). disable_first: virtio_user quitting instead
    // (SET_VRING_ENABLE(0) per ring, then GET_VRING_BASE per ring).
    std::vector<uint32_t> stop(bool disable_first);
    void set_enable(int ring, bool on);
    int set_pairs(int n);  // returns the rings enabled
    // A new connection and session; retries connecting for up to `wait_ms`
    // while the socket is absent or refuses (a backend restarting).
    void reconnect(int wait_ms = 0);
    // The connection broke (the backend went away): forget the session.
    void disconnect();
    // A new log of `shape` (the next one stays Full) with LOG_ALL.
    void log_on(DirtyLog::Shape shape = DirtyLog::Shape::Full);
    void log_off();
    void set_base(int ring, uint16_t b);  // -1: every ring
    // Fault injection: SET_VRING_NUM with any value (opens a session if needed).
    void raw_vring_num(int ring, uint32_t num);
    // Fault injection: from the next start on, ring `ring`'s `part` (desc,
    // avail or used) is sent at a user address outside every region
    // ("outside") or in the last 8 bytes of region 0's mapping, so that it
    // runs past its end ("straddle"). Returns the address sent.
    uint64_t bad_addr(int ring, const std::string& part, const std::string& kind);

    bool started() const { return started_; }
    bool logging() const { return logging_; }
    int nrings() const { return int(rings_.size()); }
    Ring& ring(int i);
    const DirtyLog* log() const { return log_.get(); }
    const GuestMemory& mem() const { return *mem_; }
    uint64_t backend_features() const { return backend_features_; }
    uint64_t backend_protocol() const { return backend_proto_; }
    uint64_t features() const { return features_; }
    uint64_t protocol() const { return conn_.negotiated_protocol(); }
    uint64_t queue_num() const { return queue_num_; }
    int connections() const { return connections_; }
    uint64_t requests() const { return conn_.requests_sent(); }
    const std::vector<bool>& enabled() const { return enabled_; }
    void kick(int ring);

    // Notifications received on the callfds, per ring, across connections.
    IrqCounter& irqs() { return irqs_; }
    // ring < 0: every ring.
    void set_no_interrupt(int ring, bool on);
    // Polls used idx (short sleeps, not the callfd) until it is n or up to
    // 32767 past it (16-bit serial arithmetic: works across the wrap) or
    // timeout_ms passes.
    bool wait_used(int ring, uint16_t n, int timeout_ms);

private:
    uint64_t wanted_features() const;
    void send_log_base(DirtyLog::Shape shape = DirtyLog::Shape::Full);
    void send_ring(Ring& r);
    void send_status(uint8_t s);
    void need_session(const char* what) const;

    Options o_;
    std::unique_ptr<GuestMemory> mem_;
    std::vector<std::unique_ptr<Ring>> rings_;
    std::vector<bool> enabled_;     // what the guest wants per ring
    struct BadAddr {
        int ring;
        std::string part;
        uint64_t hva;
    };
    std::vector<BadAddr> bad_addrs_;  // SET_VRING_ADDR overrides (bad_addr)
    Conn conn_;
    bool session_ = false;          // handshake done on this connection
    bool started_ = false;
    bool log_sent_ = false;         // SET_LOG_BASE sent on this connection
    bool logging_ = false;
    std::unique_ptr<DirtyLog> log_;
    uint64_t backend_features_ = 0, backend_proto_ = 0, features_ = 0, queue_num_ = 0;
    int connections_ = 0;
    IrqCounter irqs_;
};

}  // namespace vug
