// vdpa-testpmd: Chrome trace event output (Trace Event Format, JSON object
// form: {"traceEvents": [...]}, timestamps in microseconds).
#include "trace.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "app.hpp"
#include "json.hpp"

namespace vdpa_testpmd {

namespace {

// PRM opcode names (PRM names verbatim, as drivers/common/prm/opcodes.hpp).
const char* opcode_name(uint16_t op) {
    switch (op) {
    case 0x100: return "QUERY_HCA_CAP";
    case 0x200: return "CREATE_MKEY";
    case 0x202: return "DESTROY_MKEY";
    case 0x800: return "ALLOC_PD";
    case 0x801: return "DEALLOC_PD";
    case 0x802: return "ALLOC_UAR";
    case 0x803: return "DEALLOC_UAR";
    case 0x816: return "ALLOC_TRANSPORT_DOMAIN";
    case 0x817: return "DEALLOC_TRANSPORT_DOMAIN";
    case 0x912: return "CREATE_TIS";
    case 0x914: return "DESTROY_TIS";
    case 0xa00: return "CREATE_GENERAL_OBJECT";
    case 0xa01: return "MODIFY_GENERAL_OBJECT";
    case 0xa02: return "QUERY_GENERAL_OBJECT";
    case 0xa03: return "DESTROY_GENERAL_OBJECT";
    case 0xa08: return "CREATE_UMEM";
    case 0xa0a: return "DESTROY_UMEM";
    }
    return "UNKNOWN_OPCODE";
}

// PRM command status names; 0xff is the API's "timed out / no answer".
const char* status_name(uint8_t st) {
    switch (st) {
    case 0x0: return "OK";
    case 0x1: return "INT_ERR";
    case 0x2: return "BAD_OP_ERR";
    case 0x3: return "BAD_PARAM_ERR";
    case 0x4: return "BAD_SYS_STATE_ERR";
    case 0x5: return "BAD_RES_ERR";
    case 0x6: return "RES_BUSY";
    case 0x7: return "NOT_READY";
    case 0x8: return "LIM_ERR";
    case 0x9: return "BAD_RES_STATE_ERR";
    case 0xa: return "IX_ERR";
    case 0xf: return "NO_RES_ERR";
    case 0x10: return "BAD_QP_STATE_ERR";
    case 0x30: return "BAD_PKT_ERR";
    case 0x40: return "BAD_SIZE_OUTS_CQES_ERR";
    case 0x50: return "BAD_INP_LEN_ERR";
    case 0x51: return "BAD_OUTP_LEN_ERR";
    case 0xff: return "TIMEOUT";
    }
    return "UNKNOWN_STATUS";
}

const char* op_name(unsigned op) {
    return op == RTE_PMD_MLX5ASYNC_OP_SUSPEND ? "suspend"
           : op == RTE_PMD_MLX5ASYNC_OP_RESUME ? "resume"
                                               : "other";
}

// What a command's batch was for (rte_pmd_mlx5async_batch).
const char* batch_name(unsigned b) {
    switch (b) {
    case RTE_PMD_MLX5ASYNC_BATCH_SUSPEND: return "suspend";
    case RTE_PMD_MLX5ASYNC_BATCH_RESUME: return "resume";
    case RTE_PMD_MLX5ASYNC_BATCH_SETUP: return "setup";
    case RTE_PMD_MLX5ASYNC_BATCH_MEMORY: return "memory";
    case RTE_PMD_MLX5ASYNC_BATCH_DIRTY_LOG: return "dirty_log";
    case RTE_PMD_MLX5ASYNC_BATCH_COUNTERS: return "counters";
    case RTE_PMD_MLX5ASYNC_BATCH_TEARDOWN: return "teardown";
    case RTE_PMD_MLX5ASYNC_BATCH_RECOVERY: return "recovery";
    case RTE_PMD_MLX5ASYNC_BATCH_QUERY: return "query";
    }
    return "other";
}

}  // namespace

void Trace::start(const std::vector<Port*>& ports) {
    events_.clear();
    tids_.clear();
    commands_issued_ = op_spans_ = other_spans_ = app_spans_ = 0;
    active_ = true;
    t0_ns_ = now_ns();
    for (Port* p : ports)
        enable(*p);
}

void Trace::enable(Port& p) {
    int rc = rte_pmd_mlx5async_trace_enable(p.dev, true);
    if (rc < 0) {
        printf("error: %s: cannot enable command tracing (%d)\n", p.name.c_str(), rc);
        return;
    }
    // Spans recorded before this start belong to no trace of ours.
    rte_pmd_mlx5async_cmd_span buf[256];
    while (rte_pmd_mlx5async_trace_read(p.dev, buf, 256) == 256) {
    }
}

void Trace::stop(const std::vector<Port*>& ports) {
    if (!active_)
        return;
    for (Port* p : ports) {
        drain(*p);
        rte_pmd_mlx5async_trace_enable(p->dev, false);
    }
    active_ = false;
}

void Trace::drain(Port& p) {
    rte_pmd_mlx5async_cmd_span buf[256];
    for (;;) {
        int n = rte_pmd_mlx5async_trace_read(p.dev, buf, 256);
        if (n < 0) {
            printf("error: %s: cannot read the command trace (%d)\n", p.name.c_str(), n);
            return;
        }
        for (int i = 0; i < n; i++)
            add_span(p, buf[i]);
        if (n < 256)
            return;
    }
}

void Trace::add_span(const Port& p, const rte_pmd_mlx5async_cmd_span& s) {
    int tid = s.queue >= 0 ? 1 + s.queue : kOtherTid;
    if (s.op <= RTE_PMD_MLX5ASYNC_OP_RESUME)
        op_spans_++;
    else
        other_spans_++;
    char opcode[8];
    snprintf(opcode, sizeof(opcode), "0x%x", s.opcode);
    Json args = {{"status", status_name(s.status)}, {"status_code", s.status},
                 {"opcode", opcode},                 {"obj_id", s.obj_id},
                 {"queue", s.queue},                 {"batch", batch_name(s.op)}};
    uint64_t end = std::max(s.end_ns, s.submit_ns);
    events_.push_back({opcode_name(s.opcode), "fw", std::move(args), p.index + 1, tid, s.submit_ns,
                       end - s.submit_ns});
    if (tids_.size() <= p.index)
        tids_.resize(p.index + 1);
    auto& t = tids_[p.index];
    if (std::find(t.begin(), t.end(), tid) == t.end())
        t.push_back(tid);
}

void Trace::record_op(const std::vector<Port*>& ps, rte_pmd_mlx5async_op op,
                      uint64_t call_begin, uint64_t call_end,
                      const std::vector<rte_pmd_mlx5async_timing>& timings,
                      const std::vector<uint64_t>& ideal_ns) {
    if (!active_)
        return;
    for (size_t i = 0; i < ps.size(); i++) {
        Port& p = *ps[i];
        size_t before = events_.size();
        drain(p);
        const auto& t = timings[i];
        commands_issued_ += t.commands;
        // The PMD reports phase durations; place the firmware phase at the
        // first command of this call, prepare just before it, vhost after,
        // all inside the call so that the track nests.
        uint64_t fw_begin = UINT64_MAX;
        for (size_t e = before; e < events_.size(); e++) {
            if (events_[e].ts_ns < call_begin || events_[e].ts_ns > call_end)
                continue;  // a batch of the driver's own (vhost events)
            fw_begin = std::min(fw_begin, events_[e].ts_ns);
            app_spans_++;
        }
        if (fw_begin == UINT64_MAX)
            fw_begin = call_begin + t.prepare_ns;
        auto clamp = [&](uint64_t v) { return std::clamp(v, call_begin, call_end); };
        uint64_t fw_end = clamp(fw_begin + t.firmware_ns);
        fw_begin = clamp(fw_begin);
        uint64_t prep_begin = clamp(fw_begin >= t.prepare_ns ? fw_begin - t.prepare_ns : 0);
        uint64_t vhost_end = clamp(fw_end + t.vhost_ns);
        Json args = {{"queues", t.queues},   {"commands", t.commands},
                     {"failed", t.failed},   {"peak_inflight", t.peak_inflight},
                     {"ideal_ms", double(ideal_ns[i]) / 1e6}};
        unsigned pid = p.index + 1;
        const Json none = Json::object();
        events_.push_back({op_name(op), "op", std::move(args), pid, 0, call_begin,
                           call_end - call_begin});
        events_.push_back({"prepare", "phase", none, pid, 0, prep_begin, fw_begin - prep_begin});
        events_.push_back({"firmware", "phase", none, pid, 0, fw_begin, fw_end - fw_begin});
        events_.push_back({"vhost", "phase", none, pid, 0, fw_end, vhost_end - fw_end});
        if (tids_.size() <= p.index)
            tids_.resize(p.index + 1);
        if (std::find(tids_[p.index].begin(), tids_[p.index].end(), 0) == tids_[p.index].end())
            tids_[p.index].push_back(0);
    }
}

// The ledger's last stop and start of the device (ledger_report.hpp), each
// on its own track: a span per record, and inside it a span per phase from
// the phase before.
void Trace::add_ledger(const Port& p) {
    rte_pmd_mlx5async_ledger l{};
    if (rte_pmd_mlx5async_get_ledger(p.dev, &l) < 0)
        return;
    const unsigned halves[3] = {RTE_PMD_MLX5ASYNC_LEDGER_STOP_REQUESTED,
                                RTE_PMD_MLX5ASYNC_LEDGER_START_REQUESTED,
                                RTE_PMD_MLX5ASYNC_LEDGER_PHASES};
    for (int h = 0; h < 2; h++) {
        uint64_t first = l.mono_ns[halves[h]], last = first;
        if (first < t0_ns_)
            continue;  // before this trace started, or never
        uint64_t prev = first;
        for (unsigned i = halves[h] + 1; i < halves[h + 1]; i++) {
            uint64_t t = l.mono_ns[i];
            if (!t || t < prev)
                continue;
            auto name = rte_pmd_mlx5async_ledger_phase_name(rte_pmd_mlx5async_ledger_phase(i));
            events_.push_back({name, "ledger", Json::object(), p.index + 1, kLedgerTid + h, prev,
                               t - prev});
            prev = last = t;
        }
        events_.push_back({h == 0 ? "device stop" : "device start", "ledger", Json::object(),
                           p.index + 1, kLedgerTid + h, first, last - first});
        if (tids_.size() <= p.index)
            tids_.resize(p.index + 1);
        auto& t = tids_[p.index];
        if (std::find(t.begin(), t.end(), kLedgerTid + h) == t.end())
            t.push_back(kLedgerTid + h);
    }
}

namespace {

// Perfetto names the tracks from metadata events ("M").
Json metadata(unsigned pid, int tid, const char* what, Json args) {
    return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

// Trace Event Format times are microseconds. Whole nanoseconds / 1000
// written as the shortest decimal that reads back to the same double:
// spans that touch in nanoseconds still touch once read back.
double micros(int64_t ns) { return double(ns) / 1e3; }

}  // namespace

void Trace::add_track_names(Json& events, const std::vector<Port*>& ports) const {
    for (size_t pid = 0; pid < tids_.size(); pid++) {
        if (tids_[pid].empty())
            continue;
        unsigned id = unsigned(pid + 1);
        events.push_back(metadata(id, 0, "process_name",
                                  {{"name", ports.size() > pid ? ports[pid]->name : "device"}}));
        for (int tid : tids_[pid]) {
            std::string n = tid == 0 ? "driver phases"
                            : tid == kOtherTid ? "device commands"
                            : tid == kLedgerTid ? "ledger: device stop"
                            : tid == kLedgerTid + 1 ? "ledger: device start"
                                                    : "vq " + std::to_string(tid - 1);
            events.push_back(metadata(id, tid, "thread_name", {{"name", n}}));
            events.push_back(metadata(id, tid, "thread_sort_index", {{"sort_index", tid}}));
        }
    }
}

int Trace::save(const std::string& file, const std::vector<Port*>& ports) {
    if (active_)
        for (Port* p : ports)
            drain(*p);
    const size_t before_ledger = events_.size();
    for (Port* p : ports)
        add_ledger(*p);
    Json events = Json::array();
    add_track_names(events, ports);
    for (const Event& e : events_)
        events.push_back({{"ph", "X"},
                          {"name", e.name},
                          {"cat", e.cat},
                          {"pid", e.pid},
                          {"tid", e.tid},
                          {"ts", micros(int64_t(e.ts_ns) - int64_t(t0_ns_))},
                          {"dur", micros(int64_t(e.dur_ns))},
                          {"args", e.args}});
    events_.resize(before_ledger);  // read anew at the next save
    Json doc = {{"displayTimeUnit", "ms"},
                {"otherData",
                 {{"tool", "vdpa-testpmd"},
                  {"command_spans", op_spans_ + other_spans_},
                  {"app_command_spans", app_spans_},
                  {"commands_issued", commands_issued_}}},
                {"traceEvents", std::move(events)}};
    int rc = write_json_file(doc, file, "trace file");
    if (rc < 0)
        return rc;
    printf("trace: %" PRIu64 " command spans (%" PRIu64 " in suspend/resume batches, %" PRIu64
           " in the app's calls, which issued %" PRIu64 " commands) written to %s\n",
           op_spans_ + other_spans_, op_spans_, app_spans_, commands_issued_, file.c_str());
    return 0;
}

}  // namespace vdpa_testpmd
