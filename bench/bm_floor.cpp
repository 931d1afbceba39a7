// The floor of this machine for the thread-per-blocking-command model:
// `inflight` threads, each woken by its own gate, take commands from a
// shared counter and sleep through each command's modelled latency until a
// timekeeper thread, waiting for the earliest due time with the emulator's
// own clock (drivers/emu/clock.cpp), releases them: the emulator's firmware
// thread and blocking callers, without engine, emulator or PRM. What remains
// over ideal is the cost of waking T threads and getting each one a CPU at
// its due time. The caller sleeps until the last chain is done.
//
// Registered as BM_Suspend/strategy:floor/... and BM_Resume/strategy:floor/...
// so tools/bench_table.py sets it beside the engine (async/floor). A suspend
// chain runs MODIFY and QUERY latencies on one thread (the engine's QUERY
// needs no thread of its own, so this floor is not lower than the engine's).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "common/base/steady_clock.hpp"
#include "drivers/emu/clock.hpp"
#include "drivers/emu/profile.hpp"

namespace mlx5async::bench {
namespace {

// A binary semaphore on a condition variable, as the emulator's blocking
// callers wait: std::binary_semaphore spins with sched_yield before it sleeps.
class Gate {
public:
    void acquire() {
        std::unique_lock lk(mu_);
        cv_.wait(lk, [&] { return open_; });
        open_ = false;
    }
    void release() {
        {
            std::lock_guard lk(mu_);
            open_ = true;
        }
        cv_.notify_one();
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool open_ = false;
};

class FloorRig {
public:
    FloorRig(unsigned threads, std::vector<int64_t> chain_ns)
        : chain_ns_(std::move(chain_ns)), due_(threads, emu::kNever) {
        for (unsigned i = 0; i < threads; ++i) {
            start_.push_back(std::make_unique<Gate>());
            step_.push_back(std::make_unique<Gate>());
        }
        timekeeper_ = std::thread([this] { keep_time(); });
        for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this, i] { loop(i); });
    }
    ~FloorRig() {
        stop_.store(true);
        for (auto& w : start_) w->release();
        for (auto& t : threads_) t.join();
        {
            std::lock_guard lk(tk_mu_);
            tk_stop_ = true;
        }
        tk_cv_.notify_one();
        timekeeper_.join();
    }

    // One batch of n chains; returns its wall time in ns.
    int64_t run(unsigned n) {
        total_ = n;
        next_.store(0);
        done_.store(0);
        int64_t t0 = steady_now_ns();
        for (auto& w : start_) w->release();
        batch_done_.acquire();
        int64_t took = steady_now_ns() - t0;
        // Every thread through this batch before the next one starts.
        std::unique_lock lk(park_mu_);
        park_cv_.wait(lk, [&] { return finished_ == threads_.size(); });
        finished_ = 0;
        return took;
    }

private:
    void loop(unsigned i) {
        for (;;) {
            start_[i]->acquire();
            if (stop_.load()) return;
            while (next_.fetch_add(1) < total_) {
                for (int64_t ns : chain_ns_) sleep_step(i, ns);
                if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == total_) batch_done_.release();
            }
            {
                std::lock_guard lk(park_mu_);
                ++finished_;
            }
            park_cv_.notify_one();
        }
    }

    // Worker i's command takes ns: the timekeeper releases it at its due time.
    void sleep_step(unsigned i, int64_t ns) {
        bool wake;
        {
            std::lock_guard lk(tk_mu_);
            due_[i] = steady_now_ns() + ns;
            wake = due_[i] < tk_sleep_due_;
        }
        if (wake) tk_cv_.notify_one();
        step_[i]->acquire();
        released_.fetch_sub(1, std::memory_order_relaxed);
    }

    void keep_time() {
        emu::SteadyClock clock;
        std::unique_lock lk(tk_mu_);
        std::vector<unsigned> due_now;
        while (!tk_stop_) {
            int64_t next = emu::kNever, now = steady_now_ns();
            for (unsigned i = 0; i < due_.size(); ++i) {
                if (due_[i] <= now) {
                    due_[i] = emu::kNever;
                    due_now.push_back(i);
                }
                next = std::min(next, due_[i]);
            }
            if (!due_now.empty()) {
                released_.fetch_add(int(due_now.size()), std::memory_order_relaxed);
                lk.unlock();
                for (unsigned i : due_now) step_[i]->release();
                due_now.clear();
                lk.lock();
                continue;
            }
            tk_sleep_due_ = next;
            clock.wait_until(lk, tk_cv_, next,
                             [this] { return released_.load(std::memory_order_relaxed) > 0; });
            tk_sleep_due_ = kAwake;
        }
    }

    static constexpr int64_t kAwake = INT64_MIN;  // rescans before sleeping: no wake-up needed
    std::vector<int64_t> chain_ns_;
    std::vector<std::unique_ptr<Gate>> start_, step_;
    std::vector<std::thread> threads_;
    std::thread timekeeper_;
    std::mutex tk_mu_;  // due_, tk_sleep_due_, tk_stop_
    std::condition_variable tk_cv_;
    std::vector<int64_t> due_;  // per worker: when its step is done (kNever: none)
    int64_t tk_sleep_due_ = kAwake;
    bool tk_stop_ = false;
    std::mutex park_mu_;  // finished_
    std::condition_variable park_cv_;
    size_t finished_ = 0;  // threads through the running batch
    Gate batch_done_;
    std::atomic<unsigned> next_{0}, done_{0};
    unsigned total_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<int> released_{0};  // threads the timekeeper released that have yet to run
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
    for (auto _ : st) times.add(double(rig.run(n)) / 1e6);
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
