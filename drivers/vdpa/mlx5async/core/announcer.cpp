#include "announcer.hpp"

#include <cstdio>

#include "common/base/log_sink.hpp"
#include "common/base/named_thread.hpp"
#include "transport.hpp"

namespace mlx5async::core {

std::string mac_string(MacAddr mac) {
    char s[18];
    std::snprintf(s, sizeof s, "%02x:%02x:%02x:%02x:%02x:%02x", unsigned(mac >> 40) & 0xff,
                  unsigned(mac >> 32) & 0xff, unsigned(mac >> 24) & 0xff, unsigned(mac >> 16) & 0xff,
                  unsigned(mac >> 8) & 0xff, unsigned(mac) & 0xff);
    return s;
}

std::array<std::byte, kRarpFrameBytes> rarp_frame(MacAddr mac) {
    std::array<std::byte, kRarpFrameBytes> f{};
    size_t at = 0;
    auto put8 = [&](unsigned v) { f[at++] = std::byte(v & 0xff); };
    auto put16 = [&](unsigned v) { put8(v >> 8), put8(v); };
    auto put_mac = [&](MacAddr m) {
        for (int shift = 40; shift >= 0; shift -= 8) put8(unsigned(m >> shift));
    };
    put_mac(0xffffffffffffULL);  // destination: broadcast
    put_mac(mac);
    put16(0x8035);  // RARP
    put16(1);       // hardware: Ethernet
    put16(0x0800);  // protocol: IPv4
    put8(6);        // hardware address length
    put8(4);        // protocol address length
    put16(3);       // request reverse
    put_mac(mac);   // sender hardware address
    at += 4;        // sender protocol address: 0
    put_mac(mac);   // target hardware address
    return f;       // target protocol address and padding: 0
}

std::chrono::milliseconds announce_delay(const AnnounceConfig& c, uint32_t k) {
    const uint64_t d = uint64_t(c.initial_ms) + uint64_t(k > 2 ? k - 2 : 0) * c.step_ms;
    return std::chrono::milliseconds(std::min<uint64_t>(d, c.max_ms));
}

Result<std::unique_ptr<Announcer>> Announcer::open(const AnnounceConfig& cfg, const devx::Context& ctx,
                                                   const Transport& transport, uint8_t sq_ts_format,
                                                   MacAddr vport_mac, Ledger& ledger, std::string name) {
    uint32_t eqn = 0;
    if (ctx.api()->query_eqn(ctx.get(), 0, &eqn) != 0)
        return unexpected(Error::sys(errno, "announce SQ: mlx5dv_devx_query_eqn(vector 0)"));
    auto sq = AnnounceSq::open(ctx, transport.pdn(), transport.tisn(), eqn, sq_ts_format);
    MLX5A_CHECK(sq);
    return std::unique_ptr<Announcer>(new Announcer(cfg, std::move(*sq), vport_mac, ledger, std::move(name)));
}

Announcer::Announcer(const AnnounceConfig& cfg, AnnounceSq sq, MacAddr vport_mac, Ledger& ledger,
                     std::string name)
    : cfg_(cfg), vport_mac_(vport_mac), name_(std::move(name)), ledger_(ledger), sq_(std::move(sq)) {
    stats_.vport_mac = vport_mac;
    thread_ = make_named_thread("mlx5a-ann", [this](std::stop_token st) { loop(st); });
}

Announcer::~Announcer() {
    thread_.request_stop();
    cv_.notify_all();
    thread_ = {};
}

bool Announcer::send_locked(MacAddr mac) const {
    if (auto r = sq_.poll(); !r) logf(LogLevel::Error, "%s: %s", name_.c_str(), r.error().what.c_str());
    const auto frame = rarp_frame(mac);
    if (auto r = sq_.post(frame); !r) {
        logf(LogLevel::Warning, "%s: RARP from %s not sent: %s", name_.c_str(), mac_string(mac).c_str(),
             r.error().what.c_str());
        return false;
    }
    return true;
}

void Announcer::cut_if_guest_announced_locked() const {
    if (stats_.rounds_left == 0 || !guest_seen_.load(std::memory_order_acquire)) return;
    stats_.rounds_left = 0;
    ++stats_.stopped_early;
}

void Announcer::begin(uint64_t seq) {
    std::lock_guard lk(mu_);
    guest_seen_.store(false, std::memory_order_relaxed);
    const MacAddr mac = stats_.frontend_mac ? stats_.frontend_mac : vport_mac_;
    ++generation_;
    seq_ = seq;
    running_ = true;
    stats_.rounds_left = 0;
    if (!mac) {
        logf(LogLevel::Info, "%s: no MAC (the vport has none, the frontend sent none): the device does not "
             "announce the start", name_.c_str());
        return;
    }
    round_ = 1;
    stats_.rounds_left = cfg_.rounds - 1;
    ++stats_.starts;
    ++stats_.rounds;
    if (send_locked(mac)) ledger_.device_announced(seq);
    next_ = std::chrono::steady_clock::now() + announce_delay(cfg_, 2);
    cv_.notify_all();
}

void Announcer::frontend_rarp(MacAddr mac) {
    std::lock_guard lk(mu_);
    ++stats_.requests;
    stats_.frontend_mac = mac;
    if (running_ && send_locked(mac) && seq_) ledger_.device_announced(seq_);
}

void Announcer::guest_announced() noexcept { guest_seen_.store(true, std::memory_order_release); }

void Announcer::stop() {
    std::lock_guard lk(mu_);
    ++generation_;
    running_ = false;
    stats_.rounds_left = 0;
}

void Announcer::frontend_left() {
    std::lock_guard lk(mu_);
    ++generation_;
    running_ = false;
    stats_.rounds_left = 0;
    stats_.frontend_mac = 0;
}

AnnounceStats Announcer::stats() const {
    std::lock_guard lk(mu_);
    if (auto r = sq_.poll(); !r) logf(LogLevel::Error, "%s: %s", name_.c_str(), r.error().what.c_str());
    cut_if_guest_announced_locked();
    AnnounceStats s = stats_;
    s.sq = sq_.counters();
    return s;
}

// The guest's announce is checked before each round, not waited for: a
// round is never sent after it was seen.
void Announcer::loop(std::stop_token st) {
    std::unique_lock lk(mu_);
    while (!st.stop_requested()) {
        if (stats_.rounds_left == 0) {
            cv_.wait(lk, st, [&] { return stats_.rounds_left > 0; });
            continue;
        }
        const uint64_t generation = generation_;
        if (cv_.wait_until(lk, st, next_, [&] { return generation_ != generation; })) continue;
        if (st.stop_requested()) continue;
        cut_if_guest_announced_locked();
        if (stats_.rounds_left == 0) continue;
        const MacAddr mac = stats_.frontend_mac ? stats_.frontend_mac : vport_mac_;
        ++round_;
        --stats_.rounds_left;
        ++stats_.rounds;
        send_locked(mac);
        next_ = std::chrono::steady_clock::now() + announce_delay(cfg_, round_ + 1);
    }
}

}  // namespace mlx5async::core
