// vdpa-testpmd: command handlers and the prompt / script runners.
#include "commands.hpp"
#include "emulator.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include <poll.h>
#include <unistd.h>

#include <cmdline.h>
#include <cmdline_socket.h>
#include <rte_vdpa.h>

#include "cmd_table.hpp"
#include "cycles.hpp"
#include "latency_report.hpp"
#include "ledger_report.hpp"
#include "report.hpp"
#include "trace.hpp"

namespace vdpa_testpmd {

namespace {

constexpr uint32_t kMaxCycles = 1000000;
constexpr uint32_t kMaxIntervalMs = 600000;

std::vector<Port*> all_ports(App& app) {
    std::vector<Port*> v;
    for (auto& p : app.ports)
        v.push_back(p.get());
    return v;
}

void cmd_list(App& app, const Words&) { print_list(app); }

void cmd_create(App& app, const Words& w) {
    if (Port* p = app.find_port(w.w[2]))
        app.attach(*p, w.w[1]);
}

void cmd_attach(App& app, const Words& w) {
    for (Port* p : app.select(w.w[1]))
        if (strcmp(w.w[1], "all") != 0 || !p->attached)
            app.attach(*p, app.default_socket(*p));
}

void cmd_detach(App& app, const Words& w) {
    for (Port* p : app.select(w.w[1]))
        if (strcmp(w.w[1], "all") != 0 || (p->attached && !p->driver_socket))
            app.detach(*p);
}

void cmd_show_device(App& app, const Words& w) {
    for (Port* p : app.select(w.w[2]))
        print_device(app, *p);
}

void cmd_show_ledger(App& app, const Words& w) {
    for (Port* p : app.select(w.w[2]))
        print_ledger(*p);
}

void cmd_show_latency(App& app, const Words& w) {
    for (Port* p : app.select(w.w[2]))
        print_latency(*p);
}

void do_op(App& app, const char* word, rte_pmd_mlx5async_op op) {
    auto ps = app.select(word);
    if (ps.empty())
        return;
    OpResult r = run_op(app, ps, op);
    print_op(ps, op, r);
}

void cmd_suspend(App& app, const Words& w) { do_op(app, w.w[1], RTE_PMD_MLX5ASYNC_OP_SUSPEND); }
void cmd_resume(App& app, const Words& w) { do_op(app, w.w[1], RTE_PMD_MLX5ASYNC_OP_RESUME); }

void cycle(App& app, const Words& w, const char* interval) {
    uint32_t count, ival = app.opt.interval_ms;
    if (!parse_u32(w.w[2], count, 1, kMaxCycles)) {
        printf("error: invalid cycle count '%s': expected an integer in 1..%u\n", w.w[2],
               kMaxCycles);
        return;
    }
    if (interval && !parse_u32(interval, ival, 0, kMaxIntervalMs)) {
        printf("error: invalid interval '%s': expected milliseconds in 0..%u\n", interval,
               kMaxIntervalMs);
        return;
    }
    auto ps = app.select(w.w[1]);
    if (ps.empty())
        return;
    CycleRun run = run_cycles(app, ps, count, ival);
    print_cycle_summary(ps, run);
}

void cmd_cycle(App& app, const Words& w) { cycle(app, w, nullptr); }
void cmd_cycle_interval(App& app, const Words& w) { cycle(app, w, w.w[3]); }

void cmd_stats(App& app, const Words& w) {
    Port* p = app.find_port(w.w[1]);
    if (p == nullptr)
        return;
    int queue = -1;
    if (strcmp(w.w[2], "all") != 0) {
        DevInfo info;
        uint32_t nq = rte_pmd_mlx5async_get_dev_info(p->dev, &info) == 0 ? info.queues : 0;
        uint32_t q;
        if (nq == 0 || !parse_u32(w.w[2], q, 0, nq - 1)) {
            printf("error: invalid queue '%s' for %s: expected 'all' or an index in 0..%d\n",
                   w.w[2], p->name.c_str(), int(nq) - 1);
            return;
        }
        queue = int(q);
    }
    print_stats(app, *p, queue);
}

void cmd_clear_stats(App& app, const Words&) {
    for (auto& p : app.ports) {
        p->counters = {};
        DevInfo info;
        uint32_t nq = rte_pmd_mlx5async_get_dev_info(p->dev, &info) == 0 ? info.queues : 0;
        int rc = 0;
        for (uint32_t q = 0; q < nq && rc == 0; q++)
            rc = rte_vdpa_reset_stats(p->dev, uint16_t(q));
        printf("%s: stats cleared%s\n", p->name.c_str(),
               rc < 0 ? " (virtq counters: not supported by the device)" : "");
    }
}

void cmd_set_strategy(App& app, const Words& w) {
    auto s = parse_strategy(w.w[3]);
    if (!s) {
        printf("error: unknown strategy '%s': expected async, sequential or threads\n", w.w[3]);
        return;
    }
    for (Port* p : app.select(w.w[2])) {
        int rc = rte_pmd_mlx5async_set_strategy(p->dev, *s);
        if (rc < 0)
            printf("error: %s: cannot set strategy %s: %s\n", p->name.c_str(), w.w[3],
                   strerror(-rc));
        else
            printf("%s: strategy %s\n", p->name.c_str(), w.w[3]);
    }
}

void cmd_set_max_inflight(App& app, const Words& w) {
    uint32_t n;
    if (!parse_u32(w.w[3], n, 1, 65535)) {
        printf("error: invalid max_inflight '%s': expected an integer in 1..65535\n", w.w[3]);
        return;
    }
    for (Port* p : app.select(w.w[2])) {
        int rc = rte_pmd_mlx5async_set_max_inflight(p->dev, n);
        if (rc < 0)
            printf("error: %s: cannot set max_inflight %u: %s\n", p->name.c_str(), n,
                   strerror(-rc));
        else
            printf("%s: max_inflight %u\n", p->name.c_str(), n);
    }
}

void cmd_set_per_cycle(App& app, const Words& w) {
    if (strcmp(w.w[2], "on") != 0 && strcmp(w.w[2], "off") != 0) {
        printf("error: invalid value '%s' for per_cycle: expected on or off\n", w.w[2]);
        return;
    }
    app.opt.per_cycle = strcmp(w.w[2], "on") == 0;
    printf("per-cycle lines %s\n", w.w[2]);
}

void cmd_trace(App& app, const Words& w) {
    if (strcmp(w.w[1], "start") == 0) {
        if (!app.trace)
            app.trace = std::make_unique<Trace>();
        app.trace->start(all_ports(app));
        printf("trace: started on %zu device(s)\n", app.ports.size());
    } else if (!app.trace || !app.trace->active()) {
        printf("error: trace is not started (use 'trace start')\n");
    } else {
        app.trace->stop(all_ports(app));
        printf("trace: stopped\n");
    }
}

void cmd_trace_save(App& app, const Words& w) {
    if (!app.trace) {
        printf("error: nothing traced yet (use 'trace start')\n");
        return;
    }
    app.trace->save(w.w[2], all_ports(app));
}

void cmd_fault(App& app, const Words& w) {
    Port* p = app.find_port(w.w[1]);
    if (p == nullptr)
        return;
    if (w.rest[0] == '\0') {
        printf("error: missing fault rule, e.g. 'op=modify nth=3 status=0x9', 'clear'\n");
        return;
    }
    std::string why;
    int rc = emulator_fault(*p, w.rest, why);
    if (rc == -ENOTSUP)
        printf("error: %s: fault injection needs an emulated device (emu=, the emulator plugin)\n",
               p->name.c_str());
    else if (rc < 0)
        printf("error: %s: fault rule '%s' rejected: %s\n", p->name.c_str(), w.rest,
               why.empty() ? strerror(-rc) : why.c_str());
    else
        printf("%s: fault rule '%s' set\n", p->name.c_str(), w.rest);
}

void cmd_quit(App& app, const Words&) {
    app.quit = true;
    if (app.cl)
        cmdline_quit(app.cl);
}

void cmd_help(App& app, const Words&);

const std::vector<CommandSpec>& specs() {
    static const std::string strategy_choice = strategy_choices("#");  // the cmdline library's choice syntax
    static const std::string strategy_help = "set strategy <dev|all> " + strategy_choices("|");
    static const std::vector<CommandSpec> s = {
        {{{Tok::Keyword, "list"}}, "list: devices, virtqs, features, sockets", cmd_list},
        {{{Tok::Keyword, "create"}, {Tok::Word, "<socket path>"}, {Tok::Dev, nullptr}},
         "create <socket> <dev>: vhost-user socket for a device", cmd_create},
        {{{Tok::Keyword, "attach"}, {Tok::DevAll, nullptr}},
         "attach <dev|all>: socket <iface><index> for the device(s)", cmd_attach},
        {{{Tok::Keyword, "detach"}, {Tok::DevAll, nullptr}},
         "detach <dev|all>: close the device's socket", cmd_detach},
        {{{Tok::Keyword, "show"}, {Tok::Keyword, "device"}, {Tok::DevAll, nullptr}},
         "show device <dev|all>: state and hw indexes of every virtq", cmd_show_device},
        {{{Tok::Keyword, "show"}, {Tok::Keyword, "ledger"}, {Tok::DevAll, nullptr}},
         "show ledger <dev|all>: when each step of the last device stop and start happened",
         cmd_show_ledger},
        {{{Tok::Keyword, "show"}, {Tok::Keyword, "latency"}, {Tok::DevAll, nullptr}},
         "show latency <dev|all>: firmware command latencies (p50/p99/max) and errors per type",
         cmd_show_latency},
        {{{Tok::Keyword, "suspend"}, {Tok::DevAll, nullptr}},
         "suspend <dev|all>: suspend every RDY virtq (one batch)", cmd_suspend},
        {{{Tok::Keyword, "resume"}, {Tok::DevAll, nullptr}},
         "resume <dev|all>: resume every SUSPENDed virtq (one batch)", cmd_resume},
        {{{Tok::Keyword, "cycle"}, {Tok::DevAll, nullptr}, {Tok::Word, "<count>"}},
         "cycle <dev|all> <count>: suspend/resume cycles, then a summary", cmd_cycle},
        {{{Tok::Keyword, "cycle"}, {Tok::DevAll, nullptr}, {Tok::Word, "<count>"},
          {Tok::Word, "<interval_ms>"}},
         "cycle <dev|all> <count> <interval_ms>: cycles with a pause between",
         cmd_cycle_interval},
        {{{Tok::Keyword, "stats"}, {Tok::Dev, nullptr}, {Tok::Word, "<queue|all>"}},
         "stats <dev> <queue|all>: operation counters and virtq counters", cmd_stats},
        {{{Tok::Keyword, "clear"}, {Tok::Keyword, "stats"}}, "clear stats: reset every counter",
         cmd_clear_stats},
        {{{Tok::Keyword, "set"}, {Tok::Keyword, "strategy"}, {Tok::DevAll, nullptr},
          {Tok::Choice, strategy_choice.c_str()}},
         strategy_help.c_str(), cmd_set_strategy},
        {{{Tok::Keyword, "set"}, {Tok::Keyword, "max_inflight"}, {Tok::DevAll, nullptr},
          {Tok::Word, "<n>"}},
         "set max_inflight <dev|all> <n>: firmware commands in flight", cmd_set_max_inflight},
        {{{Tok::Keyword, "set"}, {Tok::Keyword, "per_cycle"}, {Tok::Choice, "on#off"}},
         "set per_cycle on|off: a line per cycle in 'cycle'", cmd_set_per_cycle},
        {{{Tok::Keyword, "trace"}, {Tok::Keyword, "start#stop"}},
         "trace start|stop: record firmware commands and driver phases", cmd_trace},
        {{{Tok::Keyword, "trace"}, {Tok::Keyword, "save"}, {Tok::Word, "<file>"}},
         "trace save <file>: write the Chrome trace (Perfetto)", cmd_trace_save},
        {{{Tok::Keyword, "fault"}, {Tok::Dev, nullptr}, {Tok::Rest, nullptr}},
         "fault <dev> <rule...>: emulator fault injection ('clear' removes)", cmd_fault},
        {{{Tok::Keyword, "quit"}}, "quit: leave the application", cmd_quit},
        {{{Tok::Keyword, "help"}}, "help: this list", cmd_help},
    };
    return s;
}

void cmd_help(App&, const Words&) {
    printf("\n  commands (Tab completes, ? shows the arguments):\n");
    for (const auto& s : specs())
        printf("    %s\n", s.help);
}

// After a line that matched no command: the usage of the commands sharing
// its first word, if any.
void print_usage_for(const char* line) {
    size_t n = strcspn(line, " \t");
    bool any = false;
    for (const auto& spec : specs()) {
        const char* kw = spec.toks[0].text;
        if (strlen(kw) == n && strncmp(kw, line, n) == 0) {
            printf("%s    %s\n", any ? "" : "  usage:\n", spec.help);
            any = true;
        }
    }
}

}  // namespace

struct Commands::Impl {
    App& app;
    CommandTable table;
    explicit Impl(App& a) : app(a), table(a, specs()) {}
};

Commands::Commands(App& app) : impl_(std::make_unique<Impl>(app)) {}
Commands::~Commands() = default;

int Commands::run_file(const std::string& path) {
    FILE* f = fopen(path.c_str(), "r");
    if (f == nullptr) {
        int err = errno;
        printf("error: cannot open command file %s: %s\n", path.c_str(), strerror(err));
        return -err;
    }
    // A cmdline object without terminal: cmdline_parse() runs the command
    // and returns the match status, which gets a plain message here.
    struct cmdline* cl = cmdline_new(impl_->table.ctx(), "vdpa> ", -1, -1);
    if (cl == nullptr) {
        fclose(f);
        return -ENOMEM;
    }
    char* line = nullptr;
    size_t cap = 0;
    unsigned lineno = 0;
    while (!impl_->app.quit && !impl_->app.stop && getline(&line, &cap, f) >= 0) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        const char* s = line + strspn(line, " \t");
        if (*s == '\0' || *s == '#')
            continue;
        printf("vdpa> %s\n", s);
        fflush(stdout);
        // cmdline_parse() takes only whole lines, ending with a newline.
        std::string cmd = std::string(s) + "\n";
        int rc = cmdline_parse(cl, cmd.c_str());
        if (rc == CMDLINE_PARSE_AMBIGUOUS)
            printf("error: %s:%u: ambiguous command\n", path.c_str(), lineno);
        else if (rc == CMDLINE_PARSE_NOMATCH)
            printf("error: %s:%u: unknown command or wrong arguments: '%s' (try 'help')\n",
                   path.c_str(), lineno, s);
        else if (rc == CMDLINE_PARSE_BAD_ARGS)
            printf("error: %s:%u: bad arguments: '%s' (try 'help')\n", path.c_str(), lineno, s);
        if (rc == CMDLINE_PARSE_NOMATCH || rc == CMDLINE_PARSE_BAD_ARGS)
            print_usage_for(s);
        fflush(stdout);
    }
    free(line);
    fclose(f);
    cmdline_free(cl);
    return 0;
}

// The prompt's own loop instead of cmdline_interact(): a signal may land on
// any EAL or vhost thread, so a blocking read() on stdin would not see it;
// the handler writes stop_fd, which is polled next to stdin.
void Commands::run_interactive() {
    App& app = impl_->app;
    struct cmdline* cl = cmdline_stdin_new(impl_->table.ctx(), "vdpa> ");
    if (cl == nullptr) {
        printf("error: cannot start the prompt\n");
        return;
    }
    app.cl = cl;
    while (!app.quit && !app.stop) {
        struct pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {app.stop_fd, POLLIN, 0}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            printf("error: poll: %s\n", strerror(errno));
            break;
        }
        if (fds[1].revents != 0)
            break;
        if (fds[0].revents == 0)
            continue;
        char buf[256];
        ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        // EOF, or Ctrl-D / `quit` (the library then refuses more input).
        if (n <= 0 || cmdline_in(cl, buf, int(n)) < 0)
            break;
    }
    printf("\n");
    app.cl = nullptr;
    cmdline_stdin_exit(cl);  // restores the terminal and frees cl
}

}  // namespace vdpa_testpmd
