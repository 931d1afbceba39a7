// Engine cost per command at zero modelled latency: batches alternating N
// suspend chains (2N commands) and N resumes, on
// - backend:fake - the scripted FakeDevx (near-free device: engine cost), and
// - backend:emu  - mlx5emu with modify_us=0, query_us=0 (engine + emulator).
// Counters: us_per_cmd (wall), cpu_us_per_cmd (process CPU: caller, workers
// and, for emu, the emulator's firmware thread).
// BM_EngineOverhead: the engine as the PMD runs it (command latency
// histograms on). BM_HistogramCost: the same with the histograms on and off
// (EngineOptions::command_stats), for a run with repetitions interleaved at
// random (./run bench); BM_HistogramRecord: what recording one command
// costs, alone (ns_per_cmd).
#include <benchmark/benchmark.h>
#include <time.h>

#include <atomic>
#include <memory>
#include <string>

#include "bench_common.hpp"
#include "common/devx/command_stats.hpp"
#include "common/devx/engine.hpp"
#include "drivers/emu/emu.hpp"
#include "testkit/emu_virtqs.hpp"
#include "testkit/fake_devx_api.hpp"

namespace mlx5async::bench {
namespace {

using devx::BatchResult;
using devx::Engine;
using namespace std::chrono_literals;

double process_cpu_us() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) / 1e3;
}

// Runs batches over `vqs` until the state says stop; reports per command.
void measure(benchmark::State& st, Engine& eng, const std::vector<devx::DevxObj>& vqs) {
    double cpu0 = process_cpu_us(), wall_us = 0;
    uint64_t cmds = 0;
    unsigned peak = 0;
    bool suspend = true;
    for (auto _ : st) {
        // Alternate suspend chains and resumes so every command is a legal
        // transition on the emulator (2N then N commands).
        devx::Batch b;
        for (size_t q = 0; q < vqs.size(); ++q) {
            if (suspend)
                b.add_suspend(vqs[q], int(q));
            else
                b.add_resume(vqs[q], int(q));
        }
        suspend = !suspend;
        BatchResult r = eng.run(std::move(b), 10s);
        if (!r.ok()) {
            st.SkipWithError("batch failed");
            break;
        }
        wall_us += std::chrono::duration<double, std::micro>(r.elapsed).count();
        cmds += r.done;
        peak = std::max(peak, r.peak_inflight);
    }
    double cpu_us = process_cpu_us() - cpu0;
    st.counters["us_per_cmd"] = cmds ? wall_us / double(cmds) : 0;
    st.counters["cpu_us_per_cmd"] = cmds ? cpu_us / double(cmds) : 0;
    st.counters["cmds"] = double(cmds) / double(std::max<int64_t>(1, st.iterations()));
    st.counters["peak_inflight"] = peak;
}

devx::EngineOptions with_stats(bool on) {
    devx::EngineOptions o;
    o.command_stats = on;
    return o;
}

void BM_EngineOverheadFake(benchmark::State& st, bool stats) {
    testing::FakeDevx fake;
    std::vector<devx::DevxObj> vqs;
    for (long i = 0; i < st.range(0); ++i) vqs.push_back(fake.make_obj());
    auto eng = Engine::create(testing::FakeDevx::api(), fake.ctx(), with_stats(stats));
    if (!eng) return st.SkipWithError("engine");
    measure(st, **eng, vqs);
    (*eng)->shutdown();
}

void BM_EngineOverheadEmu(benchmark::State& st, bool stats) {
    static std::atomic<int> seq{0};
    std::string name = "bench_zero" + std::to_string(seq++);
    if (!emu::create_device(name, "cx7,modify_us=0,query_us=0,create_us=0,max_virtqs=1024"))
        return st.SkipWithError("emulator device");
    {
        auto rv = testing::make_ready_virtqs(emu::api(), name, unsigned(st.range(0)));
        if (!rv) return st.SkipWithError("virtqs");
        auto eng = Engine::create(emu::api(), rv->ctx.get(), with_stats(stats));
        if (!eng) return st.SkipWithError("engine");
        measure(st, **eng, rv->vqs);
        (*eng)->shutdown();
    }
    (void)emu::destroy_device(name);
}

// Records every step of a batch of N suspend chains, as Engine::run does
// once the batch returned.
void BM_HistogramRecord(benchmark::State& st) {
    devx::BatchResult r;
    r.entries.resize(size_t(st.range(0)));
    uint64_t lat = 1000;
    for (auto& e : r.entries) {
        e.steps.resize(2);
        for (size_t k = 0; k < 2; ++k) {
            devx::StepResult& s = e.steps[k];
            s.state = devx::StepState::Done;
            s.type = {k ? devx::CmdVerb::Query : devx::CmdVerb::Modify, devx::CmdObject::Virtq};
            s.latency = std::chrono::nanoseconds(lat = lat * 7 % 1'000'003);
            s.issued_at = std::chrono::steady_clock::now();
        }
    }
    devx::CommandStats stats;
    const auto t0 = std::chrono::steady_clock::now();
    for (auto _ : st) {
        for (const auto& e : r.entries)
            for (const auto& s : e.steps) record_step(stats, s);
        benchmark::DoNotOptimize(stats);
    }
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    st.counters["ns_per_cmd"] = ns / (double(std::max<int64_t>(1, st.iterations())) * double(2 * r.entries.size()));
}

}  // namespace

void register_engine_overhead() {
    using Fn = void (*)(benchmark::State&, bool);
    const std::pair<const char*, Fn> backends[] = {{"fake", &BM_EngineOverheadFake},
                                                   {"emu", &BM_EngineOverheadEmu}};
    for (auto [backend, fn] : backends) {
        benchmark::RegisterBenchmark((std::string("BM_EngineOverhead/backend:") + backend).c_str(),
                                     [fn](benchmark::State& st) { fn(st, true); })
            ->ArgNames({"queues"})
            ->Arg(16)
            ->Arg(64)
            ->Arg(256)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime()
            ->Repetitions(3)
            ->ReportAggregatesOnly(true);
    }
    // Repetitions from the command line (tools/bench: interleaved at random).
    for (auto [backend, fn] : backends)
        for (bool stats : {true, false}) {
            std::string name = std::string("BM_HistogramCost/backend:") + backend +
                               "/histograms:" + (stats ? "on" : "off");
            benchmark::RegisterBenchmark(name.c_str(), [fn, stats](benchmark::State& st) { fn(st, stats); })
                ->ArgNames({"queues"})
                ->Arg(16)
                ->Arg(256)
                ->Unit(benchmark::kMicrosecond)
                ->UseRealTime();
        }
    benchmark::RegisterBenchmark("BM_HistogramRecord", BM_HistogramRecord)->ArgNames({"queues"})->Arg(64);
}

}  // namespace mlx5async::bench
