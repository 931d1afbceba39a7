// The device's own announce of its VM: once a start has every ring RDY,
// the device sends the RARP QEMU's self-announce sends (broadcast, ethertype
// 0x8035, the VM's MAC as source) on its port, in rounds as QEMU's
// announce timer spaces them (devargs announce_*, AnnounceConfig), so the
// network learns where the VM is when its NICs run, not when its guest gets
// round to a gratuitous ARP. The rounds stop once the guest announces
// itself; the frontend's VHOST_USER_SEND_RARP sends one frame with the MAC
// it names (a guest without GUEST_ANNOUNCE is announced that way): at
// once while the device runs, else from the next start's first round (QEMU
// sends its first before it starts the device: no frame leaves for a VM
// whose rings do not run).
//
// The MAC: the frontend's, once it sent SEND_RARP on this connection, else
// the function's NIC vport permanent address; none (0): no own rounds.
//
// Thread-safe. begin() runs on the device's strand, frontend_rarp() on the
// vhost thread, the later rounds on the announcer's own thread
// ("mlx5a-ann"); guest_announced() is lock-free (the emulated datapath
// calls it holding the emulator's lock, which a DevX command here takes).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "announce_sq.hpp"
#include "common/base/result.hpp"
#include "config.hpp"
#include "ledger.hpp"

namespace mlx5async::core {

class Transport;

// A MAC address in the low 48 bits, its first octet highest (as the NIC
// vport context's permanent_address).
using MacAddr = uint64_t;
std::string mac_string(MacAddr mac);

// QEMU's self-announce frame (net/announce.c announce_self_create): a RARP
// request-reverse from `mac` to broadcast, padded to the 60-byte minimum.
inline constexpr size_t kRarpFrameBytes = 60;
std::array<std::byte, kRarpFrameBytes> rarp_frame(MacAddr mac);

// The delay before round `k` (k >= 2) after round k-1: initial + (k-2) *
// step, at most max (QEMU's qemu_announce_timer_step).
std::chrono::milliseconds announce_delay(const AnnounceConfig& c, uint32_t k);

struct AnnounceStats {
    MacAddr vport_mac = 0;     // the function's permanent address
    MacAddr frontend_mac = 0;  // the frontend's SEND_RARP MAC (0: none this connection)
    uint64_t starts = 0;       // starts announced (a first round sent)
    uint64_t requests = 0;     // SEND_RARP messages
    uint64_t rounds = 0;       // own rounds sent
    uint64_t stopped_early = 0;  // starts whose rounds stopped at the guest's announce
    uint32_t rounds_left = 0;  // of the current start
    AnnounceSq::Counters sq;   // frames posted, completed, failed, without room
};

class Announcer {
public:
    // The SQ on the device's transport objects. Fails naming the command
    // the device refused (the device then goes without an announce, unless
    // the user asked for one).
    static Result<std::unique_ptr<Announcer>> open(const AnnounceConfig& cfg, const devx::Context& ctx,
                                                   const Transport& transport, uint8_t sq_ts_format,
                                                   MacAddr vport_mac, Ledger& ledger, std::string name);
    ~Announcer();
    Announcer(const Announcer&) = delete;
    Announcer& operator=(const Announcer&) = delete;

    // Strand: start `seq` has every ring RDY: the first round now (the
    // ledger's device_announced once its doorbell rang), the rest on the
    // thread. A start before the last's rounds ended starts them over.
    void begin(uint64_t seq);
    // vhost: VHOST_USER_SEND_RARP: one frame from `mac` now while a start
    // runs, and `mac` for the rounds of this connection's starts.
    void frontend_rarp(MacAddr mac);
    // The guest announced itself: no more rounds for this start.
    void guest_announced() noexcept;
    // dev_close: the rounds left are dropped; SEND_RARP waits for a start.
    void stop();
    // The frontend left: stop(), and its MAC is forgotten.
    void frontend_left();
    AnnounceStats stats() const;  // takes the CQEs written so far

private:
    Announcer(const AnnounceConfig& cfg, AnnounceSq sq, MacAddr vport_mac, Ledger& ledger, std::string name);
    void loop(std::stop_token st);
    // Under mu_: one RARP from `mac`; false when it was not posted.
    bool send_locked(MacAddr mac) const;
    // Under mu_: the rounds left are dropped once the guest announced.
    void cut_if_guest_announced_locked() const;

    const AnnounceConfig cfg_;
    const MacAddr vport_mac_;
    const std::string name_;
    Ledger& ledger_;
    std::atomic<bool> guest_seen_{false};
    mutable std::mutex mu_;  // guards sq_, stats_ and the schedule (seq_ to next_)
    std::condition_variable_any cv_;  // the schedule changed
    mutable AnnounceSq sq_;
    mutable AnnounceStats stats_;
    uint64_t seq_ = 0;         // the ledger's start the rounds are for
    uint64_t generation_ = 0;  // begin() and stop() calls: a wait for a round of an older one ends
    uint32_t round_ = 0;       // rounds sent for the start
    bool running_ = false;     // a start began and no stop since
    std::chrono::steady_clock::time_point next_;
    std::jthread thread_;  // last: joined before the members go
};

}  // namespace mlx5async::core
