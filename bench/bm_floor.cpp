// The floor of this machine for the thread-per-blocking-command model:
// `inflight` threads, each woken by its own semaphore, take commands from a
// shared counter and wait out each command's modelled latency with the
// emulator's own clock (sleep to 100 us before the due time, then yield-spin:
// drivers/emu/clock.cpp). No engine, no emulator, no PRM: what remains over
// ideal is the cost of waking T threads and getting each one a CPU at its due
// time. The caller waits like the async engine's hybrid poll (sleep to just
// before the ideal end, then yield-spin).
//
// Registered as BM_Suspend/strategy:floor/... and BM_Resume/strategy:floor/...
// so tools/bench_table.py sets it beside the engine (async/floor). A suspend
// chain runs MODIFY and QUERY latencies on one thread (the engine's QUERY
// needs no thread of its own, so this floor is not lower than the engine's).
#include <benchmark/benchmark.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <semaphore>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "common/base/steady_clock.hpp"
#include "drivers/emu/clock.hpp"
#include "drivers/emu/profile.hpp"

namespace mlx5async::bench {
namespace {

class FloorRig {
public:
    FloorRig(unsigned threads, std::vector<int64_t> chain_ns)
        : chain_ns_(std::move(chain_ns)) {
        for (unsigned i = 0; i < threads; ++i)
            wake_.push_back(std::make_unique<std::binary_semaphore>(0));
        for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this, i] { loop(i); });
    }
    ~FloorRig() {
        stop_.store(true);
        for (auto& w : wake_) w->release();
        for (auto& t : threads_) t.join();
    }

    // One batch of n chains; returns its wall time in ns.
    int64_t run(unsigned n, int64_t ideal_ns) {
        total_ = n;
        next_.store(0);
        done_.store(0);
        int64_t t0 = steady_now_ns();
        for (auto& w : wake_) w->release();
        int64_t poll_from = t0 + ideal_ns - 50'000;
        if (steady_now_ns() < poll_from) {
            timespec ts{static_cast<time_t>(poll_from / 1'000'000'000),
                        static_cast<long>(poll_from % 1'000'000'000)};
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
        }
        while (done_.load(std::memory_order_acquire) < n) sched_yield();
        int64_t took = steady_now_ns() - t0;
        // Every thread back asleep before the next batch.
        while (parked_.load(std::memory_order_acquire) < threads_.size()) sched_yield();
        return took;
    }

private:
    void loop(unsigned i) {
        emu::SteadyClock clock;
        std::mutex mu;
        std::condition_variable cv;
        for (;;) {
            parked_.fetch_add(1, std::memory_order_release);
            wake_[i]->acquire();
            parked_.fetch_sub(1, std::memory_order_relaxed);
            if (stop_.load()) return;
            while (next_.fetch_add(1) < total_) {
                std::unique_lock lk(mu);
                for (int64_t ns : chain_ns_) {
                    int64_t due = steady_now_ns() + ns;
                    while (steady_now_ns() < due) clock.wait_until(lk, cv, due);
                }
                done_.fetch_add(1, std::memory_order_release);
            }
        }
    }

    std::vector<int64_t> chain_ns_;
    std::vector<std::unique_ptr<std::binary_semaphore>> wake_;
    std::vector<std::thread> threads_;
    std::atomic<unsigned> next_{0}, done_{0}, parked_{0};
    unsigned total_ = 0;
    std::atomic<bool> stop_{false};
};

void run_floor(benchmark::State& st, bool suspend) {
    const unsigned n = unsigned(st.range(0)), t = unsigned(st.range(1));
    auto prof = emu::parse_spec(profile_spec());
    if (!prof) return st.SkipWithError("profile");
    std::vector<int64_t> chain{int64_t(prof->timing.modify_us) * 1000};
    if (suspend) chain.push_back(int64_t(prof->timing.query_us) * 1000);
    int64_t chain_ns = 0;
    for (int64_t ns : chain) chain_ns += ns;
    double waves = std::ceil(double(n) / t);
    int64_t ideal_ns = int64_t(waves) * chain_ns;
    FloorRig rig(t, chain);
    BatchTimes times;
    for (auto _ : st) times.add(double(rig.run(n, ideal_ns)) / 1e6);
    double measured_ms = times.median();
    st.counters["ideal_ms"] = double(ideal_ns) / 1e6;
    st.counters["measured_ms"] = measured_ms;
    st.counters["mean_ms"] = times.mean();
    st.counters["measured_over_ideal"] = ideal_ns ? measured_ms * 1e6 / double(ideal_ns) : 0;
    st.counters["cmds"] = double(n) * double(chain.size());
    st.counters["peak_inflight"] = std::min(n, t);
}

}  // namespace

void register_floor() {
    for (bool suspend : {true, false}) {
        std::string name = std::string(suspend ? "BM_Suspend" : "BM_Resume") + "/strategy:floor";
        auto* b = benchmark::RegisterBenchmark(name.c_str(), [suspend](benchmark::State& st) {
            run_floor(st, suspend);
        });
        b->ArgNames({"queues", "inflight"});
        for (long n = 1; n <= 1024; n *= 2) b->Args({n, 16});
        b->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime();
        b->Repetitions(3)->ReportAggregatesOnly(true);
    }
}

}  // namespace mlx5async::bench
