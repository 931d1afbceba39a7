#include "ledger_report.hpp"

#include <cinttypes>
#include <cstdio>

#include "json.hpp"

namespace vdpa_testpmd {
namespace {

using Ledger = rte_pmd_mlx5async_ledger;

constexpr unsigned kStopFirst = RTE_PMD_MLX5ASYNC_LEDGER_STOP_REQUESTED;
constexpr unsigned kStartFirst = RTE_PMD_MLX5ASYNC_LEDGER_START_REQUESTED;
constexpr unsigned kPhases = RTE_PMD_MLX5ASYNC_LEDGER_PHASES;

const char* name_of(unsigned i) {
    return rte_pmd_mlx5async_ledger_phase_name(rte_pmd_mlx5async_ledger_phase(i));
}

// Milliseconds from a record's first phase to its phase i; < 0 when not reached.
double since_first(const Ledger& l, unsigned first, unsigned i) {
    if (!l.mono_ns[first] || !l.mono_ns[i] || l.mono_ns[i] < l.mono_ns[first])
        return -1;
    return double(l.mono_ns[i] - l.mono_ns[first]) / 1e6;
}

void print_half(const Ledger& l, unsigned first, unsigned end, const char* what, uint64_t seq) {
    printf("  %s #%" PRIu64 ":\n", what, seq);
    for (unsigned i = first; i < end; i++) {
        double ms = since_first(l, first, i);
        if (ms < 0)
            printf("    %-18s        -\n", name_of(i));
        else
            printf("    %-18s %8.3f ms\n", name_of(i), ms);
    }
}

}  // namespace

void print_ledger(Port& p) {
    Ledger l{};
    int rc = rte_pmd_mlx5async_get_ledger(p.dev, &l);
    if (rc < 0) {
        printf("error: %s: ledger unavailable (%d)\n", p.name.c_str(), rc);
        return;
    }
    printf("\n  ######################## ledger of %s ########################\n", p.name.c_str());
    if (l.stop_seq == 0 && l.start_seq == 0) {
        printf("  no device stop or start yet\n");
        return;
    }
    if (l.stop_seq) {
        print_half(l, kStopFirst, kStartFirst, "last stop (source side)", l.stop_seq);
        printf("    rings handed back: %u, used rings logged dirty: %u\n", l.stop_rings,
               l.logged_rings);
    }
    if (l.start_seq) {
        print_half(l, kStartFirst, kPhases, "last start (destination side)", l.start_seq);
        printf("    rings started: %u, memory regions registered: %u, host notifiers: %s\n",
               l.start_rings, l.regions_registered,
               !l.notifiers_tried ? "not set" : l.notifiers_rc == 0 ? "on" : "refused");
    }
}

Json json_ledger(const std::vector<Port*>& ports) {
    auto ns_or_null = [](uint64_t ns) { return ns ? Json(ns) : Json(nullptr); };
    Json out = Json::array();
    for (Port* p : ports) {
        Ledger l{};
        if (rte_pmd_mlx5async_get_ledger(p->dev, &l) < 0)
            continue;
        Json phases = Json::array();
        for (unsigned i = 0; i < kPhases; i++)
            phases.push_back({{"phase", name_of(i)},
                              {"mono_ns", ns_or_null(l.mono_ns[i])},
                              {"wall_ns", ns_or_null(l.wall_ns[i])}});
        out.push_back({{"device", p->name},
                       {"stop_seq", l.stop_seq},
                       {"start_seq", l.start_seq},
                       {"phases", std::move(phases)},
                       {"stop_rings", l.stop_rings},
                       {"logged_rings", l.logged_rings},
                       {"start_rings", l.start_rings},
                       {"regions_registered", l.regions_registered},
                       {"notifiers_rc", l.notifiers_tried ? Json(l.notifiers_rc) : Json(nullptr)}});
    }
    return out;
}

}  // namespace vdpa_testpmd
