// vdpa-testpmd: testpmd-style tables and the JSON results file.
#include "report.hpp"
#include "emulator.hpp"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <rte_vdpa.h>
#include <rte_vhost.h>

#include "json.hpp"
#include "latency_report.hpp"
#include "ledger_report.hpp"

namespace vdpa_testpmd {

namespace {

const char* op_label(int op) { return op == RTE_PMD_MLX5ASYNC_OP_SUSPEND ? "suspend" : "resume"; }

void banner(const char* fmt, const char* what) {
    printf("\n  ######################## ");
    printf(fmt, what);
    printf(" ########################\n");
}

double ms(uint64_t ns) { return double(ns) / 1e6; }

// "1.08" or "n/a" when the device reports no ideal (hardware).
std::string ratio(double measured, double ideal) {
    if (ideal <= 0)
        return "n/a";
    char b[32];
    snprintf(b, sizeof(b), "%.2f", measured / ideal);
    return b;
}

}  // namespace

void print_list(App& app) {
    printf("\n  %-3s %-20s %-12s %6s %6s %5s %-18s %-10s %8s  %-4s %s\n", "#", "device", "backend",
           "vqs", "max", "size", "features", "strategy", "inflight", "vid", "socket");
    for (auto& p : app.ports) {
        DevInfo info;
        int rc = rte_pmd_mlx5async_get_dev_info(p->dev, &info);
        if (rc < 0) {
            printf("  %-3u %-20s error %d\n", p->index, p->name.c_str(), rc);
            continue;
        }
        int vid = app.port_vid(*p);
        printf("  %-3u %-20s %-12s %6u %6u %5u 0x%016" PRIx64 " %-10s %8u  %-4s %s\n", p->index,
               p->name.c_str(), info.backend, info.queues, info.max_queues, info.queue_size,
               info.features, strategy_name(info.strategy), info.max_inflight,
               vid >= 0 ? std::to_string(vid).c_str() : "-",
               p->attached ? p->socket.c_str() : "(not attached)");
    }
    printf("  %zu device(s)\n", app.ports.size());
}

void print_device(App& app, Port& p) {
    DevInfo info;
    int rc = rte_pmd_mlx5async_get_dev_info(p.dev, &info);
    if (rc < 0) {
        printf("error: %s: device info unavailable (%d)\n", p.name.c_str(), rc);
        return;
    }
    banner("device %s", p.name.c_str());
    const int vid = app.port_vid(p);
    uint64_t connections;
    {
        std::lock_guard lk(app.mu);  // written by the vhost thread
        connections = p.connections;
    }
    const auto model = emulator_model(p);
    printf("  backend: %s (%s)  strategy: %s  max_inflight: %u\n", info.backend, info.backend_device,
           strategy_name(info.strategy), info.max_inflight);
    printf("  virtqs: %u of %u  queue_size: %u  features: 0x%016" PRIx64 "\n", info.queues,
           info.max_queues, info.queue_size, info.features);
    if (model)  // the emulator's cost model (mlx5emu.h)
        printf("  model: modify %.3f ms  query %.3f ms  fw_max_inflight: %u\n", ms(model->modify_ns),
               ms(model->query_ns), model->max_inflight);
    printf("  commands unanswered: %u (of %u slots)  unsure virtqs: %u\n", info.unanswered_cmds,
           info.max_inflight, info.unsure_queues);
    printf("  socket: %s%s  vid: %d  frontend: %s  connections: %s\n",
           p.attached ? p.socket.c_str() : "-", p.driver_socket ? " (the driver's)" : "", vid,
           vid < 0 ? "none" : (app.is_ready(p) ? "ready" : "connected"),
           p.driver_socket ? "-" : std::to_string(connections).c_str());
    // RDY virtqs are queried: their indexes move while they run.
    std::vector<VqInfo> vqs(std::max(info.max_queues, info.queues) + 1);
    int n = rte_pmd_mlx5async_query_vq_info(p.dev, vqs.data(), unsigned(vqs.size()));
    if (n < 0) {
        printf("error: %s: virtq info unavailable (%d)\n", p.name.c_str(), n);
        return;
    }
    printf("  %-5s %-8s %-5s %9s %9s %-6s %10s %7s %10s\n", "vq", "state", "err", "hw_avail",
           "hw_used", "idx", "obj_id", "errors", "interrupts");
    for (int i = 0; i < n; i++) {
        const auto& v = vqs[i];
        printf("  %-5u %-8s %-5s %9u %9u %-6s 0x%08" PRIx32 " %7" PRIu32 " %10" PRIu64 "%s\n",
               v.index, vq_state_name(v.fw_state),
               v.fw_state == RTE_PMD_MLX5ASYNC_VQ_STATE_ERR ? std::to_string(v.error_type).c_str()
                                                            : "-",
               v.hw_available_index, v.hw_used_index, v.live ? "live" : "saved", v.obj_id, v.errors,
               v.interrupts, v.unsure ? "  unsure" : "");
    }
    printf("  %d virtq(s); idx: live = queried now, saved = as of the last suspend or start;"
           " unsure: its last command failed or is unanswered\n", n);
}

void print_stats(App& app, Port& p, int queue) {
    (void)app;
    const auto& c = p.counters;
    banner("stats for %s", p.name.c_str());
    printf("  suspend: %" PRIu64 " ok, %" PRIu64 " failed   resume: %" PRIu64 " ok, %" PRIu64
           " failed\n",
           c.ops[0], c.op_failures[0], c.ops[1], c.op_failures[1]);
    printf("  firmware commands: %" PRIu64 " issued, %" PRIu64 " failed\n", c.commands,
           c.commands_failed);
    int nnames = rte_vdpa_get_stats_names(p.dev, nullptr, 0);
    if (nnames <= 0) {
        printf("  virtq counters: not reported by the device (%d)\n", nnames);
        return;
    }
    std::vector<rte_vdpa_stat_name> names(nnames);
    rte_vdpa_get_stats_names(p.dev, names.data(), unsigned(nnames));
    uint32_t nq = 0;
    rte_vdpa_get_queue_num(p.dev, &nq);
    DevInfo info;
    if (rte_pmd_mlx5async_get_dev_info(p.dev, &info) == 0)
        nq = info.queues;
    int first = queue < 0 ? 0 : queue, last = queue < 0 ? int(nq) - 1 : queue;
    // One row per virtq, one column per counter the device names.
    std::vector<int> width(nnames);
    printf("  %-5s", "vq");
    for (int i = 0; i < nnames; i++) {
        width[i] = std::max(int(strlen(names[i].name)), 10);
        printf(" %*s", width[i], names[i].name);
    }
    printf("\n");
    std::vector<rte_vdpa_stat> st(nnames);
    for (int q = first; q <= last; q++) {
        int n = rte_vdpa_get_stats(p.dev, uint16_t(q), st.data(), unsigned(nnames));
        if (n < 0) {
            printf("  %-5d counters unavailable (%d)\n", q, n);
            continue;
        }
        std::vector<uint64_t> value(nnames);
        std::vector<bool> have(nnames);
        for (int i = 0; i < n; i++)
            if (st[i].id < unsigned(nnames)) {
                value[st[i].id] = st[i].value;
                have[st[i].id] = true;
            }
        printf("  %-5d", q);
        for (int i = 0; i < nnames; i++)
            have[i] ? printf(" %*" PRIu64, width[i], value[i]) : printf(" %*s", width[i], "-");
        printf("\n");
    }
}

void print_op(const std::vector<Port*>& ps, rte_pmd_mlx5async_op op, const OpResult& r) {
    printf("\n  %s of %zu device(s): %s, %.3f ms", op_label(op), ps.size(),
           r.ok() ? "ok" : "FAILED", r.ms);
    if (r.rc < 0)
        printf(" (%s)", strerror(-r.rc));
    else if (r.queues == 0)
        printf(" (no virtq in the state this operation applies to)");
    printf("\n  %-20s %6s %6s %6s %5s %9s %9s %9s %9s %9s %7s\n", "device", "vqs", "cmds",
           "failed", "peak", "total_ms", "prepare", "firmware", "vhost", "ideal_ms", "x_ideal");
    for (size_t i = 0; i < ps.size(); i++) {
        const auto& t = r.timings[i];
        printf("  %-20s %6u %6u %6u %5u %9.3f %9.3f %9.3f %9.3f %9.3f %7s\n", ps[i]->name.c_str(),
               t.queues, t.commands, t.failed, t.peak_inflight, ms(t.total_ns), ms(t.prepare_ns),
               ms(t.firmware_ns), ms(t.vhost_ns), ms(r.ideal_ns[i]),
               ratio(ms(t.total_ns), ms(r.ideal_ns[i])).c_str());
    }
}

void print_cycle_line(uint32_t i, uint32_t n, const OpResult& s, const OpResult& r) {
    printf("  cycle %u/%u: suspend %.3f ms (%u vqs, %u cmds, %u failed%s)  resume %.3f ms (%u vqs, "
           "%u cmds, %u failed%s)  %s\n",
           i, n, s.ms, s.queues, s.commands, s.failed, s.rc < 0 ? ", error" : "", r.ms, r.queues,
           r.commands, r.failed, r.rc < 0 ? ", error" : "", s.ok() && r.ok() ? "ok" : "FAILED");
}

void print_cycle_summary(const std::vector<Port*>& ps, const CycleRun& run) {
    std::string what = ps.size() == 1 ? ps[0]->name : std::to_string(ps.size()) + " devices";
    banner("cycles on %s", what.c_str());
    printf("  strategy: %s  max_inflight: %u  virtqs: %u  cycles: %u  failed cycles: %u\n",
           run.key.strategy.c_str(), run.key.max_inflight, run.key.queues, run.cycles,
           run.failed_cycles);
    printf("  %-9s %6s %6s %9s %9s %9s %9s %9s %12s\n", "operation", "count", "failed", "min_ms",
           "median_ms", "p99_ms", "max_ms", "ideal_ms", "median/ideal");
    for (int op = 0; op < 2; op++) {
        SummaryStats st = summarize(run.ops[op]);
        if (st.samples == 0) {
            printf("  %-9s %6zu %6" PRIu64 "   (no successful sample)\n", op_label(op), st.samples,
                   st.failures);
            continue;
        }
        char ideal[32] = "n/a";
        if (st.ideal > 0)
            snprintf(ideal, sizeof(ideal), "%.3f", st.ideal);
        printf("  %-9s %6zu %6" PRIu64 " %9.3f %9.3f %9.3f %9.3f %9s %12s\n", op_label(op),
               st.samples, st.failures, st.min, st.median, st.p99, st.max, ideal,
               ratio(st.median, st.ideal).c_str());
    }
    for (Port* p : ps)
        print_latency(*p);
}

void print_strategy_table(const std::vector<StrategyColumn>& cols) {
    if (cols.empty())
        return;
    printf("\n| operation |");
    for (const auto& c : cols)
        printf(" %s |", c.strategy.c_str());
    printf(" reduction |\n|---|");
    for (size_t i = 0; i < cols.size(); i++)
        printf("---|");
    printf("---|\n");
    for (int op = 0; op < 2; op++) {
        printf("| %-9s |", op_label(op));
        for (const auto& c : cols) {
            if (c.ops[op].samples)
                printf(" %.3f ms |", c.ops[op].median);
            else
                printf(" failed |");
        }
        // Reduction: median of the first strategy over median of the last.
        const auto &a = cols.front().ops[op], &b = cols.back().ops[op];
        if (cols.size() > 1 && a.samples && b.samples && b.median > 0)
            printf(" %.1fx |\n", a.median / b.median);
        else
            printf(" n/a |\n");
    }
    printf("(medians of wall-clock time per call; reduction = %s / %s)\n",
           cols.front().strategy.c_str(), cols.back().strategy.c_str());
}

namespace {

// A summary's numbers; times are null without a sample, ideals null on
// hardware (no modelled latency).
void set_stats(Json& entry, const SummaryStats& st) {
    auto ms_or_null = [&](double v) { return st.samples ? Json(v) : Json(nullptr); };
    entry["samples"] = uint64_t(st.samples);
    entry["min_ms"] = ms_or_null(st.min);
    entry["median_ms"] = ms_or_null(st.median);
    entry["p99_ms"] = ms_or_null(st.p99);
    entry["max_ms"] = ms_or_null(st.max);
    entry["ideal_ms"] = st.ideal > 0 ? Json(st.ideal) : Json(nullptr);
    entry["measured_over_ideal"] =
        st.ideal > 0 && st.samples ? Json(st.median / st.ideal) : Json(nullptr);
    entry["failures"] = st.failures;
}

}  // namespace

int write_json(App& app, const std::string& file) {
    RunInfo ri;
    if (app.run_info)
        ri = *app.run_info;
    Json doc = {{"tool", "vdpa-testpmd"},
                {"schema_version", 3},
                {"profile", ri.profile},
                {"devices", uint64_t(app.ports.size())},
                {"queues", ri.queues},
                {"max_inflight", ri.max_inflight},
                {"fw_max_inflight", ri.fw_max_inflight},
                {"modify_ms", ri.modify_ms},
                {"query_ms", ri.query_ms},
                {"cycles_ok", app.cycles_ok},
                {"cycles_failed", app.cycles_failed}};
    Json results = Json::array();
    for (const auto& [key, sets] : app.results) {
        for (int op = 0; op < 2; op++) {
            Json entry = {{"strategy", key.strategy},
                          {"op", op_label(op)},
                          {"devices", key.devices},
                          {"queues", key.queues},
                          {"max_inflight", key.max_inflight}};
            set_stats(entry, summarize(sets[op]));
            results.push_back(std::move(entry));
        }
    }
    doc["results"] = std::move(results);
    std::vector<Port*> ports;
    for (auto& p : app.ports)
        ports.push_back(p.get());
    doc["ledger"] = json_ledger(ports);
    doc["latency"] = json_latency(ports);
    int rc = write_json_file(doc, file, "results");
    if (rc == 0)
        printf("results written to %s\n", file.c_str());
    return rc;
}

}  // namespace vdpa_testpmd
