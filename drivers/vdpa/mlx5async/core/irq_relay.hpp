// Interrupt relay: the device's interrupts (QP event mode) end as writes to
// each vring's callfd. One thread ("mlx5a-irq") waits on a DevX event
// channel to which every virtq's event CQ is subscribed (cookie = ring); on a
// completion event it polls that CQ (reposting the receive WQEs consumed),
// writes the callfd once for however many interrupts coalesced, and re-arms
// the CQ. Arming with the consumer index we just wrote means an interrupt
// that landed between poll and arm raises the next event at once: none is
// lost. No polling, no timer: the thread sleeps until the device speaks.
//
// Like the kick relay, registered once and kept across dev_close: callfds
// are replaced at each configure (dup()ed: vhost may close its own) and
// dropped at cleanup. DPDK-free.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/base/result.hpp"
#include "common/base/unique_fd.hpp"
#include "common/devx/raii.hpp"
#include "epoll_thread.hpp"
#include "event_qp.hpp"

namespace mlx5async::core {

struct IrqRelayStats {
    uint64_t events = 0;       // completion events read from the channel
    uint64_t completions = 0;  // interrupts the device raised (CQEs consumed)
    uint64_t calls = 0;        // callfd writes
    uint64_t no_callfd = 0;    // completions on a ring without a callfd
    uint64_t callfd_full = 0;  // writes the callfd would have blocked on: dropped
};

class IrqRelay {
public:
    // `uar_base`: the mapped UAR page whose id the CQs were created with.
    // `cpu` >= 0 pins the thread (devarg event_core).
    static Result<std::unique_ptr<IrqRelay>> create(const devx::Context& ctx, void* uar_base,
                                                    size_t max_rings, int cpu, std::string name);
    ~IrqRelay();
    IrqRelay(const IrqRelay&) = delete;
    IrqRelay& operator=(const IrqRelay&) = delete;

    // Subscribes the ring's CQ and arms it. `q` stays owned by the caller and
    // must outlive the relay (or a detach()).
    Result<void> attach(uint16_t ring, EventQp* q);
    void detach(uint16_t ring);
    // Replaces the callfds: (ring, fd); fd < 0 means none.
    Result<void> set_callfds(const std::vector<std::pair<uint16_t, int>>& fds);
    Result<void> set_callfd(uint16_t ring, int fd);
    void clear_callfds();

    IrqRelayStats stats() const;
    uint64_t calls(uint16_t ring) const;

private:
    IrqRelay() = default;
    struct Ring {
        EventQp* q = nullptr;
        UniqueFd callfd;  // non-blocking (set_callfd)
        uint64_t calls = 0;
        bool full_logged = false;  // the warning for a callfd that takes no write, once
    };
    void run(std::stop_token stop);
    void on_event(uint16_t ring);

    std::string name_;
    const devx::DevxApi* api_ = nullptr;
    devx::EventChannel ch_;
    void* uar_base_ = nullptr;
    mutable std::mutex mu_;  // rings_, stats_
    std::vector<Ring> rings_;
    IrqRelayStats stats_;
    EpollThread loop_;  // last: stops first
};

}  // namespace mlx5async::core
