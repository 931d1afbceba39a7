// vdpa-testpmd: suspend / resume calls, cycles and strategy comparisons.
#include "cycles.hpp"
#include "emulator.hpp"

#include <poll.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report.hpp"
#include "trace.hpp"

namespace vdpa_testpmd {

SummaryStats summarize(const SampleSet& s) {
    SummaryStats out;
    out.failures = s.failures;
    out.samples = s.ms.size();
    if (s.ms.empty())
        return out;
    std::vector<double> v = s.ms;
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    out.min = v.front();
    out.max = v.back();
    out.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    // p99: nearest rank, ceil(0.99 n)-th smallest sample.
    size_t rank = size_t(std::ceil(0.99 * double(n)));
    out.p99 = v[std::clamp<size_t>(rank, 1, n) - 1];
    std::vector<double> ideal = s.ideal_ms;
    std::sort(ideal.begin(), ideal.end());
    if (!ideal.empty())
        out.ideal = ideal[ideal.size() / 2];
    return out;
}

namespace {

bool same_timing(const rte_pmd_mlx5async_timing& a, const rte_pmd_mlx5async_timing& b) {
    return a.total_ns == b.total_ns && a.prepare_ns == b.prepare_ns &&
           a.firmware_ns == b.firmware_ns && a.vhost_ns == b.vhost_ns && a.queues == b.queues &&
           a.commands == b.commands && a.failed == b.failed;
}

}  // namespace

OpResult run_op(App& app, const std::vector<Port*>& ps, rte_pmd_mlx5async_op op) {
    OpResult r;
    std::vector<struct rte_vdpa_device*> devs;
    // A call refused before any batch leaves the previous timing in place:
    // recognised by comparing with the timing read before the call.
    std::vector<rte_pmd_mlx5async_timing> before(ps.size());
    for (size_t i = 0; i < ps.size(); i++) {
        devs.push_back(ps[i]->dev);
        if (rte_pmd_mlx5async_last_timing(ps[i]->dev, op, &before[i]) < 0)
            before[i] = {};
    }
    uint64_t t0 = now_ns();
    r.rc = op == RTE_PMD_MLX5ASYNC_OP_SUSPEND
               ? rte_pmd_mlx5async_suspend(devs.data(), unsigned(devs.size()))
               : rte_pmd_mlx5async_resume(devs.data(), unsigned(devs.size()));
    uint64_t t1 = now_ns();
    r.ms = double(t1 - t0) / 1e6;
    r.timings.resize(ps.size());
    r.ideal_ns.resize(ps.size());
    for (size_t i = 0; i < ps.size(); i++) {
        auto& t = r.timings[i];
        int rc = rte_pmd_mlx5async_last_timing(ps[i]->dev, op, &t);
        if (rc < 0) {
            printf("error: %s: no timing for the last %s (%d)\n", ps[i]->name.c_str(),
                   op == RTE_PMD_MLX5ASYNC_OP_SUSPEND ? "suspend" : "resume", rc);
            t = {};
        } else if (same_timing(t, before[i])) {
            t = {};  // this call ran no batch on the device
        }
        r.queues += t.queues;
        r.commands += t.commands;
        r.failed += t.failed;
        r.ideal_ns[i] = emulator_ideal_ns(*ps[i], op, t.queues);
        r.ideal_ms = std::max(r.ideal_ms, double(r.ideal_ns[i]) / 1e6);
        auto& c = ps[i]->counters;
        c.commands += t.commands;
        c.commands_failed += t.failed;
    }
    for (Port* p : ps)
        (r.ok() ? p->counters.ops : p->counters.op_failures)[op]++;
    if (app.trace)
        app.trace->record_op(ps, op, t0, t1, r.timings, r.ideal_ns);
    return r;
}

namespace {

ResultKey key_for(const std::vector<Port*>& ps) {
    ResultKey k;
    k.devices = uint32_t(ps.size());
    for (size_t i = 0; i < ps.size(); i++) {
        DevInfo info;
        if (rte_pmd_mlx5async_get_dev_info(ps[i]->dev, &info) < 0)
            continue;
        std::string s = strategy_name(info.strategy);
        k.strategy = i == 0 || k.strategy == s ? s : "mixed";
        k.max_inflight = i == 0 ? info.max_inflight : std::min(k.max_inflight, info.max_inflight);
    }
    return k;
}

void note_run_info(App& app, const std::vector<Port*>& ps, uint32_t queues) {
    if (app.run_info || ps.empty())
        return;
    DevInfo info;
    if (rte_pmd_mlx5async_get_dev_info(ps[0]->dev, &info) < 0)
        return;
    RunInfo ri;
    ri.profile = info.backend;
    ri.queues = queues;
    ri.max_inflight = info.max_inflight;
    if (auto m = emulator_model(*ps[0])) {
        ri.fw_max_inflight = m->max_inflight;
        ri.modify_ms = double(m->modify_ns) / 1e6;
        ri.query_ms = double(m->query_ns) / 1e6;
    }
    app.run_info = ri;
}

void add_sample(SampleSet& s, const OpResult& r) {
    if (!r.ok()) {
        s.failures++;
        return;
    }
    s.ms.push_back(r.ms);
    s.ideal_ms.push_back(r.ideal_ms);
}

}  // namespace

CycleRun run_cycles(App& app, const std::vector<Port*>& ps, uint32_t count,
                    uint32_t interval_ms) {
    CycleRun run;
    run.key = key_for(ps);
    bool have_queues = false;
    for (uint32_t i = 0; i < count && !app.stop; i++) {
        if (i > 0 && interval_ms > 0) {
            // Pacing between cycles; a signal (stop_fd) cuts it short.
            struct pollfd pfd = {app.stop_fd, POLLIN, 0};
            poll(&pfd, 1, int(interval_ms));
            if (app.stop)
                break;
        }
        OpResult s = run_op(app, ps, RTE_PMD_MLX5ASYNC_OP_SUSPEND);
        // Resume even after a failed suspend: it brings back what was suspended.
        OpResult r = run_op(app, ps, RTE_PMD_MLX5ASYNC_OP_RESUME);
        if (!have_queues && s.ok()) {
            run.key.queues = s.queues;
            have_queues = true;
        }
        add_sample(run.ops[0], s);
        add_sample(run.ops[1], r);
        run.cycles++;
        bool ok = s.ok() && r.ok();
        run.failed_cycles += !ok;
        ok ? app.cycles_ok++ : app.cycles_failed++;
        if (app.opt.per_cycle || !ok)
            print_cycle_line(i + 1, count, s, r);
    }
    note_run_info(app, ps, run.key.queues);
    auto& bucket = app.results[run.key];
    for (int op = 0; op < 2; op++) {
        auto& dst = bucket[op];
        const auto& src = run.ops[op];
        dst.ms.insert(dst.ms.end(), src.ms.begin(), src.ms.end());
        dst.ideal_ms.insert(dst.ideal_ms.end(), src.ideal_ms.begin(), src.ideal_ms.end());
        dst.failures += src.failures;
    }
    return run;
}

bool run_strategies(App& app, const std::vector<Port*>& ps, uint32_t count,
                    uint32_t interval_ms) {
    std::vector<StrategyColumn> cols;
    bool ok = true;
    uint32_t last_queues = 0;
    for (auto s : app.opt.strategies) {
        for (Port* p : ps) {
            int rc = rte_pmd_mlx5async_set_strategy(p->dev, s);
            if (rc < 0) {
                printf("error: %s: cannot set strategy %s (%d)\n", p->name.c_str(),
                       strategy_name(s), rc);
                return false;
            }
        }
        printf("strategy %s: %u cycles over %zu device(s)\n", strategy_name(s), count, ps.size());
        CycleRun run = run_cycles(app, ps, count, interval_ms);
        print_cycle_summary(ps, run);
        last_queues = run.key.queues;
        ok = ok && run.failed_cycles == 0 && run.cycles == count;
        cols.push_back({strategy_name(s), {summarize(run.ops[0]), summarize(run.ops[1])}});
        if (app.stop)
            return false;
    }
    DevInfo info;
    if (!ps.empty() && rte_pmd_mlx5async_get_dev_info(ps[0]->dev, &info) == 0)
        printf("\nstrategy comparison: %s, %zu device(s), %u virtqs per batch, max_inflight %u, "
               "%u cycles per strategy\n",
               info.backend, ps.size(), last_queues, info.max_inflight, count);
    print_strategy_table(cols);
    return ok;
}

}  // namespace vdpa_testpmd
