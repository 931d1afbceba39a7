// Telemetry endpoints (dpdk-telemetry.py, or the EAL telemetry socket):
//   /vdpa_mlx5async/list            probed devices
//   /vdpa_mlx5async/info,<device>   backend, strategy, throttle, vhost id
//                                   and the driver's own socket,
//                                   features offered and negotiated, MTUs,
//                                   last suspend/resume timing
//   /vdpa_mlx5async/vqs,<device>    per virtq with an object: index, PRM
//                                   state, hw indexes (RDY ones queried from
//                                   the device: live 1; others saved: live 0),
//                                   errors, interrupts, ARP and announce
//                                   frames sent (parallel arrays: DPDK 22.11
//                                   dicts hold arrays, not dicts)
//   /vdpa_mlx5async/ledger,<device> the downtime ledger: when each phase of
//                                   the last stop and start happened
//                                   (core/ledger.hpp), monotonic and wall ns
//   /vdpa_mlx5async/announce,<device> the device's own announce
//                                   (core/announcer.hpp): its MACs, rounds,
//                                   SEND_RARP requests, the SQ's frames;
//                                   on the emulator, the wire's frames by
//                                   type
//   /vdpa_mlx5async/latency,<device> per command type the device ran
//                                   (create_virtq, query_virtq, create_mkey
//                                   ...): count, sum, max, p50 and p99 (the
//                                   upper bounds of their log2 buckets), the
//                                   timed out, and each type's buckets
//                                   (buckets_<type>: bucket b counts
//                                   [2^b, 2^(b+1)) ns)
//   /vdpa_mlx5async/fw_errors,<device> refused commands per type, PRM status
//                                   and syndrome (status 0: the call's errno)
#include <rte_common.h>
#include <rte_telemetry.h>
#include <rte_vhost.h>

#include <cstring>
#include <span>
#include <string>

#include "common/prm/status.hpp"
#include "pmd_device.hpp"

namespace mlx5async::pmd {
namespace {

PmdDevice* device_param(const char* params) {
    return params && *params ? find_device_by_name(params) : nullptr;
}

int tel_list(const char*, const char*, rte_tel_data* d) {
    rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
    for (PmdDevice* p : all_devices()) rte_tel_data_add_array_string(d, p->core->name().c_str());
    return 0;
}

void add_timing(rte_tel_data* d, const char* prefix, const core::Device& c, core::Op op) {
    const core::OpTiming t = c.last_timing(op);
    std::string p(prefix);
    rte_tel_data_add_dict_u64(d, (p + "_total_ns").c_str(), t.total_ns);
    rte_tel_data_add_dict_u64(d, (p + "_firmware_ns").c_str(), t.firmware_ns);
    rte_tel_data_add_dict_u64(d, (p + "_vhost_ns").c_str(), t.vhost_ns);
    rte_tel_data_add_dict_u64(d, (p + "_queues").c_str(), t.queues);
    rte_tel_data_add_dict_u64(d, (p + "_commands").c_str(), t.commands);
    rte_tel_data_add_dict_u64(d, (p + "_failed").c_str(), t.failed);
    rte_tel_data_add_dict_u64(d, (p + "_peak_inflight").c_str(), t.peak_inflight);
}

int tel_info(const char*, const char* params, rte_tel_data* d) {
    PmdDevice* p = device_param(params);
    if (!p) return -EINVAL;
    const core::Device& c = *p->core;
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_string(d, "name", c.name().c_str());
    rte_tel_data_add_dict_string(d, "backend", c.backend().c_str());
    rte_tel_data_add_dict_string(d, "backend_device", c.backend_device().c_str());
    rte_tel_data_add_dict_string(d, "strategy", core::strategy_name(c.config().strategy));
    rte_tel_data_add_dict_u64(d, "max_inflight", c.config().max_inflight);
    auto health = p->core->command_health();
    rte_tel_data_add_dict_u64(d, "unanswered_cmds", health.unanswered);
    rte_tel_data_add_dict_u64(d, "unsure_virtqs", health.unsure_virtqs);
    rte_tel_data_add_dict_u64(d, "max_virtqs", c.max_virtqs());
    rte_tel_data_add_dict_int(d, "vid", p->vid.load());
    // The socket the driver serves the device on (devarg vhost_socket; "":
    // the application's).
    rte_tel_data_add_dict_string(d, "vhost_socket", c.config().vhost_socket.c_str());
    rte_tel_data_add_dict_u64(d, "features", c.features());
    rte_tel_data_add_dict_u64(d, "port_mtu", c.port_mtu());
    // What the frontend negotiated and the MTU it set (VHOST_USER_NET_SET_MTU).
    uint64_t negotiated = 0;
    uint16_t mtu = 0;
    if (const int vid = p->vid.load(); vid >= 0) {
        (void)rte_vhost_get_negotiated_features(vid, &negotiated);
        (void)rte_vhost_get_mtu(vid, &mtu);
    }
    rte_tel_data_add_dict_u64(d, "negotiated_features", negotiated);
    rte_tel_data_add_dict_u64(d, "vhost_mtu", mtu);
    auto irq = c.irq_stats();
    rte_tel_data_add_dict_string(d, "event_mode", irq.enabled ? "irq" : "none");
    rte_tel_data_add_dict_u64(d, "irq_events", irq.events);
    rte_tel_data_add_dict_u64(d, "irq_completions", irq.completions);
    rte_tel_data_add_dict_u64(d, "irq_calls", irq.calls);
    rte_tel_data_add_dict_u64(d, "irq_no_callfd", irq.no_callfd);
    rte_tel_data_add_dict_u64(d, "irq_callfd_full", irq.callfd_full);
    add_timing(d, "suspend", c, core::Op::Suspend);
    add_timing(d, "resume", c, core::Op::Resume);
    return 0;
}

int tel_vqs(const char*, const char* params, rte_tel_data* d) {
    PmdDevice* p = device_param(params);
    if (!p) return -EINVAL;
    constexpr int kCols = 10;
    rte_tel_data* cols[kCols] = {};
    const char* names[kCols] = {"index", "state", "hw_available_index", "hw_used_index", "live",
                                "errors", "interrupts", "unsure", "arp_frames", "announce_frames"};
    for (auto& col : cols) {
        col = rte_tel_data_alloc();
        if (!col) {
            for (auto* c : cols) rte_tel_data_free(c);
            return -ENOMEM;
        }
        rte_tel_data_start_array(col, RTE_TEL_U64_VAL);
    }
    for (const auto& v : p->core->query_vq_info()) {
        if (v.phase == core::VqPhase::Absent) continue;
        rte_tel_data_add_array_u64(cols[0], v.index);
        rte_tel_data_add_array_u64(cols[1], v.fw_state);
        rte_tel_data_add_array_u64(cols[2], v.hw_available_index);
        rte_tel_data_add_array_u64(cols[3], v.hw_used_index);
        rte_tel_data_add_array_u64(cols[4], v.live);
        rte_tel_data_add_array_u64(cols[5], v.errors);
        rte_tel_data_add_array_u64(cols[6], p->core->irq_calls(v.index));
        rte_tel_data_add_array_u64(cols[7], v.unsure);
        rte_tel_data_add_array_u64(cols[8], v.arp_frames);
        rte_tel_data_add_array_u64(cols[9], v.announce_frames);
    }
    rte_tel_data_start_dict(d);
    for (int i = 0; i < kCols; i++) rte_tel_data_add_dict_container(d, names[i], cols[i], 0);
    return 0;
}

uint64_t span_ns(const core::LedgerSnapshot& s, core::LedgerPhase a, core::LedgerPhase b) {
    uint64_t x = s.at[size_t(a)].mono_ns, y = s.at[size_t(b)].mono_ns;
    return x && y >= x ? y - x : 0;
}

int tel_ledger(const char*, const char* params, rte_tel_data* d) {
    using P = core::LedgerPhase;
    PmdDevice* p = device_param(params);
    if (!p) return -EINVAL;
    const auto s = p->core->ledger().snapshot();
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_u64(d, "stop_seq", s.stop_seq);
    rte_tel_data_add_dict_u64(d, "start_seq", s.start_seq);
    for (size_t i = 0; i < core::kLedgerPhases; i++) {
        std::string n = core::ledger_phase_name(P(i));
        rte_tel_data_add_dict_u64(d, (n + "_ns").c_str(), s.at[i].mono_ns);
        rte_tel_data_add_dict_u64(d, (n + "_wall_ns").c_str(), s.at[i].wall_ns);
    }
    rte_tel_data_add_dict_u64(d, "stop_ns", span_ns(s, P::StopRequested, P::UsedRingsLogged));
    rte_tel_data_add_dict_u64(d, "suspend_ns", span_ns(s, P::SuspendIssued, P::SuspendDone));
    rte_tel_data_add_dict_u64(d, "start_ns", span_ns(s, P::StartRequested, P::AllReady));
    // Of the start, guest-memory registration (0 when the table was reused).
    rte_tel_data_add_dict_u64(d, "memory_ns", span_ns(s, P::StartRequested, P::MemoryRegistered));
    rte_tel_data_add_dict_u64(d, "conf_ns", span_ns(s, P::StartRequested, P::ConfReturned));
    rte_tel_data_add_dict_u64(d, "stop_rings", s.stop_rings);
    rte_tel_data_add_dict_u64(d, "logged_rings", s.logged_rings);
    rte_tel_data_add_dict_u64(d, "start_rings", s.start_rings);
    rte_tel_data_add_dict_u64(d, "regions_registered", s.regions);
    rte_tel_data_add_dict_int(d, "notifiers_rc", s.notifiers_rc);
    rte_tel_data_add_dict_u64(d, "notifiers_tried", s.notifiers_tried);
    // A start that failed after dev_conf returned (0 and "": none).
    rte_tel_data_add_dict_int(d, "start_rc", s.start_rc);
    rte_tel_data_add_dict_string(d, "start_error", s.start_error.c_str());
    return 0;
}

int tel_announce(const char*, const char* params, rte_tel_data* d) {
    PmdDevice* p = device_param(params);
    if (!p) return -EINVAL;
    const core::Device& c = *p->core;
    rte_tel_data_start_dict(d);
    const auto a = c.announce_stats();
    rte_tel_data_add_dict_u64(d, "on", a.has_value());
    if (a) {
        rte_tel_data_add_dict_string(d, "vport_mac", core::mac_string(a->vport_mac).c_str());
        rte_tel_data_add_dict_string(d, "frontend_mac", core::mac_string(a->frontend_mac).c_str());
        rte_tel_data_add_dict_u64(d, "starts", a->starts);
        rte_tel_data_add_dict_u64(d, "rounds", a->rounds);
        rte_tel_data_add_dict_u64(d, "rounds_left", a->rounds_left);
        rte_tel_data_add_dict_u64(d, "stopped_early", a->stopped_early);
        rte_tel_data_add_dict_u64(d, "requests", a->requests);
        rte_tel_data_add_dict_u64(d, "posted", a->sq.posted);
        rte_tel_data_add_dict_u64(d, "completed", a->sq.completed);
        rte_tel_data_add_dict_u64(d, "errors", a->sq.errors);
        rte_tel_data_add_dict_u64(d, "full", a->sq.full);
    }
    if (const auto w = c.wire_counts()) {
        rte_tel_data_add_dict_u64(d, "wire_frames", w->frames);
        rte_tel_data_add_dict_u64(d, "wire_bytes", w->bytes);
        rte_tel_data_add_dict_u64(d, "wire_rarp", w->rarp);
        rte_tel_data_add_dict_u64(d, "wire_arp", w->arp);
        rte_tel_data_add_dict_u64(d, "wire_ipv4", w->ipv4);
        rte_tel_data_add_dict_u64(d, "wire_ipv6", w->ipv6);
        rte_tel_data_add_dict_u64(d, "wire_other", w->other);
        rte_tel_data_add_dict_u64(d, "wire_pcap_errors", w->pcap_errors);
    }
    return 0;
}

// Fresh arrays of `type` for the columns; false (all freed) when one fails.
bool alloc_columns(std::span<rte_tel_data*> cols, std::span<const rte_tel_value_type> types) {
    for (size_t i = 0; i < cols.size(); i++) {
        cols[i] = rte_tel_data_alloc();
        if (!cols[i]) {
            for (auto* c : cols) rte_tel_data_free(c);
            return false;
        }
        rte_tel_data_start_array(cols[i], types[i]);
    }
    return true;
}

int tel_latency(const char*, const char* params, rte_tel_data* d) {
    PmdDevice* p = device_param(params);
    if (!p) return -EINVAL;
    const devx::CommandStats s = p->core->command_stats();
    constexpr int kCols = 7;
    rte_tel_data* cols[kCols] = {};
    const char* names[kCols] = {"type", "count", "sum_ns", "max_ns", "p50_ns", "p99_ns", "timed_out"};
    const rte_tel_value_type types[kCols] = {RTE_TEL_STRING_VAL, RTE_TEL_U64_VAL, RTE_TEL_U64_VAL,
                                            RTE_TEL_U64_VAL,    RTE_TEL_U64_VAL, RTE_TEL_U64_VAL,
                                            RTE_TEL_U64_VAL};
    if (!alloc_columns(cols, types)) return -ENOMEM;
    rte_tel_data_start_dict(d);
    for (size_t i = 0; i < devx::kCmdTypes; i++) {
        const devx::LatencyHistogram& h = s.latency[i];
        if (!h.count && !h.timed_out) continue;
        const std::string type = devx::cmd_type_name(devx::CmdType::at(i));
        rte_tel_data_add_array_string(cols[0], type.c_str());
        rte_tel_data_add_array_u64(cols[1], h.count);
        rte_tel_data_add_array_u64(cols[2], h.sum_ns);
        rte_tel_data_add_array_u64(cols[3], h.max_ns);
        rte_tel_data_add_array_u64(cols[4], h.quantile_ns(0.50));
        rte_tel_data_add_array_u64(cols[5], h.quantile_ns(0.99));
        rte_tel_data_add_array_u64(cols[6], h.timed_out);
        rte_tel_data* b = rte_tel_data_alloc();
        if (!b) continue;
        rte_tel_data_start_array(b, RTE_TEL_U64_VAL);
        for (uint64_t n : h.buckets) rte_tel_data_add_array_u64(b, n);
        rte_tel_data_add_dict_container(d, ("buckets_" + type).c_str(), b, 0);
    }
    for (int i = 0; i < kCols; i++) rte_tel_data_add_dict_container(d, names[i], cols[i], 0);
    return 0;
}

int tel_fw_errors(const char*, const char* params, rte_tel_data* d) {
    PmdDevice* p = device_param(params);
    if (!p) return -EINVAL;
    const devx::CommandStats s = p->core->command_stats();
    constexpr int kCols = 5;
    rte_tel_data* cols[kCols] = {};
    const char* names[kCols] = {"type", "status", "status_name", "syndrome", "count"};
    const rte_tel_value_type types[kCols] = {RTE_TEL_STRING_VAL, RTE_TEL_U64_VAL, RTE_TEL_STRING_VAL,
                                            RTE_TEL_U64_VAL, RTE_TEL_U64_VAL};
    if (!alloc_columns(cols, types)) return -ENOMEM;
    for (const devx::FwErrorCount& e : s.fw_errors) {
        rte_tel_data_add_array_string(cols[0], devx::cmd_type_name(e.type).c_str());
        rte_tel_data_add_array_u64(cols[1], e.status);
        rte_tel_data_add_array_string(cols[2], e.status ? prm::status_name(e.status) : "SYSTEM");
        rte_tel_data_add_array_u64(cols[3], e.syndrome);
        rte_tel_data_add_array_u64(cols[4], e.count);
    }
    rte_tel_data_start_dict(d);
    for (int i = 0; i < kCols; i++) rte_tel_data_add_dict_container(d, names[i], cols[i], 0);
    rte_tel_data_add_dict_u64(d, "unkeyed", s.fw_errors_unkeyed);
    return 0;
}

}  // namespace

RTE_INIT(mlx5async_telemetry_init) {
    rte_telemetry_register_cmd("/vdpa_mlx5async/list", tel_list,
                               "Returns the probed mlx5async vDPA devices.");
    rte_telemetry_register_cmd("/vdpa_mlx5async/info", tel_info,
                               "Device backend, strategy, throttle, last suspend/resume timing. "
                               "Parameters: device name");
    rte_telemetry_register_cmd("/vdpa_mlx5async/vqs", tel_vqs,
                               "Per-virtq state, hw indexes (RDY: live), errors and interrupts. "
                               "Parameters: device name");
    rte_telemetry_register_cmd("/vdpa_mlx5async/ledger", tel_ledger,
                               "The downtime ledger of the last device stop and start. "
                               "Parameters: device name");
    rte_telemetry_register_cmd("/vdpa_mlx5async/announce", tel_announce,
                               "The device's own RARP announce and what it sent to the network. "
                               "Parameters: device name");
    rte_telemetry_register_cmd("/vdpa_mlx5async/latency", tel_latency,
                               "Firmware command latency histograms per command type. "
                               "Parameters: device name");
    rte_telemetry_register_cmd("/vdpa_mlx5async/fw_errors", tel_fw_errors,
                               "Refused firmware commands per type, status and syndrome. "
                               "Parameters: device name");
}

}  // namespace mlx5async::pmd
