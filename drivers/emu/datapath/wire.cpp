#include "wire.hpp"

#include <pcap/pcap.h>
#include <time.h>

#include <algorithm>

namespace mlx5async::emu::dp {
namespace {

constexpr uint16_t kVlan = 0x8100;
constexpr int kSnapLen = 65535;

uint16_t be16_at(std::span<const std::byte> f, size_t at) {
    return uint16_t((uint16_t(f[at]) << 8) | uint16_t(f[at + 1]));
}

// The ethertype behind at most one 802.1Q tag (0: too short for one).
uint16_t ethertype(std::span<const std::byte> f) {
    if (f.size() < 14) return 0;
    uint16_t t = be16_at(f, 12);
    if (t == kVlan) t = f.size() >= 18 ? be16_at(f, 16) : 0;
    return t;
}

void count(WireCounters& c, std::span<const std::byte> f) {
    ++c.frames;
    c.bytes += f.size();
    switch (ethertype(f)) {
        case 0x8035: ++c.rarp; break;
        case 0x0806: ++c.arp; break;
        case 0x0800: ++c.ipv4; break;
        case 0x86dd: ++c.ipv6; break;
        default: ++c.other; break;
    }
}

uint64_t wall_ns() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace

Result<std::unique_ptr<Wire>> Wire::open(const std::string& pcap_path) {
    auto w = std::make_unique<Wire>();
    if (pcap_path.empty()) return w;
    w->path_ = pcap_path;
    w->pcap_ = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, kSnapLen, PCAP_TSTAMP_PRECISION_NANO);
    if (!w->pcap_) return fail(Errc::System, "emu spec: wire_pcap=" + pcap_path + ": libpcap has no handle");
    w->dumper_ = pcap_dump_open(w->pcap_, pcap_path.c_str());
    if (!w->dumper_)
        return fail(Errc::InvalidArgument, "emu spec: wire_pcap=" + pcap_path + ": " + pcap_geterr(w->pcap_));
    return w;
}

Wire::~Wire() {
    if (dumper_) pcap_dump_close(dumper_);
    if (pcap_) pcap_close(pcap_);
}

void Wire::transmit(std::span<const std::byte> frame) {
    WireFrame f{wall_ns(), std::vector<std::byte>(frame.begin(), frame.end())};
    std::lock_guard lk(mu_);
    count(counters_, frame);
    if (dumper_) {
        pcap_pkthdr h{};
        h.ts.tv_sec = time_t(f.wall_ns / 1000000000ull);
        h.ts.tv_usec = suseconds_t(f.wall_ns % 1000000000ull);  // nanoseconds: the file's precision
        h.caplen = h.len = uint32_t(std::min<size_t>(frame.size(), kSnapLen));
        pcap_dump(reinterpret_cast<u_char*>(dumper_), &h, reinterpret_cast<const u_char*>(frame.data()));
        if (pcap_dump_flush(dumper_) != 0) ++counters_.pcap_errors;
    }
    kept_.push_back(std::move(f));
    if (kept_.size() > kKept) kept_.pop_front();
}

WireCounters Wire::counters() const {
    std::lock_guard lk(mu_);
    return counters_;
}

std::vector<WireFrame> Wire::frames() const {
    std::lock_guard lk(mu_);
    return {kept_.begin(), kept_.end()};
}

}  // namespace mlx5async::emu::dp
