#include "datapath.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "../state.hpp"
#include "../virtq_fsm.hpp"
#include "common/base/named_thread.hpp"
#include "common/prm/event_qp.hpp"
#include "common/prm/general_obj.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/sq.hpp"
#include "dirty_log.hpp"
#include "loopback.hpp"

namespace mlx5async::emu::dp {
namespace {

constexpr uint32_t kBudget = 64;       // chains per pair per lock hold
constexpr uint32_t kHotPasses = 256;   // passes scanning all pairs after activity
constexpr uint32_t kSpinPasses = 64;   // yielding passes before sleeping
constexpr auto kMinSleep = std::chrono::microseconds(20);
constexpr auto kMaxSleep = std::chrono::microseconds(1000);
constexpr uint16_t kVirtqType = uint16_t(prm::ObjType::VIRTIO_NET_Q);

bool runnable(const VirtqObj& v) {
    // virtio_q_mkey 0: no guest memory given (control-path-only objects).
    return v.state() == prm::VirtqState::RDY && v.attr.virtio_q_mkey != 0 && v.attr.queue_size != 0;
}

}  // namespace

Datapath::Datapath(DeviceState& st, uint32_t index, bool freeze_to_rdy, Wire& wire)
    : st_(st), index_(index), freeze_to_rdy_(freeze_to_rdy), wire_(wire) {
    thread_ = make_named_thread("emu-dp" + std::to_string(index_),
                                [this](std::stop_token s) { run(s); });
}

Datapath::~Datapath() {
    stop();
    std::lock_guard lk(db_mu_);
    for (Doorbell& d : doorbells_) munmap(d.map, 4096);
    for (UarPage& u : uars_) munmap(u.map, 4096);
}

void Datapath::stop() {
    thread_.request_stop();  // wakes the condition_variable_any wait
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void Datapath::set_translator(Translator t) {
    std::lock_guard lk(st_.mu);
    tr_ = std::move(t);
}

void Datapath::set_write_observer(WriteObserver o) {
    std::lock_guard lk(st_.mu);
    observer_ = std::move(o);
}

void Datapath::set_announce_observer(AnnounceObserver o) {
    std::lock_guard lk(st_.mu);
    announce_observer_ = std::move(o);
}

void Datapath::add_doorbell(uint32_t var_id, uint32_t ctx, int fd, off_t off) {
    void* m = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
    if (m == MAP_FAILED) return;  // kicks then come only through Device::kick
    auto* w = static_cast<uint32_t*>(m);
    std::atomic_ref<uint32_t>(*w).store(kIdleDoorbell);
    std::lock_guard lk(db_mu_);
    doorbells_.push_back({var_id, ctx, w, m});
}

void Datapath::remove_doorbell(uint32_t var_id) {
    std::lock_guard lk(db_mu_);
    std::erase_if(doorbells_, [&](const Doorbell& d) {
        if (d.var_id != var_id) return false;
        munmap(d.map, 4096);
        return true;
    });
}

void Datapath::add_uar(uint32_t uar_id, uint32_t ctx, int fd, off_t off) {
    void* m = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
    if (m == MAP_FAILED) return;  // its CQs are then armed only by other pages' doorbells
    auto* reg = reinterpret_cast<uint64_t*>(static_cast<std::byte*>(m) + prm::kUarCqDoorbellOffset);
    auto* send = reinterpret_cast<uint64_t*>(static_cast<std::byte*>(m) + prm::kUarSendDoorbellOffset);
    std::atomic_ref<uint64_t>(*reg).store(kIdleCqDoorbell);
    std::atomic_ref<uint64_t>(*send).store(kIdleSendDoorbell);
    std::lock_guard lk(db_mu_);
    uars_.push_back({uar_id, ctx, reg, send, m});
}

void Datapath::remove_uar(uint32_t uar_id) {
    std::lock_guard lk(db_mu_);
    std::erase_if(uars_, [&](const UarPage& u) {
        if (u.uar_id != uar_id) return false;
        munmap(u.map, 4096);
        return true;
    });
}

void Datapath::drop_context(uint32_t ctx) {
    std::lock_guard lk(db_mu_);
    std::erase_if(doorbells_, [&](const Doorbell& d) {
        if (d.ctx != ctx) return false;
        munmap(d.map, 4096);
        return true;
    });
    std::erase_if(uars_, [&](const UarPage& u) {
        if (u.ctx != ctx) return false;
        munmap(u.map, 4096);
        return true;
    });
}

void Datapath::notify() {
    kicked_ = true;
    std::lock_guard lk(wake_mu_);
    woken_ = true;
    wake_cv_.notify_one();
}

DatapathStats Datapath::stats() const {
    std::lock_guard lk(stats_mu_);
    return stats_;
}

void Datapath::run(std::stop_token stop) {
    uint32_t idle = 0;
    while (!stop.stop_requested()) {
        if (pass()) {
            idle = 0;
            continue;
        }
        if (++idle <= kSpinPasses) {
            std::this_thread::yield();
            continue;
        }
        auto d = std::min<std::chrono::microseconds>(kMaxSleep, kMinSleep * (1u << std::min(idle - kSpinPasses, 6u)));
        std::unique_lock lk(wake_mu_);
        wake_cv_.wait_for(lk, stop, d, [&] { return woken_; });
        woken_ = false;
        if (idle > kSpinPasses) {
            std::lock_guard sl(stats_mu_);
            ++stats_.sleeps;
        }
    }
}

std::vector<std::pair<uint32_t, uint16_t>> Datapath::read_doorbells() {
    std::vector<std::pair<uint32_t, uint16_t>> rung;
    std::lock_guard lk(db_mu_);
    for (Doorbell& d : doorbells_) {
        uint32_t v = std::atomic_ref<uint32_t>(*d.word).exchange(kIdleDoorbell);
        // A 16-bit notify (virtio-pci) leaves the upper half idle.
        if (v != kIdleDoorbell) rung.emplace_back(d.ctx, uint16_t(v & 0xffff));
    }
    return rung;
}

Datapath::UarWrites Datapath::read_uar_doorbells() {
    UarWrites written;
    std::lock_guard lk(db_mu_);
    for (UarPage& u : uars_) {
        uint64_t v = std::atomic_ref<uint64_t>(*u.cq_doorbell).exchange(kIdleCqDoorbell);
        if (v != kIdleCqDoorbell) written.cq.emplace_back(u.uar_id, v);
        if (std::atomic_ref<uint64_t>(*u.send_doorbell).exchange(kIdleSendDoorbell) != kIdleSendDoorbell)
            written.send.push_back(u.uar_id);
    }
    return written;
}

void Datapath::count_kicks(const std::vector<std::pair<uint32_t, uint16_t>>& rung) {
    std::lock_guard lk(st_.mu);
    for (const auto& [ring_ctx, ring_q] : rung) {
        const uint32_t ctx = ring_ctx;  // copies: clang 14 cannot capture structured bindings
        const uint16_t q = ring_q;
        st_.virtqs.for_each([&](uint32_t, VirtqObj& v) {
            if (v.ctx != ctx || v.attr.queue_index != q) return;
            v.kicks.rung(v.state(), st_.profile.replay_early_kicks);  // as Device::kick
        });
    }
}

std::vector<Datapath::Pair> Datapath::ready_pairs() {
    std::vector<Pair> pairs;
    std::lock_guard lk(st_.mu);
    if (!tr_) return pairs;
    // TX queue 2k+1 of a context feeds RX queue 2k of the same context. One
    // pass to index the RX queues, one to pair them: this runs under the
    // device lock, which the command handlers need too.
    std::unordered_map<uint64_t, uint32_t> rx_of;  // (ctx, queue_index) -> id
    auto key = [](uint32_t ctx, uint32_t q) { return (uint64_t(ctx) << 32) | q; };
    st_.virtqs.for_each([&](uint32_t id, VirtqObj& v) {
        if (!(v.attr.queue_index & 1)) rx_of.emplace(key(v.ctx, v.attr.queue_index), id);
    });
    st_.virtqs.for_each([&](uint32_t id, VirtqObj& v) {
        if (!runnable(v) || !(v.attr.queue_index & 1)) return;
        auto it = rx_of.find(key(v.ctx, v.attr.queue_index - 1u));
        pairs.push_back(Pair{id, it == rx_of.end() ? 0u : it->second});
    });
    return pairs;
}

bool Datapath::pass() {
    auto rung = read_doorbells();
    auto uar = read_uar_doorbells();
    if (!rung.empty()) count_kicks(rung);
    if (!rung.empty() || kicked_.exchange(false)) hot_ = kHotPasses;
    {
        std::lock_guard lk(stats_mu_);
        ++stats_.passes;
        stats_.doorbells += rung.size();
    }
    bool irq = service_interrupts(uar.cq);
    bool sent = !uar.send.empty() && service_sends(uar.send);
    if (hot_ == 0) return irq || sent;
    --hot_;
    uint32_t moved = 0;
    for (const Pair& p : ready_pairs()) moved += process_pair(p);
    if (moved) hot_ = kHotPasses;
    return moved != 0 || irq || sent;
}

bool Datapath::service_sends(const std::vector<uint32_t>& uars) {
    SendStats s;
    {
        std::lock_guard lk(st_.mu);
        for (uint32_t uar : uars) send_doorbell(st_, uar, max_frame_of_mtu(st_.profile.mtu), wire_, s);
    }
    std::lock_guard sl(stats_mu_);
    stats_.send += s;
    return s.frames || s.errors;
}

// CQ arms, then the interrupts still owed (a receive WQE posted since, a
// queue resumed): every pass, as a WQE is posted by a memory write only.
bool Datapath::service_interrupts(const std::vector<std::pair<uint32_t, uint64_t>>& cq_doorbells) {
    IrqStats s;
    {
        std::lock_guard lk(st_.mu);
        if (cq_doorbells.empty() && irq_owed_.empty()) return false;
        for (auto [uar, reg] : cq_doorbells) uar_doorbell(st_, uar, reg, s);
        std::erase_if(irq_owed_, [&](uint32_t id) {
            auto vq = st_.virtqs.find(id);
            return !vq || deliver(st_, *vq, s);
        });
    }
    std::lock_guard sl(stats_mu_);
    stats_.irq += s;
    return s.arms || s.raised || s.events;
}

// The pass moved vq's used index (under st_.mu): owe and try to send.
void Datapath::interrupt_after_pass(uint32_t id, VirtqObj& vq, uint16_t used_before, IrqStats& s) {
    if (vq.state() != prm::VirtqState::RDY || vq.attr.hw_used_index == used_before) return;
    bool owed = vq.irq.pending;
    used_moved(vq, tr_, s);
    if (vq.irq.pending && !deliver(st_, vq, s) && !owed) irq_owed_.push_back(id);
}

uint32_t Datapath::process_pair(const Pair& p) {
    std::lock_guard lk(st_.mu);
    auto tx = st_.virtqs.find(p.tx);
    if (!tx || !runnable(*tx) || !tr_) return 0;  // suspended/destroyed since the snapshot
    VirtqObj* rx = nullptr;
    if (p.rx)
        if (auto r = st_.virtqs.find(p.rx); r && runnable(*r)) rx = &*r;
    prm::VirtqCounters scratch_tx, scratch_rx;
    auto counters_of = [&](VirtqObj& v, prm::VirtqCounters& scratch) -> prm::VirtqCounters& {
        if (v.attr.counter_set_id)
            if (auto c = st_.counters.find(v.attr.counter_set_id)) return c->values;
        return scratch;
    };
    DirtyLog txlog(tr_, tx->attr);
    std::optional<DirtyLog> rxlog;
    if (rx) rxlog.emplace(tr_, rx->attr);
    WriteObserver txobs = [&](uint64_t a, size_t n) { txlog.mark(a, n); if (observer_) observer_(a, n); };
    WriteObserver rxobs = [&](uint64_t a, size_t n) { rxlog->mark(a, n); if (observer_) observer_(a, n); };
    QueueIo txio{tx->attr, counters_of(*tx, scratch_tx), &txobs};
    txio.frames = &tx->frames;
    txio.max_frame = max_frame_of_mtu(st_.profile.mtu);
    const std::function<void()> announced = [&] {
        if (announce_observer_) announce_observer_(tx->ctx, tx->attr.queue_index);
    };
    txio.on_announce = &announced;
    std::optional<QueueIo> rxio;
    if (rx) rxio.emplace(QueueIo{rx->attr, counters_of(*rx, scratch_rx), &rxobs});
    const uint16_t tx_used = tx->attr.hw_used_index, rx_used = rx ? rx->attr.hw_used_index : 0;
    LoopbackResult r = loopback(tr_, txio, rxio ? &*rxio : nullptr, kBudget);
    // A bitmap the device cannot write would lose dirty pages: an error too.
    if (!txio.error && txlog.failed()) txio.error = error_type::kDirtyLog, ++txio.ctr.error_cqes;
    if (rxio && !rxio->error && rxlog->failed()) rxio->error = error_type::kDirtyLog, ++rxio->ctr.error_cqes;
    auto fail = [&](uint32_t id, VirtqObj& v, uint8_t type) {
        if (!transition(v, {prm::VirtqState::ERR, VqCause::DeviceError, type}, freeze_to_rdy_)) return;
        auto eqe = object_change_eqe(kVirtqType, id);
        st_.events.raise(kVirtqType, id, prm::kEventObjectChange, eqe);
        std::lock_guard sl(stats_mu_);
        ++stats_.errors;
    };
    if (txio.error) fail(p.tx, *tx, txio.error);
    if (rxio && rxio->error) fail(p.rx, *rx, rxio->error);
    IrqStats irq;
    interrupt_after_pass(p.tx, *tx, tx_used, irq);
    if (rx) interrupt_after_pass(p.rx, *rx, rx_used, irq);
    std::lock_guard sl(stats_mu_);
    stats_.packets += r.packets;
    stats_.irq += irq;
    return r.packets + r.dropped;
}

}  // namespace mlx5async::emu::dp
