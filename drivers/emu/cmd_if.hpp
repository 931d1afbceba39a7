// The firmware command interface, separate from command semantics: a fixed
// number of command slots (max_reg_cmds) and the mlx5_core throttle on
// general-object commands (ceil(max_reg_cmds / 2) in flight). A blocking
// command waits for a throttle token and a slot, holds the slot for its
// modelled latency, then runs its semantics. An async QUERY takes a token
// with try-acquire (EBUSY when full, as mlx5_cmd_exec_cb). The firmware
// thread is the one thread that waits for due times: it completes async
// commands at theirs and signals each blocking caller at its own, as the
// kernel wakes a thread sleeping in its ioctl when the command completes.
// Linux: drivers/net/ethernet/mellanox/mlx5/core/cmd.c (throttle_sem,
// down_trylock -> -EBUSY for callbacks).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "clock.hpp"
#include "pin_pool.hpp"
#include "profile.hpp"
#include "trace.hpp"

namespace mlx5async::emu {

struct CmdDesc {
    uint16_t opcode = 0;
    uint16_t obj_type = 0;
    uint32_t obj_id = 0;
    // Work whose cost scales (memory registration): backing pages the
    // kernel pins or unpins for a umem, translation entries the firmware
    // writes (a umem's MTT, an indirect mkey's KLM).
    uint64_t pages = 0;
    uint64_t entries = 0;
    // CREATE_UMEM: when umem_reg was called. The kernel pins in the caller
    // before it posts the command, so the pinning runs from then, and the
    // emulator's own work on the range happens inside it.
    std::optional<int64_t> called_ns;
};

// What the call returns: err is an errno the API returns (0, ENXIO ...);
// status/syndrome are the PRM values written into the output.
struct CmdOutcome {
    int err = 0;
    uint8_t status = 0;
    uint32_t syndrome = 0;
};

struct CmdTiming {
    int64_t extra_ns = 0;
    bool hang = false;
    int64_t answer_late_ns = 0;  // blocking: executed at its due time, answered this much later
};

// Semantics of one command, run when the command completes. aborted: the
// device closed first (hung or still waiting); the function must not change
// device state then, only report.
using CmdFn = std::function<CmdOutcome(bool aborted)>;

class CommandInterface {
public:
    CommandInterface(const Profile& p, Clock& clock, Trace& trace, uint32_t dev_index);
    ~CommandInterface();
    CommandInterface(const CommandInterface&) = delete;
    CommandInterface& operator=(const CommandInterface&) = delete;

    CmdOutcome run_blocking(const CmdDesc& d, CmdTiming t, CmdFn fn);
    // 0, EBUSY (throttle full) or ENXIO (closed).
    int submit_async(const CmdDesc& d, CmdTiming t, CmdFn fn);
    // A command refused before reaching the firmware (fault-injected EBUSY).
    void record_rejected(const CmdDesc& d, int err);

    // Ends hung and waiting commands (blocking: ENXIO; async: flushed), joins
    // the firmware thread. Idempotent.
    void shutdown();

    // Completes the n earliest-due running commands (ties: submission order)
    // now, without moving the clock; hung commands are not eligible.
    // Returns how many it released.
    size_t complete_next(size_t n);
    // Blocks until at least n commands hold a slot (or the timeout).
    bool wait_running(size_t n, std::chrono::milliseconds timeout);
    // Blocks until at least n commands have completed since creation.
    bool wait_completed(uint64_t n, std::chrono::milliseconds timeout);

    CmdCounters counters() const;
    uint32_t inflight() const;
    // Wakes every waiter (the manual clock's listener).
    void wake();

private:
    struct Pending;
    using PendingPtr = std::shared_ptr<Pending>;

    int64_t latency_ns(const CmdDesc& d, bool pin);
    int64_t due_ns(const CmdDesc& d, int64_t start_ns, int64_t extra_ns);
    PendingPtr admit(const CmdDesc& d, CmdTiming t, CmdFn fn, bool async);
    void grant_slots(bool* wake_fw = nullptr);
    bool reached(const Pending& p) const;
    void finish(Pending& p, const CmdOutcome& o, bool* wake_fw);
    void notify_fw_unlocked(std::unique_lock<std::mutex>& lk, bool wake_fw);
    void fw_loop();
    PendingPtr next_due_async();
    int64_t collect_due_callers(uint32_t& bits);
    void signal(Pending& p);
    uint32_t take_caller_bit();
    void give_caller_bit(uint32_t bit);
    void wake_all_locked();

    const Profile& profile_;
    Clock& clock_;
    PinPool own_pins_;  // a manual clock's: its times are its own
    PinPool& pins_;     // the host's (steady clock) or own_pins_
    Trace& trace_;
    mutable std::mutex mu_;  // everything below
    std::condition_variable cv_;           // state changed: observers (tests)
    std::condition_variable throttle_cv_;  // a throttle token came back
    std::condition_variable fw_cv_;        // the firmware thread's next due time changed
    // Due time the firmware thread sleeps towards (kNever: untimed); kFwAwake
    // while it runs: it rescans before sleeping, so a new command need not wake it.
    int64_t fw_sleep_due_ = kNever;
    std::atomic<int> callers_woken_{0};  // blocking callers signalled, not yet running
    // Blocking callers sleep on it (futex.hpp), each with its bit; moved on
    // under mu_ by whatever may end a caller's wait (signal, complete_next,
    // close, the manual clock), which then wakes the callers' bits.
    std::atomic<uint32_t> callers_word_{0};
    uint32_t caller_bits_free_ = UINT32_MAX;  // bits no blocking caller holds
    // When each translation lane (Timing::mtt_lanes) is free again: the
    // firmware writes the MTT/KLM of at most that many commands at once.
    std::vector<int64_t> lane_free_ns_;
    uint32_t free_slots_;
    uint32_t throttle_free_;
    uint32_t inflight_ = 0;
    uint32_t slots_used_ = 0;
    bool closing_ = false;
    uint64_t seq_ = 0;
    std::mt19937_64 rng_;
    std::deque<PendingPtr> slot_queue_;       // admitted, waiting for a slot (FIFO)
    std::vector<PendingPtr> async_;           // async commands not yet finished
    std::vector<PendingPtr> running_;         // holding a slot
    CmdCounters counters_;
    std::mutex shutdown_mu_;  // serialises shutdown() callers (join once)
    std::jthread fw_;
};

}  // namespace mlx5async::emu
