#include "trace_observer.hpp"

#include <array>

#include "core/commands.hpp"
#include "trace_points.h"

namespace mlx5async::pmd {
namespace {

// cmd_type_name() of every type, made once: an event costs no allocation.
const std::array<std::string, devx::kCmdTypes>& type_names() {
    static const auto names = [] {
        std::array<std::string, devx::kCmdTypes> n;
        for (size_t i = 0; i < n.size(); i++) n[i] = devx::cmd_type_name(devx::CmdType::at(i));
        return n;
    }();
    return names;
}

class TraceObserver final : public devx::CommandObserver {
public:
    explicit TraceObserver(std::string dev) : dev_(std::move(dev)) {}

    void batch_submitted(uint8_t label, size_t entries, size_t steps) noexcept override {
        mlx5a_trace_batch_submit(dev_.c_str(), batch(label), uint32_t(entries), uint32_t(steps));
    }
    void batch_returned(uint8_t label, const devx::BatchResult& r) noexcept override {
        mlx5a_trace_batch_return(dev_.c_str(), batch(label), r.done, r.failed, r.timed_out,
                                 uint64_t(r.elapsed.count()));
    }
    void command_issued(const devx::Command& c) noexcept override {
        mlx5a_trace_cmd_issue(dev_.c_str(), type_names()[c.type.index()].c_str(), c.opcode, c.queue,
                              c.obj_id);
    }
    void command_completed(const devx::Command& c, uint8_t status, uint32_t syndrome, int err,
                           std::chrono::nanoseconds latency) noexcept override {
        mlx5a_trace_cmd_complete(dev_.c_str(), type_names()[c.type.index()].c_str(), c.opcode,
                                 c.queue, c.obj_id, status, syndrome, err, uint64_t(latency.count()));
    }

private:
    static const char* batch(uint8_t label) { return core::batch_kind_name(core::BatchKind(label)); }

    const std::string dev_;
};

}  // namespace

std::shared_ptr<devx::CommandObserver> make_trace_observer(std::string dev) {
    (void)type_names();  // built here, not on the first command's thread
    return std::make_shared<TraceObserver>(std::move(dev));
}

core::Ledger::PhaseObserver make_ledger_tracer(std::string dev) {
    return [dev = std::move(dev)](core::LedgerPhase p, uint64_t seq, const core::LedgerStamp& at) {
        mlx5a_trace_ledger_phase(dev.c_str(), core::ledger_phase_name(p), seq, at.mono_ns, at.wall_ns);
    };
}

}  // namespace mlx5async::pmd
