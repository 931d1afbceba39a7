// The device core: one emulated or real ConnectX vDPA function, its virtq
// objects and the batched control path. DPDK-free: the PMD glue translates
// vhost events into these calls and hands indexes back to vhost.
//
// Every control operation runs on the device's strand (strand.hpp), in the
// order the calls arrive: a call that needs the answer waits for it, start()
// and the ring-state calls post and return. The queries marked "snapshot"
// read what the strand published after its last job and never wait.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "announcer.hpp"
#include "backend.hpp"
#include "commands.hpp"
#include "common/base/result.hpp"
#include "common/prm/counters.hpp"
#include "config.hpp"
#include "dirty_log.hpp"
#include "guest.hpp"
#include "ledger.hpp"
#include "vq_phase.hpp"

namespace mlx5async::core {

struct VqInfo {
    uint16_t index = 0;
    VqPhase phase = VqPhase::Absent;
    uint8_t fw_state = 0xff;  // PRM state last seen, 0xff none
    uint8_t error_type = 0;
    uint16_t hw_available_index = 0;
    uint16_t hw_used_index = 0;
    uint32_t obj_id = 0;
    uint32_t errors = 0;
    bool unsure = false;  // its last command failed or is unanswered (state may differ)
    // true: the indexes and state were just queried from the device; false:
    // the saved ones (last suspend, or what the last start programmed).
    bool live = false;
    // Frames it sent, as the emulated datapath saw them (0 on hardware).
    uint64_t arp_frames = 0;
    uint64_t announce_frames = 0;
};

class Device {
public:
    // Opens the backend (emulated profile or PCI device through rdma-core),
    // queries caps, allocates PD/UAR/transport objects, and pre-creates
    // `queues` pairs of virtqs when the config asks for it.
    static Result<std::unique_ptr<Device>> open(const DeviceConfig& cfg, std::string name);
    ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    const std::string& name() const;
    std::string backend() const;  // "emu:cx7" / "pci:0000:08:00.2"
    DeviceConfig config() const;  // snapshot: strategy and max_inflight as set now
    uint32_t max_virtqs() const;
    uint64_t features() const;  // virtio features the device offers
    uint16_t port_mtu() const;  // the largest IP packet the port passes (0: unknown)
    bool has_notify_area() const;  // a doorbell page a frontend can map
    // The device announces its VM at each start (announcer.hpp): its SQ
    // was made (devarg announce, on by default).
    bool announces() const;
    // vhost: VHOST_USER_SEND_RARP: the device sends a RARP from `mac` now
    // (nothing without an announcer).
    void frontend_rarp(MacAddr mac);
    std::optional<AnnounceStats> announce_stats() const;  // none without an announcer
    // What the device sent to the network, as the emulator's wire saw it
    // (none on hardware: the port's frames do not come back to the driver).
    std::optional<WireCounts> wire_counts() const;
    struct NotifyArea {
        int fd = -1;          // mmap-able fd (the device context's cmd_fd)
        uint64_t offset = 0;  // of the doorbell page in it
        uint64_t size = 0;
    };
    Result<NotifyArea> notify_area() const;
    // The name the backend knows the device by: its plugin device's
    // (emu=), or the rdma-core device (dev=).
    std::string backend_device() const;

    // vhost: dev_conf. Refuses at once what the device cannot start (a
    // memory table it cannot register, a ring beyond its virtqs: nothing is
    // started), else posts the start and returns: the memory registered,
    // then one batch brings every enabled ring to RDY (a single MODIFY per
    // existing object, INIT/SUSPEND -> RDY + changed fields; CREATE + MODIFY
    // otherwise; destroy+create only when the ring size changed or the
    // device cannot resume), each started ring kicked once (a kick the guest
    // made before its ring ran is not lost). A ring the device cannot use is
    // refused by name and the others start. `done` runs on the strand with
    // the start's result; the ledger's current start record gets its phases
    // (and a failure). The fds in `g` are duplicated here: the caller may
    // close its own.
    using StartDone = std::function<void(const Result<void>&)>;
    Result<void> start(const GuestConfig& g, StartDone done);
    // start() and wait for its result.
    Result<void> configure(const GuestConfig& g);
    // vhost: dev_close. One pipelined batch MODIFY->SUSPEND + QUERY over every
    // RDY virtq; returns each ring's indexes (queried, or last known-good when
    // the device failed to answer for that ring; the error is logged and
    // returned only after every ring has its indexes).
    Result<void> close(std::vector<RingIndexes>& out);
    // vhost: dev_cleanup. Forget guest memory: virtqs stop naming its mkey,
    // then mkeys and umems are destroyed; virtq objects stay.
    void cleanup();
    // vhost: set_vring_state. Recorded; consecutive changes are applied as
    // one batch at flush() (the glue flushes at the end of a message burst).
    void set_vring_state(uint16_t ring, bool enable);
    // vhost: a ring's configuration as vhost holds it when the ring is
    // enabled after dev_conf (the frontend may have set its addresses, size
    // or base since). A ring that is not running starts from it at the next
    // flush: from its indexes when the ring has not run this session or the
    // frontend set its base since (frontend_set_base), else from the
    // device's saved ones; a running ring is left alone.
    void update_vring(const VringConfig& v);
    // vhost: the frontend set `ring`'s base (SET_VRING_BASE) after
    // dev_conf: the ring's next start is from vhost's indexes. Only the
    // message tells: vhost's copy read at an enable may be older than the
    // device's stop (a disable's suspend and hand-back run after the burst),
    // so indexes that differ from the device's say nothing.
    void frontend_set_base(uint16_t ring);
    // The ring's interrupt eventfd (vhost's callfd; < 0: none).
    void set_callfd(uint16_t ring, int fd);
    // The ring's kick eventfd as vhost holds it now (a SET_VRING_KICK may
    // have replaced it on a running ring): the kick relay follows it.
    void set_kickfd(uint16_t ring, int fd);
    // Interrupts: whether the virtqs raise them, and what the relay did.
    struct IrqStats {
        bool enabled = false;
        uint64_t events = 0, completions = 0, calls = 0, no_callfd = 0;
        uint64_t callfd_full = 0;  // writes a callfd would have blocked on: dropped
    };
    IrqStats irq_stats() const;  // the relay's own counters: never waits
    uint64_t irq_calls(uint16_t ring) const;
    Result<void> flush_vring_states(std::vector<RingIndexes>& disabled);
    // vhost: set_features. LOG_ALL on/off: dirty-bitmap params + dump enable
    // for every virtq in one batch.
    // A no-op while neither `on` nor the log changed.
    Result<void> set_dirty_logging(bool on, const DirtyLog& log);
    bool dirty_logging() const;  // snapshot

    // Application API (include/mlx5async/rte_pmd_mlx5async.h).
    Result<void> suspend_all();
    Result<void> resume_all();
    std::vector<VqInfo> vq_info() const;  // snapshot
    // vq_info() with every RDY virtq's state and indexes queried from the
    // device (one QUERY batch): what a RDY ring has processed so far. A
    // virtq that does not answer keeps its saved values (live = false); so
    // does every virtq while the strand is busy for longer than `wait`.
    std::vector<VqInfo> query_vq_info(std::chrono::milliseconds wait = std::chrono::milliseconds(1000));
    // The downtime ledger (ledger.hpp); the glue marks its own phases.
    Ledger& ledger();
    const Ledger& ledger() const;
    OpTiming last_timing(Op op) const;  // snapshot
    void set_vhost_ns(Op op, uint64_t ns);
    Result<void> set_strategy(Strategy s);
    Result<void> set_max_inflight(uint32_t n);
    // The deadline of later control batches (the timeout_ms devarg), 1..600000.
    Result<void> set_timeout_ms(uint32_t ms);
    void trace_enable(bool on);
    std::vector<CmdSpan> trace_read(size_t max);
    Result<prm::VirtqCounters> counters(uint16_t ring);
    // Commands the device has not answered after their batch gave up on
    // them: each holds one of `slots` command slots until it completes or
    // the kernel's command timeout fails it; `unsure_virtqs` may run in
    // another state than the driver last set (reconcile()).
    struct CommandHealth {
        uint32_t unanswered = 0;
        uint32_t slots = 0;
        uint32_t unsure_virtqs = 0;
    };
    CommandHealth command_health() const;  // snapshot
    // Latency histograms and firmware errors per command type, of every
    // batch the device ran since probe (Commands::command_stats).
    devx::CommandStats command_stats() const;
    // Tests: waits until `n` device error events have been handled in total.
    bool wait_events_handled(uint64_t n, std::chrono::milliseconds timeout);
    // Jobs queued or running on the strand (tests: a start behind another).
    size_t backlog() const;

    struct Impl;

private:
    explicit Device(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace mlx5async::core
