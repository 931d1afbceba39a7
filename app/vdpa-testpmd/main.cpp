// vdpa-testpmd: a testpmd-style application for mlx5async vDPA devices.
//
//   vdpa-testpmd <EAL args> -- [--iface PREFIX] [--client] [-i]
//       [--cmdline-file FILE] [--auto-start] [--wait-ready S] [--cycles N]
//       [--interval-ms MS] [--strategies a,b,c] [--per-cycle] [--json FILE]
//       [--trace FILE] [--stats-period S]
//
// Order of a run: probe, attach (--auto-start), wait for the frontend
// (--wait-ready), command file, cycles (--cycles, per --strategies), prompt (-i)
// or, with nothing else to do, run until SIGINT/SIGTERM; then --json and
// --trace files. The exit status is 0 only if every cycle succeeded.
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <rte_eal.h>
#include <rte_errno.h>

#include "app.hpp"
#include "commands.hpp"
#include "cycles.hpp"
#include "report.hpp"
#include "telemetry.hpp"
#include "trace.hpp"

using namespace vdpa_testpmd;

namespace {

App* g_signal_app = nullptr;

// Async-signal-safe: an atomic store and a write to the stop eventfd.
void on_signal(int) {
    if (g_signal_app) {
        g_signal_app->stop = true;
        uint64_t one = 1;
        ssize_t n = write(g_signal_app->stop_fd, &one, sizeof(one));
        (void)n;
    }
}

void usage(const char* prog) {
    printf("usage: %s <EAL args> -- [options]\n"
           "  --iface PREFIX       vhost-user sockets PREFIX0, PREFIX1 ... (default: a new\n"
           "                       private directory, printed)\n"
           "  --client             vhost-user client mode (the frontend is the server)\n"
           "  -i, --interactive    the vdpa> prompt\n"
           "  --cmdline-file FILE  run the commands of FILE first\n"
           "  --auto-start         attach every device at start\n"
           "  --wait-ready S       wait up to S s for the frontend (virtqs RDY) before cycles\n"
           "  --cycles N           N suspend/resume cycles over all devices\n"
           "  --interval-ms MS     pause between cycles\n"
           "  --strategies LIST    run the cycles once per strategy (%s)\n"
           "                       and print the comparison table\n"
           "  --per-cycle          one line per cycle\n"
           "  --json FILE          results (schema: results.schema.json)\n"
           "  --trace FILE         Chrome trace of every firmware command and driver phase\n"
           "  --stats-period S     print device state and stats every S s (non-interactive)\n",
           prog, strategy_choices(",").c_str());
}

bool parse_strategies(const char* arg, Options& o) {
    std::string s(arg);
    size_t pos = 0;
    while (pos <= s.size()) {
        size_t comma = s.find(',', pos);
        std::string name = s.substr(pos, comma == std::string::npos ? comma : comma - pos);
        auto v = parse_strategy(name.c_str());
        if (!v) {
            printf("error: unknown strategy '%s' in --strategies (%s)\n", name.c_str(),
                   strategy_choices(", ").c_str());
            return false;
        }
        o.strategies.push_back(*v);
        if (comma == std::string::npos)
            break;
        pos = comma + 1;
    }
    return true;
}

bool number_arg(const char* name, const char* arg, uint32_t& out, uint32_t max) {
    if (parse_u32(arg, out, 0, max))
        return true;
    printf("error: invalid value '%s' for --%s: expected an integer in 0..%u\n", arg, name, max);
    return false;
}

// Returns 0 to go on, 1 for --help, -1 on a bad option.
int parse_options(int argc, char** argv, Options& o) {
    enum { kIface = 256, kClient, kFile, kAuto, kCycles, kInterval, kJson, kTrace, kStats,
           kWait, kStrategies, kPerCycle, kHelp };
    static const struct option longopts[] = {
        {"iface", required_argument, nullptr, kIface},
        {"client", no_argument, nullptr, kClient},
        {"interactive", no_argument, nullptr, 'i'},
        {"cmdline-file", required_argument, nullptr, kFile},
        {"auto-start", no_argument, nullptr, kAuto},
        {"cycles", required_argument, nullptr, kCycles},
        {"interval-ms", required_argument, nullptr, kInterval},
        {"json", required_argument, nullptr, kJson},
        {"trace", required_argument, nullptr, kTrace},
        {"stats-period", required_argument, nullptr, kStats},
        {"wait-ready", required_argument, nullptr, kWait},
        {"strategies", required_argument, nullptr, kStrategies},
        {"per-cycle", no_argument, nullptr, kPerCycle},
        {"help", no_argument, nullptr, kHelp},
        {nullptr, 0, nullptr, 0},
    };
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "ih", longopts, nullptr)) != -1) {
        bool ok = true;
        switch (c) {
        case kIface: o.iface = optarg; break;
        case kClient: o.client = true; break;
        case 'i': o.interactive = true; break;
        case kFile: o.cmdline_file = optarg; break;
        case kAuto: o.auto_start = true; break;
        case kCycles: ok = number_arg("cycles", optarg, o.cycles, 10000000); break;
        case kInterval: ok = number_arg("interval-ms", optarg, o.interval_ms, 600000); break;
        case kJson: o.json_file = optarg; break;
        case kTrace: o.trace_file = optarg; break;
        case kStats: ok = number_arg("stats-period", optarg, o.stats_period_s, 86400); break;
        case kWait: ok = number_arg("wait-ready", optarg, o.wait_ready_s, 86400); break;
        case kStrategies: ok = parse_strategies(optarg, o); break;
        case kPerCycle: o.per_cycle = true; break;
        case 'h':
        case kHelp: usage(argv[0]); return 1;
        default: usage(argv[0]); return -1;
        }
        if (!ok)
            return -1;
    }
    if (optind < argc) {
        printf("error: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    return 0;
}

void install_signals(App& app) {
    g_signal_app = &app;
    struct sigaction sa = {};
    sa.sa_handler = on_signal;  // no SA_RESTART: the prompt's read() returns
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

std::vector<Port*> attached_ports(App& app) {
    std::vector<Port*> v;
    for (auto& p : app.ports)
        if (p->attached)
            v.push_back(p.get());
    return v;
}

void print_periodic(App& app) {
    for (auto& p : app.ports) {
        print_device(app, *p);
        print_stats(app, *p, -1);
    }
    fflush(stdout);
}

// Non-interactive and nothing else to do: serve the frontends until a
// signal, printing the state every --stats-period seconds.
void serve(App& app) {
    printf("running; Ctrl-C (SIGINT) or SIGTERM to quit\n");
    using clock = std::chrono::steady_clock;
    auto period = std::chrono::seconds(app.opt.stats_period_s);
    auto next = clock::now() + period;
    while (!app.stop) {
        int timeout_ms = -1;
        if (app.opt.stats_period_s > 0) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next - clock::now());
            timeout_ms = int(std::max<int64_t>(left.count(), 0));
        }
        struct pollfd pfd = {app.stop_fd, POLLIN, 0};
        int n = poll(&pfd, 1, timeout_ms);
        if (n < 0 && errno != EINTR) {
            printf("error: poll: %s\n", strerror(errno));
            return;
        }
        if (n == 0) {
            print_periodic(app);
            next += period;
        }
    }
}

bool run_main_cycles(App& app) {
    auto ps = attached_ports(app);
    if (app.ports.empty()) {
        printf("error: --cycles: no mlx5async device (EAL --vdev vdpa_mlx5async0,emu=cx7,...)\n");
        return false;
    }
    if (ps.empty()) {
        printf("error: --cycles needs attached devices (--auto-start or 'attach')\n");
        return false;
    }
    if (app.opt.strategies.empty()) {
        CycleRun run = run_cycles(app, ps, app.opt.cycles, app.opt.interval_ms);
        print_cycle_summary(ps, run);
        return run.failed_cycles == 0 && run.cycles == app.opt.cycles;
    }
    return run_strategies(app, ps, app.opt.cycles, app.opt.interval_ms);
}

int run(App& app) {
    register_telemetry(app);
    Commands cmds(app);
    bool ok = true;
    if (app.opt.auto_start || app.opt.cycles > 0)
        for (auto& p : app.ports)
            if (!p->driver_socket)  // served on the driver's own socket already
                ok = app.attach(*p, app.default_socket(*p)) == 0 && ok;
    std::vector<Port*> all;
    for (auto& p : app.ports)
        all.push_back(p.get());
    if (!app.opt.trace_file.empty()) {
        app.trace = std::make_unique<Trace>();
        app.trace->start(all);
    }
    fflush(stdout);
    if (ok && !app.quit && app.opt.wait_ready_s > 0) {
        auto ps = attached_ports(app);
        ok = !ps.empty() && app.wait_ready(ps, app.opt.wait_ready_s);
        if (ok)
            printf("frontend ready on %zu device(s)\n", ps.size());
        else if (ps.empty())
            printf("error: --wait-ready: no attached device\n");
    }
    if (ok && !app.opt.cmdline_file.empty())
        ok = cmds.run_file(app.opt.cmdline_file) == 0;
    if (ok && !app.quit && app.opt.cycles > 0)
        ok = run_main_cycles(app);
    fflush(stdout);
    if (!app.quit && !app.stop) {
        if (app.opt.interactive)
            cmds.run_interactive();
        else if (app.opt.cycles == 0 && app.opt.cmdline_file.empty() && ok)
            serve(app);  // (a socket that could not be attached: nothing to serve, exit 1)
    }
    if (!app.opt.json_file.empty() && write_json(app, app.opt.json_file) != 0)
        ok = false;
    if (app.trace && !app.opt.trace_file.empty()) {
        if (app.trace->save(app.opt.trace_file, all) != 0)
            ok = false;
        app.trace->stop(all);
    }
    printf("cycles: %" PRIu64 " ok, %" PRIu64 " failed\n", app.cycles_ok, app.cycles_failed);
    return ok && app.cycles_failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);  // line by line, also into pipes
    int n = rte_eal_init(argc, argv);
    if (n < 0) {
        fprintf(stderr, "error: EAL initialisation failed: %s\n", rte_strerror(rte_errno));
        return 2;
    }
    argc -= n;
    argv += n;
    argv[0] = const_cast<char*>("vdpa-testpmd");
    int rc;
    {
        App app;
        int prc = parse_options(argc, argv, app.opt);
        if (prc != 0) {
            rte_eal_cleanup();
            return prc > 0 ? 0 : 2;
        }
        if (app.stop_fd < 0) {
            printf("error: eventfd: %s\n", strerror(errno));
            rte_eal_cleanup();
            return 2;
        }
        install_signals(app);
        if (app.opt.iface.empty()) {
            char tmpl[] = "/tmp/vdpa-testpmd.XXXXXX";
            if (mkdtemp(tmpl) == nullptr) {
                printf("error: cannot create a socket directory: %s\n", strerror(errno));
                rte_eal_cleanup();
                return 2;
            }
            app.sock_dir = tmpl;
            app.opt.iface = app.sock_dir + "/vhost-net";
        }
        int found = app.discover();
        if (found == 0) {
            // A --vdev vdpa_mlx5async... whose probe failed: EAL went on
            // without it (its error is logged above).
            printf("error: no mlx5async device was probed: give --vdev "
                   "vdpa_mlx5async0,emu=<profile>|dev=<PCI address>; a failed probe says why above\n");
            rc = 1;
        } else {
            printf("vdpa-testpmd: %d mlx5async device(s), sockets %s<N>\n", found,
                   app.opt.iface.c_str());
            rc = run(app);
        }
        fflush(stdout);
        g_signal_app = nullptr;
    }
    rte_eal_cleanup();
    return rc;
}
