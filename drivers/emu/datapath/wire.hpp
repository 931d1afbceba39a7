// The emulated port's wire: frames the device sends to the network, from
// the driver's send queues (send_queue.hpp). The guest's TX rings loop
// back to its RX rings instead (loopback.hpp) and never reach it. Each
// frame is counted by its type, the last kKept are kept for tests and
// tools, and with `wire_pcap=PATH` in the spec it is written to a pcap
// file (nanosecond timestamps, CLOCK_REALTIME) that tcpdump and tshark
// read; the file is flushed after every frame, so a reader sees a frame
// once it has left.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "common/base/result.hpp"

typedef struct pcap pcap_t;
typedef struct pcap_dumper pcap_dumper_t;

namespace mlx5async::emu::dp {

// By ethertype, behind at most one 802.1Q tag.
struct WireCounters {
    uint64_t frames = 0;
    uint64_t bytes = 0;
    uint64_t rarp = 0;   // 0x8035
    uint64_t arp = 0;    // 0x0806
    uint64_t ipv4 = 0;   // 0x0800
    uint64_t ipv6 = 0;   // 0x86dd
    uint64_t other = 0;
    uint64_t pcap_errors = 0;  // frames the pcap file did not take
    bool operator==(const WireCounters&) const = default;
};

struct WireFrame {
    uint64_t wall_ns = 0;  // CLOCK_REALTIME when it left
    std::vector<std::byte> bytes;
};

class Wire {
public:
    static constexpr size_t kKept = 256;

    // `pcap_path` empty: no file. A file that cannot be created fails,
    // naming the path and libpcap's reason.
    static Result<std::unique_ptr<Wire>> open(const std::string& pcap_path);
    Wire() = default;
    ~Wire();
    Wire(const Wire&) = delete;
    Wire& operator=(const Wire&) = delete;

    // Puts `frame` on the wire now (any thread).
    void transmit(std::span<const std::byte> frame);
    WireCounters counters() const;
    // The last frames sent, oldest first.
    std::vector<WireFrame> frames() const;
    const std::string& pcap_path() const { return path_; }

private:
    mutable std::mutex mu_;  // counters_, kept_ and the pcap file
    WireCounters counters_;
    std::deque<WireFrame> kept_;
    std::string path_;
    pcap_t* pcap_ = nullptr;
    pcap_dumper_t* dumper_ = nullptr;
};

}  // namespace mlx5async::emu::dp
