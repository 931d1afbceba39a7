// Device::Impl: what one device core holds, and which file writes what:
// device.cpp the resources opened once (backend, PD, TIS, relays, engine,
// caps) and the virtq objects; control_path.cpp the batched operations and
// their timing and trace; guest_memory.cpp the memory registrations;
// device_ops.cpp the vhost-facing state (guest view, dirty log). The virtqs'
// phase is VirtqTable's alone.
#pragma once

#include <array>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/devx/engine.hpp"
#include "common/devx/raii.hpp"
#include "common/prm/caps.hpp"
#include "common/prm/mkey.hpp"
#include "common/prm/virtq.hpp"
#include "backend.hpp"
#include "deferred_release.hpp"
#include "device.hpp"
#include "error_recovery.hpp"
#include "event_qp.hpp"
#include "guest_memory.hpp"
#include "irq_relay.hpp"
#include "kick_relay.hpp"
#include "virtq_table.hpp"

namespace mlx5async::core {

// The VAR doorbell page (host notifiers): owned through the DevxApi table.
struct VarDeleter {
    const devx::DevxApi* api = nullptr;
    void operator()(mlx5dv_var* v) const noexcept {
        if (v && api) api->free_var(v);
    }
};
using VarPtr = std::unique_ptr<mlx5dv_var, VarDeleter>;

// The vhost dirty log while LOG_ALL is on (set_dirty_logging writes it).
struct DirtyLogging {
    bool on = false;
    DirtyLog log;
    MemRegistration mem;  // the vhost log as umem + mkey: dirty_bitmap_mkey
    std::vector<MemRegistration> retired;  // earlier logs some virtq may still name
};

// Command spans while tracing is on (rte_pmd_mlx5async_trace_*), bounded.
struct CommandTrace {
    bool on = false;
    std::deque<CmdSpan> spans;
    static constexpr size_t kMax = 1 << 16;
};

// Virtq objects in the making (device.cpp): the rings of one ring size,
// and where their commands sit in the batches they were added to.
struct ObjectBuild {
    uint16_t size = 0;
    std::vector<uint16_t> rings;
    std::vector<std::pair<uint16_t, int>> umem_of;  // per registration: (ring, umem number)
    size_t umems_at = 0, counters_at = 0, counters = 0, creates_at = 0;  // first entry, count
};

// A memory table in the making (guest_memory.cpp): its chunks, then their
// umems and direct mkeys, then the indirect mkey over them.
struct MemoryBuild {
    MemRegistration reg;
    std::vector<MemChunk> chunks;
    std::vector<prm::MkeyAttr> attrs;  // the chunks' direct mkeys
    std::vector<uint32_t> mkeys;       // and their values, once created
    uint32_t hole = 0;                 // the null mkey, for tables with holes
    size_t umems_at = 0, mkeys_at = 0;  // first entry in their batches
    size_t chains = 1;                  // umem entries (add_memory_umems)
    devx::StepResult& umem_step(devx::BatchResult& res, size_t chunk) const;
};

struct Device::Impl {
    std::string name;
    DeviceConfig cfg;
    const devx::DevxApi* api = nullptr;
    std::unique_ptr<EmulatorHooks> emulator;  // emulated devices only; outlives ctx
    devx::Context ctx;
    devx::Pd pd;
    devx::DevxObj td;   // transport domain of the TIS
    devx::DevxObj tis;  // the TX virtqs' tisn_or_qpn (as DPDK's mlx5 vDPA)
    devx::Uar uar;  // CQ arm doorbells of the event QPs (event_mode irq)
    uint32_t eqn = 0;  // completion EQ the event CQs report to
    bool irq = false;  // interrupts on: virtqs in QP event mode
    VarPtr var;  // doorbell page a frontend can map (null when unavailable)
    std::unique_ptr<KickRelay> kick_relay;  // kickfds -> var (null without var)
    std::unique_ptr<IrqRelay> irq_relay;    // event CQs -> callfds (null without irq)
    prm::GeneralCaps gcaps;
    prm::VirtioEmulationCaps vcaps;
    uint16_t port_mtu = 0;  // the largest IP packet the port passes (0: unknown)
    std::unique_ptr<devx::Engine> engine;
    devx::EventChannel events;                // OBJECT_CHANGE per virtq (cookie = ring)
    std::unique_ptr<ErrorRecovery> recovery;  // its thread; stopped first on close

    mutable std::mutex mu;  // protects everything below (ops are serialised)
    VirtqTable vqs;         // index = virtq number, size = max virtqs
    GuestConfig guest;      // last dev_conf's view
    bool guest_valid = false;
    GuestMemory mem;        // umems + mkeys of the memory table (guest_memory.cpp)
    DirtyLogging dirty;     // device_ops.cpp (set_dirty_logging)
    std::array<OpTiming, 2> last{};  // control_path.cpp
    Ledger ledger;  // own lock: the host-notifier thread marks it too
    unsigned unanswered = 0;  // late commands at the last count (note_unanswered)
    CommandTrace trace;     // control_path.cpp (run)
    // Old memory and log registrations, destroyed after the dev_conf that
    // replaced them returned (takes mu; stopped first at close).
    std::unique_ptr<DeferredRelease> releaser;
    // Virtq umem memory handed to a registration that never answered: kept
    // until the device goes (the kernel may still pin it).
    std::vector<devx::PageBuffer> late_umem_mem;

    // device.cpp
    Result<void> query_caps();
    void query_port_mtu();
    Result<void> make_transport();
    Result<void> make_engine(Strategy s, uint32_t max_inflight);
    Result<void> setup_interrupts();
    Result<void> ensure_event_qps(std::span<const uint16_t> rings, uint16_t size);
    Result<void> ensure_objects(std::span<const uint16_t> rings, uint16_t size);
    // ensure_objects in steps, each adding its commands to a batch the
    // caller may share with other work, then taking their results.
    Result<ObjectBuild> plan_objects(std::span<const uint16_t> rings, uint16_t size);
    Result<void> add_virtq_resources(ObjectBuild& o, devx::Batch& b);  // umems, counters
    Result<void> take_virtq_resources(ObjectBuild& o, devx::BatchResult& r);
    Result<void> add_virtq_creates(ObjectBuild& o, devx::Batch& b);
    Result<void> take_virtq_creates(ObjectBuild& o, devx::BatchResult& r);
    Result<void> destroy_virtqs(devx::Batch&& destroys);
    prm::VirtqAttr base_attr(const Vq& vq, uint16_t size) const;
    Result<void> start_events();
    void on_virtq_event(uint16_t ring);

    // control_path.cpp
    devx::BatchResult run(devx::Batch&& b, BatchKind kind, OpTiming* t);
    void record_spans(const devx::BatchResult& r, BatchKind kind);
    void note_unanswered();
    Result<void> reconcile();
    void learn(Vq& vq, const prm::VirtqAttr& queried);
    Result<void> still_unsure(const char* what) const;
    Result<void> suspend_rings(std::span<const uint16_t> rings);
    Result<void> resume_rings(std::span<const uint16_t> rings, bool vhost_indexes);
    prm::VirtqAttr start_attr(const Vq& vq, const VringConfig* vr, bool vhost_indexes) const;

    // guest_memory.cpp
    // A table's registration in steps, each adding its commands to a batch
    // (prepare_start runs them): chunk umems, direct mkeys, indirect mkey.
    Result<MemoryBuild> plan_memory(std::vector<MemRegion> regions);
    void add_memory_umems(MemoryBuild& m, devx::Batch& b);
    Result<void> take_memory_umems(MemoryBuild& m, devx::BatchResult& r);
    Result<void> add_memory_mkeys(MemoryBuild& m, devx::Batch& b);
    Result<void> take_memory_mkeys(MemoryBuild& m, devx::BatchResult& r);
    Result<MemRegistration> finish_memory(MemoryBuild& m);  // the indirect mkey
    void commit_memory(MemRegistration next);  // current; the old one retired
    // device_start.cpp: dev_conf's work before its rings start, in shared
    // batches. `memory_ok`: the table is the registered one now.
    using RingGroups = std::vector<std::pair<uint16_t, std::vector<uint16_t>>>;  // (size, rings)
    Result<void> prepare_start(const std::vector<MemRegion>& table, const RingGroups& groups,
                               bool& memory_ok);
    // The shared batches up to the direct mkeys; the virtqs' error returned,
    // the memory's in `mem_err` (`m` null: virtqs only, as ensure_objects).
    Result<void> make_objects(std::vector<ObjectBuild>& objs, MemoryBuild* m, Result<void>& mem_err);
    Result<uint32_t> create_mkey(const prm::MkeyAttr& a, devx::DevxObj& obj, BatchKind kind);
    Result<uint32_t> null_mkey();
    void add_mkey_repoints(devx::Batch& b, std::vector<prm::VirtqAttr>& sent,
                           std::span<const uint16_t> starting);
    // Retired memory and log registrations no virtq names any more, taken
    // out (the caller destroys them, with or without mu).
    std::vector<MemRegistration> take_unreferenced();
    void release_retired_memory();  // destroys those now, under mu
    void unregister_memory();
};

uint64_t steady_ns();

// The first failure of two: `earlier` before `later`.
inline Result<void> first_error(Result<void> earlier, Result<void> later) {
    return earlier ? later : earlier;
}

}  // namespace mlx5async::core
