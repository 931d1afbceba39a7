// Kick relay: frontends without host notifiers (virtio_user, QEMU without
// the HOST_NOTIFIER protocol feature) kick a ring by writing its kickfd
// (eventfd). One thread ("mlx5a-kick") epolls every started ring's kickfd
// and writes the ring index to the VAR doorbell page, as DPDK's mlx5 vDPA
// driver does (mlx5_vdpa_virtq_kick_handler: rte_write32(index, doorbell)).
//
// Registered at configure and kept across dev_close: closing only gates it
// (kicks are drained and remembered per ring, replayed as one doorbell per
// ring when the gate opens again), so a suspend/resume costs no epoll or
// thread churn. A new configure replaces the fds, and a SET_VRING_KICK on a
// running ring replaces that ring's (they are dup()ed: vhost closes its own
// when it replaces them).
//
// A frontend's fd is never trusted: one that cannot be polled (a regular
// file, /dev/zero) or that hangs up (a pipe whose writer closed) is dropped
// with a line naming its ring, and the other rings go on. DPDK-free.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/base/result.hpp"
#include "common/base/unique_fd.hpp"
#include "epoll_thread.hpp"

namespace mlx5async::core {

struct KickRelayStats {
    uint64_t kicks = 0;      // eventfd wake-ups read
    uint64_t doorbells = 0;  // doorbell writes
    uint64_t held = 0;       // kicks that arrived while gated
    uint64_t driver = 0;     // the driver's own doorbells (rings turned RDY)
    uint64_t dropped = 0;    // kickfds refused or dropped (unpollable, hung up)
};

class KickRelay {
public:
    // Maps the doorbell page (mmap(fd, offset), as a frontend would) and
    // starts the thread (pinned to `cpu` when >= 0: devarg event_core).
    static Result<std::unique_ptr<KickRelay>> create(int fd, uint64_t offset, uint64_t size,
                                                     std::string name, int cpu = -1);
    ~KickRelay();
    KickRelay(const KickRelay&) = delete;
    KickRelay& operator=(const KickRelay&) = delete;

    // Replaces the watched rings: (ring index, kickfd); fds < 0 are skipped,
    // and so is an fd that cannot be watched (logged, counted in dropped).
    void set_rings(const std::vector<std::pair<uint16_t, int>>& rings);
    // Replaces one ring's kickfd (fd < 0: stops watching that ring).
    void set_ring(uint16_t index, int fd);
    // Open: kicks go to the doorbell (held ones first). Closed: held.
    void set_open(bool open);
    // The driver's own doorbell for a ring that just turned RDY: a kick the
    // guest made before (the device may have dropped it) is not lost.
    void kick(uint16_t index);
    KickRelayStats stats() const;
    // Rings whose kickfd is watched.
    size_t rings() const;

private:
    KickRelay() = default;
    struct Ring {
        uint16_t index = 0;
        UniqueFd fd;
        uint32_t gen = 0;  // epoll keys carry it: events of a replaced fd are ignored
        bool held = false;
    };
    void run(std::stop_token stop);
    void on_event(uint64_t key, uint32_t events);
    void watch_locked(uint16_t index, int fd);
    void unwatch_locked(std::vector<Ring>::iterator it);
    void ring_doorbell(uint16_t index);

    std::string name_;
    void* map_ = nullptr;
    uint64_t map_len_ = 0;
    uint32_t* doorbell_ = nullptr;
    mutable std::mutex mu_;  // rings_, open_, gen_, stats_
    std::vector<Ring> rings_;
    uint32_t gen_ = 0;  // the last Ring::gen handed out
    bool open_ = false;
    KickRelayStats stats_;
    EpollThread loop_;  // last: stops first
};

}  // namespace mlx5async::core
