#include "frontend.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace vug {

namespace {
constexpr uint64_t bit(int b) { return 1ull << b; }
}  // namespace

Frontend::Frontend(const Options& o) : o_(o), irqs_(2 * std::max(o.pairs, 1)) {
    if (o.pairs < 1 || o.pairs > 128) throw UsageError("--pairs: expected 1..128");
    if (o.ring_size < 2 || o.ring_size > 32768 || (o.ring_size & (o.ring_size - 1)))
        throw UsageError("--ring-size: expected a power of 2 in 2..32768");
    if (o.mem_mb < 1) throw UsageError("--mem-mb: expected >= 1");
    mem_ = std::make_unique<GuestMemory>(o.gpa_base, uint64_t(o.mem_mb) << 20, o.regions,
                                         o.region_gap);
    for (int i = 0; i < 2 * o.pairs; i++) {
        rings_.push_back(std::make_unique<Ring>(*mem_, uint32_t(i), uint16_t(o.ring_size)));
        rings_.back()->set_base(uint16_t(o.base), true);
    }
    enabled_.assign(rings_.size(), true);
}

Ring& Frontend::ring(int i) {
    if (i < 0 || i >= nrings())
        throw UsageError("ring " + std::to_string(i) + " out of range 0.." +
                         std::to_string(nrings() - 1));
    return *rings_[size_t(i)];
}

void Frontend::need_session(const char* what) const {
    if (!session_) throw UsageError(std::string(what) + ": no session (run start first)");
}

void Frontend::open_session() {
    if (session_) return;
    if (!conn_.connected()) conn_.connect(o_.socket);
    connections_++;
    backend_features_ = conn_.get_u64(GET_FEATURES);
    backend_proto_ = 0;
    if (backend_features_ & bit(vf::PROTOCOL_FEATURES)) {
        backend_proto_ = conn_.get_u64(GET_PROTOCOL_FEATURES);
        uint64_t want = bit(pf::MQ) | bit(pf::REPLY_ACK) | bit(pf::LOG_SHMFD) | bit(pf::STATUS) |
                        bit(pf::CONFIG);
        uint64_t agreed = backend_proto_ & want;
        conn_.set_u64(SET_PROTOCOL_FEATURES, agreed);  // no ack asked: not agreed yet
        conn_.set_negotiated_protocol(agreed);
    }
    conn_.set_owner();
    queue_num_ = 1;
    if (conn_.has(pf::MQ)) queue_num_ = conn_.get_u64(GET_QUEUE_NUM);
    if (uint64_t(o_.pairs) > queue_num_)
        throw VugError("GET_QUEUE_NUM: backend has " + std::to_string(queue_num_) +
                       " queue pairs, --pairs asks " + std::to_string(o_.pairs));
    if (o_.pairs > 1 && !(backend_features_ & bit(vf::NET_MQ)))
        throw VugError("GET_FEATURES: backend does not offer VIRTIO_NET_F_MQ, --pairs > 1");
    session_ = true;
    log_sent_ = false;
    started_ = false;
}

uint64_t Frontend::wanted_features() const {
    uint64_t want = bit(vf::VERSION_1) | bit(vf::NET_MQ) | bit(vf::PROTOCOL_FEATURES);
    if (logging_) want |= bit(vf::LOG_ALL);
    return want & backend_features_;
}

void Frontend::negotiate() {
    open_session();
    features_ = wanted_features();
    conn_.set_u64(SET_FEATURES, features_);
}

void Frontend::status(uint8_t s) {
    need_session("status");
    if (!conn_.has(pf::STATUS)) throw VugError("SET_STATUS: backend did not offer VHOST_USER_PROTOCOL_F_STATUS");
    conn_.set_u64(SET_STATUS, s);
}

void Frontend::send_status(uint8_t s) {
    if (conn_.has(pf::STATUS)) conn_.set_u64(SET_STATUS, s);
}

void Frontend::send_log_base(DirtyLog::Shape shape) {
    if (!log_ || shape != DirtyLog::Shape::Full) log_ = std::make_unique<DirtyLog>(mem_->end(), shape);
    conn_.set_log_base(log_->size(), 0, log_->fd());
    log_sent_ = true;
}

void Frontend::send_ring(Ring& r) {
    // Count what the old callfd got before it is closed.
    irqs_.detach(int(r.index()));
    r.new_eventfds();
    irqs_.attach(int(r.index()), r.callfd());
    conn_.set_vring_state(SET_VRING_NUM, r.index(), r.size());
    conn_.set_vring_state(SET_VRING_BASE, r.index(), r.base());
    VringAddr a = r.addr(logging_);
    for (const BadAddr& b : bad_addrs_) {
        if (b.ring != int(r.index())) continue;
        if (b.part == "desc") a.desc_user_addr = b.hva;
        if (b.part == "avail") a.avail_user_addr = b.hva;
        if (b.part == "used") a.used_user_addr = b.hva;
    }
    conn_.set_vring_addr(a);
    conn_.set_vring_fd(SET_VRING_KICK, r.index(), r.kickfd());
    conn_.set_vring_fd(SET_VRING_CALL, r.index(), r.callfd());
}

void Frontend::start(bool dst_order) {
    open_session();
    if (started_) throw UsageError("start: already started (stop first)");
    constexpr uint8_t pre = st::ACK | st::DRIVER | st::FEATURES_OK;
    if (logging_ && !log_sent_) send_log_base();
    features_ = wanted_features();
    if (dst_order) {
        for (auto& r : rings_) conn_.set_vring_state(SET_VRING_ENABLE, r->index(), enabled_[r->index()]);
        conn_.set_u64(SET_FEATURES, features_);
        send_status(pre);
    } else {
        conn_.set_u64(SET_FEATURES, features_);
    }
    conn_.set_mem_table(mem_->table(), mem_->fds());
    for (auto& r : rings_) send_ring(*r);
    if (!dst_order)
        for (auto& r : rings_) conn_.set_vring_state(SET_VRING_ENABLE, r->index(), enabled_[r->index()]);
    send_status(pre | st::DRIVER_OK);
    started_ = true;
}

std::vector<uint32_t> Frontend::stop(bool disable_first) {
    if (!started_) throw UsageError("stop: not started");
    if (disable_first)
        for (auto& r : rings_) conn_.set_vring_state(SET_VRING_ENABLE, r->index(), 0);
    else
        send_status(0);
    std::vector<uint32_t> bases;
    for (auto& r : rings_) {
        uint32_t b = conn_.get_vring_base(r->index());
        r->set_base(uint16_t(b), false);
        bases.push_back(b);
    }
    started_ = false;
    return bases;
}

void Frontend::set_enable(int i, bool on) {
    Ring& r = ring(i);
    enabled_[size_t(i)] = on;
    if (session_) conn_.set_vring_state(SET_VRING_ENABLE, r.index(), on);
}

int Frontend::set_pairs(int n) {
    if (n < 1 || n > o_.pairs)
        throw UsageError("pairs: expected 1.." + std::to_string(o_.pairs));
    for (int i = 0; i < nrings(); i++) set_enable(i, i < 2 * n);
    return 2 * n;
}

void Frontend::disconnect() {
    conn_.close();
    session_ = false;
    started_ = false;
    log_sent_ = false;
}

void Frontend::reconnect(int wait_ms) {
    disconnect();
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    for (;;) {
        try {
            conn_.connect(o_.socket);
            break;
        } catch (const VugError&) {
            if (std::chrono::steady_clock::now() >= end) throw;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the backend is starting
        }
    }
    open_session();
}

void Frontend::log_on(DirtyLog::Shape shape) {
    open_session();
    if (!(backend_features_ & bit(vf::LOG_ALL)))
        throw VugError("SET_FEATURES: backend does not offer VHOST_F_LOG_ALL (bit 26)");
    send_log_base(shape);
    logging_ = true;
    features_ = wanted_features();
    conn_.set_u64(SET_FEATURES, features_);
    if (started_)
        for (auto& r : rings_) conn_.set_vring_addr(r->addr(true));
}

void Frontend::log_off() {
    need_session("log-off");
    logging_ = false;
    features_ = wanted_features();
    conn_.set_u64(SET_FEATURES, features_);
    if (started_)
        for (auto& r : rings_) conn_.set_vring_addr(r->addr(false));
}

void Frontend::set_base(int i, uint16_t b) {
    if (started_) throw UsageError("base: rings are running (stop first)");
    if (i < 0)
        for (auto& r : rings_) r->set_base(b, true);
    else
        ring(i).set_base(b, true);
}

void Frontend::raw_vring_num(int i, uint32_t num) {
    Ring& r = ring(i);
    open_session();
    conn_.set_vring_state(SET_VRING_NUM, r.index(), num);
}

uint64_t Frontend::bad_addr(int i, const std::string& part, const std::string& kind) {
    ring(i);  // checks the index
    if (part != "desc" && part != "avail" && part != "used")
        throw UsageError("bad-addr: part must be desc, avail or used");
    uint64_t hva = 0;
    if (kind == "outside") {
        hva = 0x1000;  // the zero page's neighbour: never one of our mappings
    } else if (kind == "straddle") {
        const Region& r0 = mem_->regions().front();
        hva = mem_->hva(r0.gpa + r0.size - 8);
    } else {
        throw UsageError("bad-addr: kind must be outside or straddle");
    }
    bad_addrs_.push_back({i, part, hva});
    return hva;
}

void Frontend::kick(int i) {
    if (!started_) throw UsageError("not started: no kick eventfd");
    ring(i).kick();
}

void Frontend::set_no_interrupt(int i, bool on) {
    if (i < 0)
        for (auto& r : rings_) r->set_no_interrupt(on);
    else
        ring(i).set_no_interrupt(on);
}

bool Frontend::wait_used(int i, uint16_t n, int timeout_ms) {
    using clock = std::chrono::steady_clock;
    const Ring& r = ring(i);
    auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms);
    // Polling on purpose: tests compare the progress seen this way with the
    // notifications counted on the callfd.
    while (uint16_t(r.used_idx() - n) >= 0x8000) {
        if (clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return true;
}

}  // namespace vug
