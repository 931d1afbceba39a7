// The destination's start of a migration: from dev_conf entry to every
// virtq RDY, guest-memory registration included, for guests of 4 .. 1024
// GiB on 1 to 8 devices x 32 virtqs, sequential (DPDK 22.11's order:
// regions one by one, then virtqs one by one) and async. Starts "serial":
// one device after another, each dev_conf waiting for its start (what
// DPDK's single vhost thread did when dev_conf ran the start); "concurrent":
// every device's dev_conf posts its start and returns, and the starts run
// side by side on the devices' strands (each device its own firmware, the
// host's pinning CPUs shared: the emulator's pin_cpus).
// Guest memory is one sparse memfd: nothing is touched but the rings; rows
// with page_kib 2048 or 1048576 count its pages as 2 MiB or 1 GiB hugepages
// (the emulator's shared_page_kib), as a hugepage-backed guest pins them.
// Virtqs are pre-created (devarg queues) unless the row says otherwise:
// then the start also creates them (umems, counters, event QPs, CREATE).
//
// ideal_ms is the model's own limit for the work (doc/emulator.md, "Memory
// registration"): per device, the chunks' umems (pinning in parallel on the
// max_inflight chains of registrations, on the host's pin_cpus shared by the
// devices pinning at once, their MTTs on each device's `mtt_lanes` lanes),
// each chunk's direct mkey after its umem (the last one's after all the
// pinning, the others' beside it), the indirect mkey, then
// the virtqs' MODIFY to RDY (waves of the throttle); sequential: the sum of
// all, over whole regions. Virtqs created at the start add, for async, the
// CREATEs after whichever ends later, the chunks or the virtqs' umems,
// counters and event QPs (given slots and throttle), and the indirect mkey
// after the CREATEs: a bound that a start whose CREATEs overlap the
// memory (device_start.cpp) may beat; `unshared_ms` is the same work with
// the memory first and the virtqs after it, so a measured start below it
// shows the overlap.
#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "testkit/linked_emulator.hpp"
#include "bench_common.hpp"
#include "drivers/emu/emu.hpp"
#include "vdpa/mlx5async/core/device.hpp"
#include "vdpa/mlx5async/core/guest_memory.hpp"

namespace mlx5async::bench {
namespace {

using core::GuestConfig;
constexpr uint64_t kGiB = 1ull << 30;
constexpr uint32_t kVirtqs = 32;
constexpr uint64_t kLowGiB = 2;  // QEMU's guest RAM below 4 GiB, then a hole to 4 GiB

// A sparse memfd of `gib` GiB mapped shared (as QEMU's memory backend),
// kept for the process: mapping it is free, registering it is the work.
struct GuestFile {
    int fd = -1;
    uint64_t base = 0;
};
const GuestFile* guest_file(uint64_t gib) {
    static std::map<uint64_t, GuestFile> files;
    auto it = files.find(gib);
    if (it != files.end()) return &it->second;
    GuestFile f;
    f.fd = memfd_create("bench-guest", MFD_CLOEXEC);
    if (f.fd < 0 || ftruncate(f.fd, off_t(gib * kGiB)) != 0) return nullptr;
    void* p = mmap(nullptr, gib * kGiB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, f.fd, 0);
    if (p == MAP_FAILED) return nullptr;
    f.base = uint64_t(uintptr_t(p));
    return &files.emplace(gib, f).first->second;
}

// Two regions (below and above the PCI hole), 32 idle rings in the first.
GuestConfig guest_of(const GuestFile& f, uint64_t gib) {
    GuestConfig g;
    g.features = core::vfeat::VERSION_1 | core::vfeat::MQ;
    g.mem.push_back({0, kLowGiB * kGiB, f.base, 0, 0, 0});
    g.mem.push_back({4 * kGiB, (gib - kLowGiB) * kGiB, f.base + kLowGiB * kGiB, 0, 0, kLowGiB * kGiB});
    for (uint16_t i = 0; i < kVirtqs; i++) {
        core::VringConfig v;
        v.index = i;
        v.size = 256;
        v.desc_gpa = 0x100000 + i * 0x10000;
        v.avail_gpa = v.desc_gpa + 0x1000;
        v.used_gpa = v.desc_gpa + 0x2000;
        v.enabled = true;
        g.vrings.push_back(v);
    }
    return g;
}

// What making one device's virtqs costs in the model (ns), as the core
// makes them: per ring three umems, a counters object and an event QP (a
// chain of a umem, a CQ, two QPs and their three transitions each), in the
// memory's batch, then the CREATE.
struct VirtqWork {
    double umem_ns = 0, counters_ns = 0, eqp_ns = 0, create_ns = 0;  // per ring, sequential
    double resources_slot_ns = 0;  // slot time of the first batch's share, per ring
};
VirtqWork virtq_work(const emu::Profile& p) {
    const emu::Timing& t = p.timing;
    VirtqWork w;
    for (int n = 0; n < 3; n++) {
        const double pages = std::ceil(double(std::max<uint64_t>(p.virtio.umem_size(n, 256), 1)) / 4096);
        w.umem_ns += t.umem_us * 1e3 + pages * t.pin_ns;
    }
    w.counters_ns = t.create_us * 1e3;
    w.eqp_ns = t.umem_us * 1e3 + 6 * t.pin_ns + 9 * t.general_us * 1e3;
    w.create_ns = t.create_us * 1e3;
    w.resources_slot_ns = w.umem_ns + w.counters_ns;
    return w;
}

// The virtqs' part of an async start (ns): the resources and the event
// QPs' chains (on the slots the memory's chains leave, counters also
// within the throttle), then the CREATEs (waves of the throttle).
struct VirtqPath {
    double resources = 0, creates = 0;
};
VirtqPath virtq_path(const emu::Profile& p, double rings, double slots_left) {
    const VirtqWork w = virtq_work(p);
    const double waves = std::ceil(rings / p.max_inflight);
    VirtqPath v;
    v.resources = std::max(rings * (w.resources_slot_ns + w.eqp_ns) / std::max(1.0, slots_left),
                           std::max(waves * w.counters_ns, w.eqp_ns));
    v.creates = waves * w.create_ns;
    return v;
}

// The model's limit for starting one device with this guest (ns): the
// chunks the core registers (whole regions for sequential), see the header.
// `unshared`: the virtqs' work after the memory's instead of beside it.
// `pinning`: devices registering at once, sharing the host's pin CPUs.
double ideal_device_ns(const emu::Profile& p, const GuestConfig& g, bool sequential, bool precreated,
                       bool unshared = false, uint32_t pinning = 1) {
    const emu::Timing& t = p.timing;
    const double page = double(p.shared_page_kib) * 1024;  // what the guest's memfd counts in
    double own_sum = 0, own_max = 0, mtt = 0, chunks = 0, klm = double(g.mem.size() - 1);  // holes
    double pin_max = 0, pin_sum = 0;
    for (const core::MemChunk& c : core::chunks_of(g.mem, sequential)) {
        const double pages = std::ceil(double(c.size) / page), pin = pages * t.pin_ns;
        const double own = t.umem_us * 1e3 + pin;
        own_sum += own;
        own_max = std::max(own_max, own);
        pin_max = std::max(pin_max, pin);
        pin_sum += pin;
        mtt += pages * t.mtt_ns;
        chunks += 1;
        klm += std::ceil(double(c.size) / double(2ull << 30));  // KLM entries of at most 2 GiB
    }
    const double indirect = t.mkey_us * 1e3 + klm * t.mtt_ns;
    const double virtqs = double(g.vrings.size());
    const VirtqWork w = virtq_work(p);
    if (sequential) {
        const double create = precreated ? 0 : virtqs * (w.umem_ns + w.counters_ns + w.eqp_ns + w.create_ns);
        return own_sum + mtt + chunks * t.mkey_us * 1e3 + indirect + create + virtqs * t.modify_us * 1e3;
    }
    const double lanes = std::max<uint32_t>(1, t.mtt_lanes);
    const double chains = std::min<double>(chunks, p.max_inflight);
    double umems = std::max(std::ceil(chunks / chains) * own_max, own_max + mtt / lanes);
    // Every device's pinning on the host's CPUs (pin_cpus lanes, 0: one each).
    if (t.pin_cpus && pinning * chains > t.pin_cpus)
        umems = std::max(umems, pinning * pin_sum / t.pin_cpus + t.umem_us * 1e3);
    const double chunks_done = umems + t.mkey_us * 1e3;  // the last chunk's mkey
    const double modify = std::ceil(virtqs / p.max_inflight) * t.modify_us * 1e3;
    if (precreated) return chunks_done + indirect + modify;
    if (unshared) {
        const VirtqPath v = virtq_path(p, virtqs, p.cmd_slots);
        return chunks_done + indirect + v.resources + v.creates + modify;
    }
    const VirtqPath v = virtq_path(p, virtqs, p.cmd_slots - chains);
    return std::max(chunks_done, v.resources) + v.creates + indirect + modify;
}

// Every device's start posted, then waited for: the concurrent starts.
Result<void> start_all(std::vector<std::unique_ptr<core::Device>>& devs, const GuestConfig& g) {
    std::mutex mu;
    std::condition_variable cv;
    size_t done = 0;
    Result<void> first = {};
    for (auto& d : devs) {
        d->ledger().mark(core::LedgerPhase::StartRequested);
        auto r = d->start(g, [&](const Result<void>& res) {
            std::lock_guard lk(mu);
            if (!res && first) first = res;
            ++done;
            cv.notify_all();
        });
        if (!r) return r;
    }
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return done == devs.size(); });
    return first;
}

void destination_start(benchmark::State& st, core::Strategy s, const devx::EngineOptions& switches = {}) {
    const uint64_t gib = uint64_t(st.range(0));
    const uint32_t devices = uint32_t(st.range(1));
    const bool precreated = st.range(2) != 0;
    const uint64_t page_kib = uint64_t(st.range(3));
    const bool concurrent = st.range(4) != 0;
    // The guest's pages: the memfd's 4 KiB, or hugepages as the model counts them.
    const std::string spec = profile_spec() + (page_kib != 4 ? ",shared_page_kib=" + std::to_string(page_kib) : "");
    auto prof = emu::parse_spec(spec);
    const GuestFile* f = guest_file(gib);
    if (!prof || !f) return st.SkipWithError("emulator profile or guest memfd");
    const GuestConfig g = guest_of(*f, gib);
    std::vector<std::unique_ptr<core::Device>> devs;
    static int opened = 0;
    for (uint32_t d = 0; d < devices; d++) {
        core::DeviceConfig c;
        c.emu_spec = spec;
        c.queues = precreated ? kVirtqs / 2 : 0;
        c.queue_size = 256;
        c.strategy = s;
        c.engine_switches = switches;
        auto dev = core::Device::open(c, "bench-dst" + std::to_string(opened++));
        if (!dev) return st.SkipWithError(("device: " + to_string(dev.error())).c_str());
        for (uint16_t i = 0; i < kVirtqs; i++) (*dev)->set_vring_state(i, true);
        devs.push_back(std::move(*dev));
    }
    BatchTimes times;
    for (auto _ : st) {
        auto t0 = std::chrono::steady_clock::now();
        if (concurrent) {
            if (auto r = start_all(devs, g); !r) return st.SkipWithError(to_string(r.error()).c_str());
        } else {
            for (auto& d : devs)
                if (auto r = d->configure(g); !r) return st.SkipWithError(to_string(r.error()).c_str());
        }
        times.add(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        st.PauseTiming();
        for (auto& d : devs) {
            for (const auto& v : d->vq_info())
                if (v.index < kVirtqs && v.phase != core::VqPhase::Ready)
                    return st.SkipWithError(("virtq " + std::to_string(v.index) + " not RDY").c_str());
            d->cleanup();  // forgets the memory: the next iteration registers it again
        }
        st.ResumeTiming();
    }
    const bool seq = s == core::Strategy::Sequential;
    // Serial: the devices' starts one after another; concurrent: side by
    // side, each with its own firmware, the pinning shared.
    const double ideal_ms = concurrent ? ideal_device_ns(*prof, g, seq, precreated, false, devices) / 1e6
                                       : devices * ideal_device_ns(*prof, g, seq, precreated) / 1e6;
    if (!precreated && !seq)
        st.counters["unshared_ms"] = devices * ideal_device_ns(*prof, g, seq, false, true) / 1e6;
    st.counters["virtqs_precreated"] = precreated;
    st.counters["ideal_ms"] = ideal_ms;
    st.counters["measured_ms"] = times.median();
    st.counters["measured_over_ideal"] = ideal_ms > 0 ? times.median() / ideal_ms : 0;
    st.counters["guest_gib"] = double(gib);
    st.counters["devices"] = devices;
    st.counters["virtqs_per_device"] = kVirtqs;
    st.counters["page_kib"] = double(page_kib);
    st.counters["concurrent"] = concurrent;
}

}  // namespace

// BM_DestinationStart/strategy:async/guest_gib:256/devices:4 ...: one start
// per repetition (the 1 TiB sequential start of 4 devices takes ~40 s).
void register_destination() {
    for (core::Strategy s : {core::Strategy::Sequential, core::Strategy::Async}) {
        std::string name = std::string("BM_DestinationStart/strategy:") + devx::strategy_name(s);
        auto* b = benchmark::RegisterBenchmark(name.c_str(), [s](benchmark::State& st) {
            destination_start(st, s);
        });
        b->ArgNames({"guest_gib", "devices", "precreated", "page_kib", "concurrent"});
        const bool async = s == core::Strategy::Async;
        for (long gib : {4, 64, 256, 1024})
            for (long devices : {1, 4}) b->Args({gib, devices, 1, 4, 0});
        for (long gib : {4, 64}) b->Args({gib, 1, 0, 4, 0});  // the start also creates the virtqs
        // A guest on 2 MiB and 1 GiB hugepages (the model's page counts).
        for (long gib : {64, 256})
            for (long page_kib : {2048, 1 << 20}) b->Args({gib, 1, 1, page_kib, 0});
        // A VM's several NICs: serial against concurrent starts (async only:
        // 8 sequential starts of 256 GiB take minutes).
        if (async)
            for (long devices : {1, 2, 4, 8}) {
                if (devices != 1 && devices != 4) b->Args({256, devices, 1, 4, 0});
                b->Args({256, devices, 1, 4, 1});
            }
        b->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
    }
    // The engine's switch that acts on this batch's mix of chains
    // (doc/engine.md, "Heuristics"), off, beside the row above with it on.
    auto* off = benchmark::RegisterBenchmark(
        "BM_DestinationSwitchOff/hand_back_token_waits/strategy:async", [](benchmark::State& st) {
            destination_start(st, core::Strategy::Async, {.hand_back_token_waits = false});
        });
    off->ArgNames({"guest_gib", "devices", "precreated", "page_kib", "concurrent"})->Args({4, 1, 0, 4, 0});
    off->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
}

}  // namespace mlx5async::bench
