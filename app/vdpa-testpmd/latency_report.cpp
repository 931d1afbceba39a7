#include "latency_report.hpp"

#include <cinttypes>
#include <cstdio>

namespace vdpa_testpmd {
namespace {

using CmdLatency = rte_pmd_mlx5async_cmd_latency;
using FwError = rte_pmd_mlx5async_fw_error;

// Every command type the device ran; empty (and rc < 0) when it cannot say.
std::vector<CmdLatency> latencies(Port& p, int& rc) {
    std::vector<CmdLatency> v;
    rc = rte_pmd_mlx5async_get_cmd_latency(p.dev, nullptr, 0);
    while (rc > 0) {
        v.resize(size_t(rc));
        rc = rte_pmd_mlx5async_get_cmd_latency(p.dev, v.data(), unsigned(v.size()));
        if (rc >= 0 && size_t(rc) <= v.size()) {
            v.resize(size_t(rc));
            return v;
        }
    }
    return {};
}

std::vector<FwError> fw_errors(Port& p, uint64_t& unkeyed) {
    std::vector<FwError> v;
    int rc = rte_pmd_mlx5async_get_fw_errors(p.dev, nullptr, 0, &unkeyed);
    while (rc > 0) {
        v.resize(size_t(rc));
        rc = rte_pmd_mlx5async_get_fw_errors(p.dev, v.data(), unsigned(v.size()), &unkeyed);
        if (rc >= 0 && size_t(rc) <= v.size()) {
            v.resize(size_t(rc));
            return v;
        }
    }
    return {};
}

double us(uint64_t ns) { return double(ns) / 1e3; }

}  // namespace

void print_latency(Port& p) {
    int rc = 0;
    const auto lat = latencies(p, rc);
    if (rc < 0) {
        printf("error: %s: command latencies unavailable (%d)\n", p.name.c_str(), rc);
        return;
    }
    printf("\n  ######################## command latency of %s ########################\n",
           p.name.c_str());
    printf("  %-18s %10s %11s %11s %11s %11s %9s\n", "command", "count", "mean_us", "p50_us",
           "p99_us", "max_us", "timed_out");
    for (const CmdLatency& l : lat)
        printf("  %-18s %10" PRIu64 " %11.1f %11.1f %11.1f %11.1f %9" PRIu64 "\n", l.type, l.count,
               l.count ? us(l.sum_ns) / double(l.count) : 0.0, us(l.p50_ns), us(l.p99_ns),
               us(l.max_ns), l.timed_out);
    printf("  %zu command type(s); p50/p99: upper bounds of their log2 buckets\n", lat.size());
    uint64_t unkeyed = 0;
    const auto errs = fw_errors(p, unkeyed);
    if (errs.empty() && !unkeyed) {
        printf("  firmware errors: none\n");
        return;
    }
    printf("  %-18s %6s %10s %10s\n", "refused", "status", "syndrome", "count");
    for (const FwError& e : errs)
        printf("  %-18s 0x%02x %s0x%08" PRIx32 " %10" PRIu64 "\n", e.type, e.status,
               e.status ? "" : "errno ", e.syndrome, e.count);
    if (unkeyed)
        printf("  and %" PRIu64 " more beyond the kept keys\n", unkeyed);
}

Json json_latency(const std::vector<Port*>& ports) {
    Json out = Json::array();
    for (Port* p : ports) {
        int rc = 0;
        Json types = Json::array();
        for (const CmdLatency& l : latencies(*p, rc))
            types.push_back({{"type", l.type},
                             {"count", l.count},
                             {"sum_ns", l.sum_ns},
                             {"p50_ns", l.p50_ns},
                             {"p99_ns", l.p99_ns},
                             {"max_ns", l.max_ns},
                             {"timed_out", l.timed_out},
                             {"buckets", std::vector<uint64_t>(std::begin(l.buckets), std::end(l.buckets))}});
        if (rc < 0)
            continue;
        uint64_t unkeyed = 0;
        Json errs = Json::array();
        for (const FwError& e : fw_errors(*p, unkeyed))
            errs.push_back({{"type", e.type}, {"status", e.status}, {"syndrome", e.syndrome}, {"count", e.count}});
        out.push_back({{"device", p->name},
                       {"commands", std::move(types)},
                       {"fw_errors", std::move(errs)},
                       {"fw_errors_unkeyed", unkeyed}});
    }
    return out;
}

}  // namespace vdpa_testpmd
