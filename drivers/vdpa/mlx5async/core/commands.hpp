// The device's firmware commands: its engine (strategy, throttle, command
// slots), the deadline each batch gets, the trace of what each batch was
// for, and the commands left unanswered past their batch. Batches run on
// the device's strand; the trace has its own lock (applications read it),
// held only to append or take spans, never across a batch.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/base/result.hpp"
#include "common/devx/engine.hpp"
#include "config.hpp"

namespace mlx5async::core {

// What a firmware batch is for, as trace spans label it. Suspend and Resume
// keep Op's values (the C API's RTE_PMD_MLX5ASYNC_OP_*).
enum class BatchKind : uint8_t {
    Suspend = 0,   // MODIFY(SUSPEND) + QUERY of RDY virtqs
    Resume = 1,    // MODIFY to RDY (start, resume, re-enable)
    Setup = 2,     // creating virtqs, counters, re-creating objects
    Memory = 3,    // guest-memory mkeys
    DirtyLog = 4,  // the vhost log: its mkey and the virtqs' bitmap fields
    Counters = 5,  // QUERY of virtq counters
    Teardown = 6,  // unregistering memory, destroying objects
    Recovery = 7,  // re-creating a virtq after an error event
    Query = 8,     // live virtq state and indexes (show device, telemetry)
};
const char* batch_kind_name(BatchKind k) noexcept;

enum class Op : uint8_t { Suspend = 0, Resume = 1 };

// Timing of one control operation (the last one of each kind is kept).
struct OpTiming {
    Op op = Op::Suspend;
    uint64_t total_ns = 0;
    uint64_t prepare_ns = 0;
    uint64_t firmware_ns = 0;
    uint64_t vhost_ns = 0;  // filled by the glue (hand-back, dirty log)
    uint32_t queues = 0;
    uint32_t commands = 0;
    uint32_t failed = 0;
    uint32_t peak_inflight = 0;
};

struct CmdSpan {
    uint64_t submit_ns = 0;
    uint64_t end_ns = 0;
    uint16_t opcode = 0;
    uint8_t status = 0xff;
    uint8_t op = 0xff;  // BatchKind
    int16_t queue = -1;
    uint32_t obj_id = 0;
};

class Commands {
public:
    // `switches`: every engine this makes has them (DeviceConfig::engine_switches).
    Commands(const devx::DevxApi& api, const devx::Context& ctx, std::string device_name,
             devx::EngineOptions switches = {});
    ~Commands();

    // A new engine (the first, or another strategy or throttle); Busy while
    // commands of the old one are unanswered (it would not know the slots
    // they hold, and shutting it down waits for them).
    Result<void> make_engine(Strategy s, uint32_t max_inflight, uint32_t threads);
    // One batch: `timeout_ms` per wave of commands it needs (memory_waves),
    // its spans traced, its timing added to `t`.
    devx::BatchResult run(devx::Batch&& b, BatchKind kind, OpTiming* t);
    // The waves of a memory batch: its commands `width` at a time, a umem
    // registration counting once per GiB it pins (a registration's time
    // grows with its pages: 1 TiB is 1024 such, in one umem or in 1 GiB
    // chunks); at least 1.
    static uint64_t memory_waves(const devx::Batch& b, uint32_t width);
    devx::Engine& engine() { return *engine_; }
    // Command latencies and firmware errors of every engine this made
    // (devx::Engine::command_stats); any thread.
    devx::CommandStats command_stats() const;
    // Where the device's commands outside any batch are counted (the guest
    // memory's destroys), merged into command_stats().
    const std::shared_ptr<devx::CallStats>& call_stats() const { return call_stats_; }
    Strategy strategy() const { return strategy_; }
    uint32_t max_inflight() const { return max_inflight_; }
    void set_timeout_ms(uint32_t ms) { timeout_ms_ = ms; }
    std::chrono::milliseconds timeout() const { return std::chrono::milliseconds(timeout_ms_); }
    // Commands answered by nobody yet; any thread (the engine is replaced
    // on the strand only, under engine_mu_).
    unsigned late_commands() const;
    bool drain();  // every late command answered, within timeout()
    void shutdown();  // waits for the late ones (bounded by the kernel's command timeout)

    void trace_enable(bool on);
    std::vector<CmdSpan> trace_read(size_t max);

    // A start's batches may be abandoned: a stop (dev_close, dev_cleanup,
    // the device closing) needs none of what it has not issued yet. While
    // the strand runs between begin_abandonable() and end_abandonable(),
    // abandon() (any thread) makes the running batch issue nothing more
    // (devx::Engine::cut_short: only the commands in flight are waited for)
    // and every later batch return Cancelled; outside, it does nothing.
    void begin_abandonable();
    void end_abandonable();
    void abandon();
    bool abandoned() const;

private:
    void note_unanswered();
    void record_spans(const devx::BatchResult& r, BatchKind kind);

    const devx::DevxApi& api_;
    const devx::Context& ctx_;
    std::string name_;
    const devx::EngineOptions switches_;
    // Protects engine_ against a reader off the strand while it is
    // replaced, and retired_stats_.
    mutable std::mutex engine_mu_;
    std::unique_ptr<devx::Engine> engine_;
    devx::CommandStats retired_stats_;  // of the engines replaced
    const std::shared_ptr<devx::CallStats> call_stats_ = std::make_shared<devx::CallStats>();
    Strategy strategy_ = Strategy::Async;
    uint32_t max_inflight_ = 16;
    uint32_t timeout_ms_ = 2000;
    unsigned unanswered_ = 0;  // late commands at the last count
    mutable std::mutex abandon_mu_;  // protects abandonable_, abandoned_ and their engine cut
    bool abandonable_ = false;
    bool abandoned_ = false;
    std::mutex trace_mu_;      // protects trace_on_, spans_
    bool trace_on_ = false;
    std::deque<CmdSpan> spans_;
    static constexpr size_t kMaxSpans = 1 << 16;
};

}  // namespace mlx5async::core
