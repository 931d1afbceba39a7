// Device::Impl: one device core as owners, each in its own file and each
// guarding its own state: the transport objects (transport.hpp), the
// firmware commands (commands.hpp), the virtq table (virtq_table.hpp),
// guest memory (guest_memory.hpp), the dirty log (dirty_log.hpp), event QPs
// and interrupts (interrupts.hpp). The operations that combine them
// (device_ops.cpp, device_start.cpp, control_path.cpp, virtq_objects.cpp,
// virtq_events.cpp) run as jobs on the device's strand, one at a time in
// arrival order: nothing below is locked but what says so. Off the strand,
// readers (telemetry, statistics, the application's queries) take what the
// strand published after its last job (`Published`), never a batch's lock.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "announcer.hpp"
#include "backend.hpp"
#include "commands.hpp"
#include "common/devx/raii.hpp"
#include "common/prm/caps.hpp"
#include "common/prm/virtq.hpp"
#include "deferred_release.hpp"
#include "device.hpp"
#include "dirty_log.hpp"
#include "error_recovery.hpp"
#include "guest_memory.hpp"
#include "interrupts.hpp"
#include "kick_relay.hpp"
#include "strand.hpp"
#include "transport.hpp"
#include "virtq_table.hpp"

namespace mlx5async::core {

// Virtq objects in the making (virtq_objects.cpp): the rings of one ring
// size, and where their commands sit in the batches they were added to.
// A ring's umem registrations and counters CREATE, one chain: its entry
// and each one's step (-1: the ring has it already).
struct RingResources {
    uint16_t ring = 0;
    size_t entry = 0;
    std::array<int, 3> umem_step{-1, -1, -1};
    int counters_step = -1;
};

struct ObjectBuild {
    uint16_t size = 0;
    std::vector<uint16_t> rings;
    std::vector<RingResources> resources;  // rings that lack some
    size_t creates_at = 0;                 // first CREATE in the batch
    EventQp::Build eqps;  // the rings' event QPs (interrupts on), in the same batch
};

// What the strand published after its last job, for readers off it. Its
// lock guards only these copies and is never held across a batch.
struct Published {
    mutable std::mutex mu;
    std::condition_variable cv;  // recovery_done moved
    std::vector<VqInfo> vqs;     // saved state of every virtq
    std::array<OpTiming, 2> last{};  // the last suspend and resume (the glue adds vhost_ns)
    Strategy strategy = Strategy::Async;
    uint32_t max_inflight = 0;
    bool dirty_logging = false;
    uint32_t unsure = 0;
    uint64_t recovery_done = 0;  // error events handled (tests wait on it)
};

struct Device::Impl {
    std::string name;
    DeviceConfig cfg;  // strategy and max_inflight as set; others read pub's copy
    const devx::DevxApi* api = nullptr;
    std::unique_ptr<PluginDevice> plugin_device;  // emu= devices only; outlives ctx
    devx::Context ctx;
    prm::GeneralCaps gcaps;
    prm::VirtioEmulationCaps vcaps;
    uint16_t port_mtu = 0;  // the largest IP packet the port passes (0: unknown)
    MacAddr vport_mac = 0;  // the NIC vport's permanent address (0: none)
    Transport transport;
    std::unique_ptr<KickRelay> kick_relay;  // kickfds -> the doorbell page (null without one)
    Interrupts irqs;
    std::unique_ptr<Announcer> announcer;  // null: announce=off, or the device could not make its SQ
    std::unique_ptr<Commands> cmds;
    std::unique_ptr<GuestMemory> mem;
    std::unique_ptr<DirtyLogging> dirty;
    // Strand: registrations no virtq names whose destroy the device refused
    // (objects kept with their handles), tried again at every release.
    std::vector<MemRegistration> unreleased;
    VirtqTable vqs;  // index = virtq number, size = max virtqs
    devx::EventChannel events;                // OBJECT_CHANGE per virtq (cookie = ring)
    std::unique_ptr<ErrorRecovery> recovery;  // its thread posts to the strand
    GuestConfig guest;  // the last start's view of the guest
    bool guest_valid = false;
    // Virtq umem memory handed to a registration that never answered: kept
    // until the device goes (the kernel may still pin it).
    std::vector<devx::PageBuffer> late_umem_mem;
    Ledger ledger;  // own lock: the glue, the strand and the notifier thread mark it
    Published pub;
    // Old memory and log registrations, taken out on the strand and
    // destroyed on this thread once no virtq names them. Made before the
    // engine, whose workers request it (a late answer); ~Device stops its
    // thread first, the object goes after the engine's workers.
    std::unique_ptr<DeferredRelease> releaser;
    std::atomic<uint64_t> stops{0};  // stops posted (stop_requested): a start posted before one is skipped
    std::unique_ptr<Strand> strand;  // created first at open, stopped before the parts go

    // device.cpp
    Result<void> query_caps();
    void query_vport();  // port_mtu, vport_mac
    Result<void> open_announcer();
    void publish();  // on the strand, after every job
    void record_timing(const OpTiming& t);
    VqInfo saved_info(const Vq& q) const;

    // virtq_objects.cpp: the virtqs' objects (as one shared batch step each,
    // so device_start.cpp can run them beside the memory's).
    Result<void> ensure_objects(std::span<const uint16_t> rings, uint16_t size);
    Result<ObjectBuild> plan_objects(std::span<const uint16_t> rings, uint16_t size);
    Result<void> add_virtq_resources(ObjectBuild& o, devx::Batch& b);  // umems, counters
    Result<void> take_virtq_resources(ObjectBuild& o, devx::BatchResult& r);
    Result<void> add_virtq_creates(ObjectBuild& o, devx::Batch& b);
    Result<void> take_virtq_creates(ObjectBuild& o, devx::BatchResult& r);
    Result<void> destroy_virtqs(devx::Batch&& destroys);
    // The frontend left: the objects it made beyond the probe's go.
    void release_frontend_objects();
    prm::VirtqAttr base_attr(const Vq& vq, uint16_t size) const;
    // The ring layout the guest negotiated (RING_PACKED), split before any.
    prm::VirtqType ring_type() const {
        return guest.features & vfeat::RING_PACKED ? prm::VirtqType::PACKED : prm::VirtqType::SPLIT;
    }
    // Bytes of a virtq's umem n for rings of `size` (at least one).
    uint64_t umem_bytes(int n, uint16_t size) const;
    // Umem n of the virtq is missing or too small for this ring size.
    bool needs_umem(const Vq& vq, int n, uint16_t size) const;

    // virtq_events.cpp
    Result<void> start_events();
    void on_virtq_event(uint16_t ring);

    // control_path.cpp
    Result<void> reconcile();
    Result<void> still_unsure(const char* what) const;
    void learn(std::span<const uint16_t> rings);
    Result<void> suspend_rings(std::span<const uint16_t> rings);
    Result<void> stop_rings(std::span<const uint16_t> rings);  // suspend_rings, a second round
    Result<void> resume_rings(std::span<const uint16_t> rings, bool vhost_indexes);
    prm::VirtqAttr start_attr(const Vq& vq, const VringConfig* vr, bool vhost_indexes) const;
    void add_mkey_repoints(devx::Batch& b, std::vector<prm::VirtqAttr>& sent,
                           std::span<const uint16_t> starting);
    std::vector<VqInfo> query_live();

    // device_start.cpp: a start, configure() tried up to cfg.start_attempts
    // times in all while it fails with what the firmware may not repeat;
    // dev_conf's work before its rings start, in shared batches.
    // `memory_ok`: the table is the registered one now.
    Result<void> start(const GuestConfig& g, uint64_t seq);
    using RingGroups = std::vector<std::pair<uint16_t, std::vector<uint16_t>>>;  // (size, rings)
    Result<void> prepare_start(const std::vector<MemRegion>& table, const RingGroups& groups,
                               bool& memory_ok, uint64_t seq);
    // The shared batches up to the direct mkeys; the virtqs' error returned,
    // the memory's in `mem_err` (`m` null: virtqs only, as ensure_objects).
    Result<void> make_objects(std::vector<ObjectBuild>& objs, MemoryBuild* m, Result<void>& mem_err,
                              devx::BatchResult& res);

    // device_ops.cpp: the operations vhost and applications ask for.
    Result<void> refuse(const GuestConfig& g) const;  // what dev_conf refuses at once
    Result<void> configure(const GuestConfig& g, uint64_t seq);
    void begin_session(const GuestConfig& g);
    Result<void> skip_start(const GuestConfig& g, const char* why);
    Result<void> abandoned_start(std::span<const uint16_t> rings) const;
    // Off the strand, before a stop is posted: a start queued is superseded,
    // a running one abandoned (Commands::abandon).
    void stop_requested();
    Result<void> close(std::vector<RingIndexes>& out);
    void cleanup();
    Result<void> flush_vring_states(std::vector<RingIndexes>& disabled);
    Result<void> set_dirty_logging(bool on, const DirtyLog& log);
    // Strand: destroys every registration no virtq names now (the ones the
    // device refused before included); what it refuses again stays.
    void release_unreferenced();
    // Strand: what a failed registration made (a memory table's chunks, a
    // log's umem). A command of its batch that is still unanswered may name
    // it, and the device refuses to destroy what is named: it then waits in
    // `unreleased` for the deferred release, which the engine wakes at each
    // late answer (EngineOptions::on_late_answer). Destroyed now otherwise,
    // what the device refuses kept the same way.
    void release_failed(MemRegistration made);
    Result<void> suspend_all();
    Result<void> resume_all();
    Result<prm::VirtqCounters> counters(uint16_t ring);
    void update_vring(const VringConfig& v);
    void unregister_memory();
    // Retired memory and log registrations no virtq names any more, taken
    // out (the caller destroys them).
    std::vector<MemRegistration> take_unreferenced();
    void kick_started(std::span<const uint16_t> rings);
};

uint64_t steady_ns();

// The first failure of two: `earlier` before `later`.
inline Result<void> first_error(Result<void> earlier, Result<void> later) {
    return earlier ? later : earlier;
}

}  // namespace mlx5async::core
