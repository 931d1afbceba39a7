// vdpa-testpmd: shared state of the application.
//
// The app drives mlx5async vDPA devices through the public API only:
// rte_vhost / rte_vdpa and include/mlx5async/rte_pmd_mlx5async.h.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <rte_pmd_mlx5async.h>

struct cmdline;  // DPDK cmdline library

namespace vdpa_testpmd {

class Trace;

using DevInfo = struct rte_pmd_mlx5async_dev_info;
using VqInfo = struct rte_pmd_mlx5async_vq_info;

// Command-line options after the EAL ones ("--" separated).
struct Options {
    std::string iface;             // socket prefix: <iface>0, <iface>1 ...
    bool client = false;           // vhost-user client mode
    bool interactive = false;      // -i
    std::string cmdline_file;      // run these commands first
    bool auto_start = false;       // attach every device at start
    uint32_t cycles = 0;           // suspend/resume cycles to run
    uint32_t interval_ms = 0;      // pause between cycles
    std::string json_file;         // results
    std::string trace_file;        // Chrome trace events
    uint32_t stats_period_s = 0;   // periodic stats (non-interactive)
    uint32_t wait_ready_s = 0;     // wait for the frontend before cycles
    bool per_cycle = false;        // print one line per cycle
    std::vector<rte_pmd_mlx5async_strategy> strategies;  // --strategies
};

// Per-device counters shown by `stats`, reset by `clear stats`.
struct PortCounters {
    uint64_t ops[2] = {};          // successful suspend / resume calls
    uint64_t op_failures[2] = {};  // failed suspend / resume calls
    uint64_t commands = 0;         // firmware commands issued (from timings)
    uint64_t commands_failed = 0;
};

// One mlx5async vDPA device found at start.
struct Port {
    unsigned index = 0;
    std::string name;                  // rte_device name, e.g. vdpa_mlx5async0
    struct rte_vdpa_device* dev = nullptr;
    std::string socket;                // vhost-user path when attached
    bool attached = false;
    // The driver serves the device on `socket` itself (devarg
    // vhost_socket): attached from the start, never by the app, and the
    // app's vhost callbacks do not see its connections.
    bool driver_socket = false;
    // Written by the vhost control thread (new_device / destroy_device).
    int vid = -1;
    uint64_t connections = 0;
    PortCounters counters;
};

// Samples of one operation, all with the same strategy / shape.
struct SampleSet {
    std::vector<double> ms;           // successful operations, wall clock
    std::vector<double> ideal_ms;     // PMD ideal for each sample (0: none)
    uint64_t failures = 0;
};

struct SummaryStats {
    size_t samples = 0;
    double min = 0, median = 0, p99 = 0, max = 0;
    double ideal = 0;                 // median of the PMD's ideal (0: none)
    uint64_t failures = 0;
};
SummaryStats summarize(const SampleSet& s);

// Key of a result bucket in the JSON output.
struct ResultKey {
    std::string strategy;  // async | sequential | threads | mixed
    uint32_t max_inflight = 0;
    uint32_t queues = 0;   // virtqs the operation touched, all devices
    uint32_t devices = 0;
    auto operator<=>(const ResultKey&) const = default;
};

struct RunInfo {           // device facts for the JSON header
    std::string profile;
    uint32_t queues = 0;
    uint32_t max_inflight = 0;
    uint32_t fw_max_inflight = 0;
    double modify_ms = 0, query_ms = 0;
};

class App {
public:
    Options opt;
    std::vector<std::unique_ptr<Port>> ports;
    std::string sock_dir;           // private dir made when --iface is absent
    mutable std::mutex mu;          // guards Port::vid / connections
    std::condition_variable cv;     // signalled on vhost connection changes
    std::atomic<bool> stop{false};  // SIGINT / SIGTERM
    int stop_fd = -1;               // eventfd written by the signal handler
    bool quit = false;              // `quit` command
    uint64_t cycles_failed = 0;     // any failed cycle makes the exit status 1
    uint64_t cycles_ok = 0;
    std::unique_ptr<Trace> trace;
    std::map<ResultKey, SampleSet[2]> results;  // per op: suspend, resume
    std::optional<RunInfo> run_info;
    ::cmdline* cl = nullptr;   // current cmdline (for quit)

    App();
    ~App();

    // ports.cpp
    int discover();
    Port* find_port(const char* word) const;  // name or index; prints error
    std::vector<Port*> select(const char* word) const;  // "all" or one
    int attach(Port& p, const std::string& socket);
    int prepare_socket(const std::string& path) const;
    int detach(Port& p);
    std::string default_socket(const Port& p) const;
    bool wait_ready(const std::vector<Port*>& ps, uint32_t seconds);
    bool is_ready(const Port& p) const;
    int port_vid(const Port& p) const;
    void detach_all();
};

const char* strategy_name(rte_pmd_mlx5async_strategy s);
std::optional<rte_pmd_mlx5async_strategy> parse_strategy(const char* s);
// The PMD's strategy names joined with `sep` (help texts, the prompt's choices).
std::string strategy_choices(const char* sep);
const char* vq_state_name(uint8_t st);
// Strict unsigned parse (decimal or 0x hex); false on junk or overflow.
bool parse_u32(const char* s, uint32_t& out, uint32_t min, uint32_t max);
uint64_t now_ns();  // CLOCK_MONOTONIC, the PMD's span clock

}  // namespace vdpa_testpmd
