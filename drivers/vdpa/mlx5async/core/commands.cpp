#include "commands.hpp"

#include <algorithm>

#include "common/base/log_sink.hpp"
#include "common/base/steady_clock.hpp"

namespace mlx5async::core {

const char* batch_kind_name(BatchKind k) noexcept {
    switch (k) {
    case BatchKind::Suspend: return "suspend";
    case BatchKind::Resume: return "resume";
    case BatchKind::Setup: return "setup";
    case BatchKind::Memory: return "memory";
    case BatchKind::DirtyLog: return "dirty_log";
    case BatchKind::Counters: return "counters";
    case BatchKind::Teardown: return "teardown";
    case BatchKind::Recovery: return "recovery";
    case BatchKind::Query: return "query";
    }
    return "other";
}

Commands::Commands(const devx::DevxApi& api, const devx::Context& ctx, std::string device_name,
                   devx::EngineOptions switches)
    : api_(api), ctx_(ctx), name_(std::move(device_name)), switches_(std::move(switches)) {}

Commands::~Commands() { shutdown(); }

Result<void> Commands::make_engine(Strategy s, uint32_t max_inflight, uint32_t threads) {
    devx::EngineOptions o = switches_;
    o.strategy = s;
    o.max_inflight = max_inflight;
    o.workers = s == Strategy::Threads ? threads : 0;
    if (engine_)
        if (unsigned late = engine_->late_commands())
            return fail(Errc::Busy, std::to_string(late) +
                                        " firmware commands are unanswered: the engine changes once "
                                        "they completed or failed");
    auto e = devx::Engine::create(api_, ctx_.get(), o);
    MLX5A_CHECK(e);
    std::unique_ptr<devx::Engine> old;
    {
        std::lock_guard lk(engine_mu_);
        old = std::exchange(engine_, std::move(*e));
        if (old) retired_stats_.merge(old->command_stats());
    }
    if (old) old->shutdown();
    strategy_ = s;
    max_inflight_ = max_inflight;
    return {};
}

devx::CommandStats Commands::command_stats() const {
    std::lock_guard lk(engine_mu_);
    devx::CommandStats s = retired_stats_;
    if (engine_) s.merge(engine_->command_stats());
    s.merge(call_stats_->snapshot());
    return s;
}

uint64_t Commands::memory_waves(const devx::Batch& b, uint32_t width) {
    constexpr uint64_t kGiB = 1ull << 30;
    uint64_t commands = 0;
    for (const devx::Entry& e : b.entries())
        for (const devx::Command& c : e.steps)
            commands += c.kind == devx::CmdKind::RegUmem ? std::max<uint64_t>(1, (c.umem_size + kGiB - 1) / kGiB) : 1;
    const uint64_t w = std::max<uint32_t>(1, width);
    return std::max<uint64_t>(1, (commands + w - 1) / w);
}

devx::BatchResult Commands::run(devx::Batch&& b, BatchKind kind, OpTiming* t) {
    uint64_t waves = 1;
    if (kind == BatchKind::Memory)
        waves = memory_waves(b, strategy_ == Strategy::Sequential ? 1 : max_inflight_);
    b.set_label(uint8_t(kind));
    const int64_t t0 = steady_now_ns();
    devx::BatchResult r = engine_->run(std::move(b), std::chrono::milliseconds(timeout_ms_ * waves));
    const int64_t t1 = steady_now_ns();
    if (t) {
        t->firmware_ns += uint64_t(t1 - t0);
        t->commands += r.done + r.failed + r.timed_out;
        t->failed += r.failed + r.timed_out;
        t->peak_inflight = std::max<uint32_t>(t->peak_inflight, r.peak_inflight);
    }
    record_spans(r, kind);
    if (r.timed_out || unanswered_) note_unanswered();
    return r;
}

unsigned Commands::late_commands() const {
    std::lock_guard lk(engine_mu_);
    return engine_ ? engine_->late_commands() : 0;
}

bool Commands::drain() {
    return engine_->drain(std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_));
}

void Commands::shutdown() {
    if (!engine_) return;
    // The objects go after their commands: a hung one is waited for until
    // the device answers or the kernel's command timeout fails it.
    if (unsigned late = engine_->late_commands())
        logf(LogLevel::Warning,
             "%s: closing with %u firmware commands unanswered: waiting for them (bounded by "
             "the kernel's command timeout)",
             name_.c_str(), late);
    engine_->shutdown();
    std::lock_guard lk(engine_mu_);
    engine_.reset();
}

// Logs when commands stay unanswered past their batch, and when the last
// one was answered: each holds a command slot, so enough of them starve
// every later batch.
void Commands::note_unanswered() {
    const unsigned late = engine_->late_commands();
    if (late > unanswered_)
        logf(LogLevel::Warning,
             "%s: %u firmware commands outlived their batch's deadline (each one still unanswered "
             "holds one of %u command slots until the device answers or the kernel's command "
             "timeout fails it)",
             name_.c_str(), late, max_inflight_);
    else if (late == 0 && unanswered_)
        logf(LogLevel::Info, "%s: every late firmware command answered", name_.c_str());
    unanswered_ = late;
}

void Commands::record_spans(const devx::BatchResult& r, BatchKind kind) {
    std::lock_guard lk(trace_mu_);
    if (!trace_on_) return;
    for (const auto& e : r.entries)
        for (const auto& s : e.steps) {
            if (s.state == devx::StepState::Queued || s.state == devx::StepState::Cancelled)
                continue;
            CmdSpan sp;
            sp.submit_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        s.issued_at.time_since_epoch())
                                        .count());
            sp.end_ns = sp.submit_ns + uint64_t(s.latency.count());
            sp.opcode = s.opcode;
            sp.status = s.state == devx::StepState::TimedOut ? 0xff : s.status;
            sp.op = uint8_t(kind);
            sp.queue = int16_t(s.queue);
            sp.obj_id = s.obj_id;
            spans_.push_back(sp);
            if (spans_.size() > kMaxSpans) spans_.pop_front();
        }
}

void Commands::begin_abandonable() {
    std::lock_guard lk(abandon_mu_);
    abandonable_ = true;
    abandoned_ = false;
}

void Commands::end_abandonable() {
    std::lock_guard lk(abandon_mu_);
    if (abandoned_ && engine_) engine_->cut_short(false);
    abandonable_ = abandoned_ = false;
}

void Commands::abandon() {
    std::lock_guard lk(abandon_mu_);
    if (!abandonable_ || abandoned_) return;
    abandoned_ = true;
    std::lock_guard ek(engine_mu_);  // the engine is replaced on the strand only, under it
    if (engine_) engine_->cut_short(true);
}

bool Commands::abandoned() const {
    std::lock_guard lk(abandon_mu_);
    return abandoned_;
}

void Commands::trace_enable(bool on) {
    std::lock_guard lk(trace_mu_);
    trace_on_ = on;
}

std::vector<CmdSpan> Commands::trace_read(size_t max) {
    std::lock_guard lk(trace_mu_);
    size_t n = std::min(max, spans_.size());
    std::vector<CmdSpan> v(spans_.begin(), spans_.begin() + n);
    spans_.erase(spans_.begin(), spans_.begin() + n);
    return v;
}

}  // namespace mlx5async::core
