// The two baselines the async strategy is measured against, in the same
// library so one benchmark binary compares all three:
// - sequential: DPDK 22.11 drivers/vdpa/mlx5 and Linux mlx5_vdpa before 6.12:
//   one blocking command at a time, QUERY blocking too;
// - threads: DPDK's max_conf_threads: T threads each running whole chains with
//   blocking calls, the caller noticing completion by polling.
#include <algorithm>
#include <thread>

#include "dependencies.hpp"
#include "engine_impl.hpp"

namespace mlx5async::devx {

BatchResult Engine::Impl::run_sequential(Batch&& b, Clock::time_point deadline) {
    BatchResult res = make_result_skeleton(b);
    throttle.reset_peak();
    slots.reset_peak();
    EngineStats d;
    auto& entries = b.entries();
    Dependencies deps(b, res);
    std::vector<uint32_t> released, cancelled;  // in batch order: nothing to do with them
    for (uint32_t e = 0; e < entries.size(); ++e) {
        if (deps.settled(e)) continue;
        auto& steps = entries[e].steps;
        auto& results = res.entries[e].steps;
        bool ok = true;
        for (size_t k = 0; k < steps.size(); ++k) {
            ok = false;
            if (cut.load()) {
                cancel_unissued(steps, results, k);
                break;
            }
            if (closed.load() || Clock::now() >= deadline) {
                close_chain(steps, results, k, closed.load() ? StepState::Cancelled
                                                             : StepState::TimedOut);
                break;
            }
            if (steps[k].binds()) steps[k].bind([&](size_t step) { return results.at(step).made(); });
            Outcome o;
            const bool throttled = steps[k].throttled();
            admit(throttled);
            ++d.steps_issued;
            observe_issue(steps[k]);
            execute_blocking(steps[k], o);
            observe_completion(steps[k], o);
            leave(throttled);
            results[k] = finish_step(std::move(steps[k]), std::move(o));
            if (!results[k].ok()) {
                close_chain(steps, results, k + 1, StepState::Cancelled);
                break;
            }
            ok = true;
        }
        deps.ended(e, ok, released, cancelled);
    }
    res.peak_inflight = throttle.peak();
    res.peak_slots = slots.peak();
    add_stats(d);
    return res;
}

namespace {

// DPDK max_conf_threads waits for its configuration threads by sleeping and
// re-checking a counter (mlx5_vdpa_c_thread_wait_bulk_tasks_done). This
// strategy models that baseline, so here - and only here - the poll interval
// is intended.
constexpr auto kThreadsPollInterval = std::chrono::milliseconds(2);

}  // namespace

namespace {

// Moves a finished chain job's outcomes into the entry's results.
void collect_chain(Job& job, std::vector<StepResult>& results, EngineStats& d) {
    for (size_t k = 0; k < job.steps.size(); ++k) {
        if (k >= job.outcomes.size() || !job.outcomes[k].ran) {
            cancel_unissued(job.steps, results, k);  // cut_short, or an earlier step failed
            return;
        }
        ++d.steps_issued;
        results[k] = finish_step(std::move(job.steps[k]), std::move(job.outcomes[k]));
    }
}

}  // namespace

BatchResult Engine::Impl::run_threads(Batch&& b, Clock::time_point deadline) {
    BatchResult res = make_result_skeleton(b);
    throttle.reset_peak();
    slots.reset_peak();
    const uint32_t g = ++gen;
    {
        std::lock_guard lk(done_mu);
        live_gen.store(g, std::memory_order_release);
    }
    auto& entries = b.entries();
    std::vector<bool> open(entries.size(), false);
    std::vector<const Job*> job_of(entries.size(), nullptr);  // alive until take_done() returns it
    size_t pending = 0;
    EngineStats d;
    Dependencies deps(b, res);
    auto post_entry = [&](uint32_t e) {
        auto job = std::make_unique<Job>();
        job->gen = g;
        job->entry = e;
        job->chain = true;
        for (auto& s : entries[e].steps) job->steps.push_back(std::move(s));
        for (auto& r : res.entries[e].steps) r.state = StepState::Issued;
        job_of[e] = job.get();
        post(std::move(job));
    };
    for (uint32_t e = 0; e < entries.size(); ++e) {
        if (entries[e].steps.empty() || deps.settled(e)) continue;
        open[e] = true;
        ++pending;
        if (!deps.waits(e)) post_entry(e);
    }
    std::vector<uint32_t> released, cancelled;
    while (pending > 0) {
        for (auto& job : take_done()) {
            const uint32_t e = job->entry;
            if (job->gen != g || !open[e]) {
                discard_stale(*job);
                continue;
            }
            auto& results = res.entries[e].steps;
            collect_chain(*job, results, d);
            open[e] = false;
            --pending;
            released.clear();
            cancelled.clear();
            deps.ended(e, std::all_of(results.begin(), results.end(), [](const StepResult& r) { return r.ok(); }),
                       released, cancelled);
            for (uint32_t x : released) post_entry(x);
            for (uint32_t x : cancelled)
                if (open[x]) {
                    open[x] = false;
                    --pending;
                }
        }
        if (pending == 0) break;
        if (closed.load() || Clock::now() >= deadline) {
            // The jobs keep their commands; they come back stale and are discarded.
            StepState why = closed.load() ? StepState::Cancelled : StepState::TimedOut;
            for (uint32_t e = 0; e < entries.size(); ++e) {
                if (!open[e]) continue;
                if (job_of[e]) {
                    close_chain(entries[e].steps, res.entries[e].steps, 0, why, last_begun_step(*job_of[e]));
                } else {  // still waiting for the entries it follows
                    close_chain(entries[e].steps, res.entries[e].steps, 0, why);
                    res.entries[e].steps[0].never_issued = true;
                }
            }
            break;
        }
        std::this_thread::sleep_until(std::min(Clock::now() + kThreadsPollInterval, deadline));
    }
    {
        std::lock_guard lk(done_mu);
        live_gen.store(0, std::memory_order_release);
    }
    res.peak_inflight = throttle.peak();
    res.peak_slots = slots.peak();
    add_stats(d);
    return res;
}

}  // namespace mlx5async::devx
