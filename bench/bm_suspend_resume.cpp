// Suspend (MODIFY->SUSPEND then QUERY, per queue) and resume (MODIFY->RDY)
// of N virtqs on the emulator's default timing profile, for each strategy.
// Counters: ideal_ms (DESIGN: ceil(N/T)*(Lm+Lq) resp. ceil(N/T)*Lm with the
// profile's latencies and T = inflight), measured_ms (the median batch of
// the repetition) and mean_ms, measured_over_ideal (median/ideal), cmds,
// peak_inflight. The sequential and threads baselines run in the same binary.
// BM_Heuristics: the async engine with each heuristic of EngineOptions off,
// beside all on (tools/bench_heuristics.py makes out/bench/heuristics.json).
#include <benchmark/benchmark.h>

#include <sched.h>
#include <sys/sysinfo.h>

#include <atomic>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "bench_common.hpp"
#include "common/devx/engine.hpp"
#include "drivers/emu/emu.hpp"
#include "testkit/emu_virtqs.hpp"

namespace mlx5async::bench {
namespace {

using devx::BatchResult;
using devx::Engine;
using devx::Strategy;
using namespace std::chrono_literals;

constexpr auto kRunTimeout = 60s;

enum class Op { Suspend, Resume };

// One emulated device with N ready virtqs and an engine of one strategy.
struct Rig {
    std::string name;
    std::unique_ptr<testing::ReadyVirtqs> rv;
    std::unique_ptr<Engine> eng;
    emu::Profile profile;

    ~Rig() {
        if (eng) eng->shutdown();
        eng.reset();
        rv.reset();
        if (!name.empty()) (void)emu::destroy_device(name);
    }
    devx::Batch batch(Op op) const {
        devx::Batch b;
        for (size_t q = 0; q < rv->vqs.size(); ++q) {
            if (op == Op::Suspend)
                b.add_suspend(rv->vqs[q], int(q));
            else
                b.add_resume(rv->vqs[q], int(q));
        }
        return b;
    }
};

// Creates the engine on a thread that may use every CPU, as a DPDK
// application's probe may run, while the batches run on the calling thread
// (one CPU under tools/bench): the case EngineOptions::workers_follow_caller
// is for.
Result<std::unique_ptr<Engine>> create_on_every_cpu(ibv_context* ctx, devx::EngineOptions opt) {
    std::optional<Result<std::unique_ptr<Engine>>> eng;
    std::thread([&] {
        cpu_set_t all;
        CPU_ZERO(&all);
        for (int c = 0; c < ::get_nprocs_conf() && c < CPU_SETSIZE; ++c) CPU_SET(c, &all);
        (void)::sched_setaffinity(0, sizeof all, &all);  // the kernel keeps the ones allowed
        eng.emplace(Engine::create(emu::api(), ctx, std::move(opt)));
    }).join();
    return std::move(*eng);
}

std::unique_ptr<Rig> make_rig(benchmark::State& st, devx::EngineOptions opt, unsigned n,
                              const std::string& spec = profile_spec(), bool wide_creator = false) {
    static std::atomic<int> seq{0};
    auto rig = std::make_unique<Rig>();
    rig->name = "bench" + std::to_string(seq++);
    auto prof = emu::parse_spec(spec);
    auto dev = emu::create_device(rig->name, spec);
    if (!prof || !dev) {
        st.SkipWithError("emulator device");
        return nullptr;
    }
    rig->profile = *prof;
    auto rv = testing::make_ready_virtqs(emu::api(), rig->name, n);
    if (!rv) {
        st.SkipWithError(("virtqs: " + to_string(rv.error())).c_str());
        return nullptr;
    }
    rig->rv = std::make_unique<testing::ReadyVirtqs>(std::move(*rv));
    auto eng = wide_creator ? create_on_every_cpu(rig->rv->ctx.get(), std::move(opt))
                            : Engine::create(emu::api(), rig->rv->ctx.get(), std::move(opt));
    if (!eng) {
        st.SkipWithError("engine");
        return nullptr;
    }
    rig->eng = std::move(*eng);
    return rig;
}

void measure(benchmark::State& st, Rig& rig, Op op) {
    const unsigned n = unsigned(st.range(0)), t = unsigned(st.range(1));
    BatchTimes times;
    unsigned peak = 0;
    uint64_t busy0 = rig.eng->stats().busy_retries;
    uint64_t cmds = 0;
    for (auto _ : st) {
        if (op == Op::Resume) {  // bring the queues to SUSPEND, untimed
            st.PauseTiming();
            BatchResult pre = rig.eng->run(rig.batch(Op::Suspend), kRunTimeout);
            st.ResumeTiming();
            if (!pre.ok()) st.SkipWithError("suspend before resume failed");
        }
        BatchResult r = rig.eng->run(rig.batch(op), kRunTimeout);
        if (!r.ok()) {
            st.SkipWithError("batch failed");
            break;
        }
        times.add(std::chrono::duration<double, std::milli>(r.elapsed).count());
        peak = std::max(peak, r.peak_inflight);
        cmds = r.done;
        if (op == Op::Suspend) {  // back to RDY, untimed
            st.PauseTiming();
            BatchResult post = rig.eng->run(rig.batch(Op::Resume), kRunTimeout);
            st.ResumeTiming();
            if (!post.ok()) st.SkipWithError("resume after suspend failed");
        }
    }
    const double ideal_ms = double(emu::ideal_ns(rig.profile, op == Op::Suspend, n, t)) / 1e6;
    double measured_ms = times.median();
    st.counters["ideal_ms"] = ideal_ms;
    st.counters["measured_ms"] = measured_ms;
    st.counters["mean_ms"] = times.mean();
    st.counters["measured_over_ideal"] = ideal_ms > 0 ? measured_ms / ideal_ms : 0;
    st.counters["cmds"] = double(cmds);
    st.counters["peak_inflight"] = peak;
    // EBUSY refusals of async queries (all runs, untimed ones included), per iteration.
    st.counters["busy_retries"] =
        double(rig.eng->stats().busy_retries - busy0) / double(std::max<int64_t>(1, st.iterations()));
}

void run_op(benchmark::State& st, Strategy s, Op op) {
    const unsigned n = unsigned(st.range(0)), t = unsigned(st.range(1));
    auto rig = make_rig(st, {.strategy = s, .max_inflight = t}, n);
    if (rig) measure(st, *rig, op);
}

// The EngineOptions switches of the heuristics doc/engine.md measures.
struct Switch {
    const char* name;
    bool devx::EngineOptions::*on;
};
constexpr Switch kSwitches[] = {
    {"sense_fast_commands", &devx::EngineOptions::sense_fast_commands},
    {"stall_check", &devx::EngineOptions::stall_check},
    {"workers_follow_caller", &devx::EngineOptions::workers_follow_caller},
};

// Zero modelled latency (bm_engine.cpp's profile): the fast-command
// heuristics act only where commands return in microseconds.
constexpr const char* kZeroLatencySpec = "cx7,modify_us=0,query_us=0,create_us=0,max_virtqs=1024";

void run_heuristic(benchmark::State& st, const Switch* off, bool zero, Op op) {
    devx::EngineOptions opt{.max_inflight = unsigned(st.range(1))};
    if (off) opt.*(off->on) = false;
    auto rig = make_rig(st, std::move(opt), unsigned(st.range(0)),
                        zero ? std::string(kZeroLatencySpec) : profile_spec(), true);
    if (rig) measure(st, *rig, op);
}

}  // namespace

// BM_Heuristics/off:<switch|none>/latency:<profile|zero>/op:<suspend|resume>/queues:N/inflight:16,
// every repetition reported (tools/bench_heuristics.py takes medians and spreads).
void register_heuristics() {
    for (int h = -1; h < int(std::size(kSwitches)); ++h)
        for (bool zero : {false, true})
            for (Op op : {Op::Suspend, Op::Resume}) {
                const Switch* off = h < 0 ? nullptr : &kSwitches[h];
                std::string name = std::string("BM_Heuristics/off:") + (off ? off->name : "none") +
                                   "/latency:" + (zero ? "zero" : "profile") +
                                   "/op:" + (op == Op::Suspend ? "suspend" : "resume");
                auto* b = benchmark::RegisterBenchmark(name.c_str(), [off, zero, op](benchmark::State& st) {
                    run_heuristic(st, off, zero, op);
                });
                b->ArgNames({"queues", "inflight"});
                for (long n : {1, 32, 1024}) b->Args({n, 16});
                b->Unit(benchmark::kMillisecond)->UseRealTime()->Repetitions(5);
            }
}

// BM_Suspend/strategy:async/queues:32/inflight:16 ... Async: N = 1 .. 1024;
// the blocking baselines stop at 64 (sequential at N=1024 would take about
// 1.2 s per iteration).
void register_suspend_resume() {
    for (Strategy s : {Strategy::Async, Strategy::Sequential, Strategy::Threads})
        for (Op op : {Op::Suspend, Op::Resume}) {
            std::string name = std::string(op == Op::Suspend ? "BM_Suspend" : "BM_Resume") +
                               "/strategy:" + devx::strategy_name(s);
            auto* b = benchmark::RegisterBenchmark(name.c_str(), [s, op](benchmark::State& st) {
                run_op(st, s, op);
            });
            b->ArgNames({"queues", "inflight"});
            long max_n = s == Strategy::Async ? 1024 : 64;
            for (long n = 1; n <= max_n; n *= 2) b->Args({n, 16});
            b->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime();
            b->Repetitions(3)->ReportAggregatesOnly(true);  // median of 3 (override on the command line)
        }
}

}  // namespace mlx5async::bench
