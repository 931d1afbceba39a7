// vhost-user-guest: a vhost-user frontend (the guest side, as QEMU's
// vhost-user-net) driven by line commands, one JSON line answer each.
//
// usage: vhost-user-guest --socket PATH --pairs N [--ring-size S] [--mem-mb M]
//          [--regions R] [--gpa-base ADDR] [--base IDX] [--script "cmd;cmd;..."]
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

#include "frontend.hpp"

namespace {

using vug::Frontend;
using vug::UsageError;

const char* kUsage =
    "usage: vhost-user-guest --socket PATH --pairs N [--ring-size S] [--mem-mb M]\n"
    "         [--regions R] [--gpa-base ADDR] [--base IDX] [--script \"start;stop;quit\"]\n"
    "         [--stay]     (a broken connection answers an error instead of exiting)\n"
    "         [--region-gap BYTES]  (between regions' guest addresses; < 0 overlaps them)\n"
    "commands (stdin, one per line; one JSON line answered per command):\n"
    "  start [dst]          handshake if needed, memory table, every ring, DRIVER_OK\n"
    "                       (dst: QEMU migration-destination order)\n"
    "  features             handshake and SET_FEATURES only (a frontend that then idles)\n"
    "  status S             SET_STATUS(S)\n"
    "  stop [disable]       SET_STATUS(0) + GET_VRING_BASE per ring (QEMU source);\n"
    "                       disable: SET_VRING_ENABLE(0) per ring first (virtio_user)\n"
    "  enable R | disable R SET_VRING_ENABLE for ring R\n"
    "  pairs N              enable rings 0..2N-1, disable the rest\n"
    "  log-on [short|small] | log-off\n"
    "                       SET_LOG_BASE (short: its file whole pages shorter than it claims; small:\n"
    "                       half the size the memory needs) + SET_FEATURES(LOG_ALL) | SET_FEATURES\n"
    "  log-dirty | log-clear  dirty pages in the log | zero the log\n"
    "  log-truncate         cut the log's file to nothing under the backend\n"
    "  reconnect [MS]       new connection and session, retrying up to MS ms (default 0)\n"
    "                       while the socket is absent; rings restart from the last bases\n"
    "  base R|all IDX       ring start index (while stopped)\n"
    "  post-tx R N LEN | post-rx R N | used R | bad-desc R | kick R\n"
    "  set-num R NUM        SET_VRING_NUM with any value (fault injection)\n"
    "  bad-addr R desc|avail|used outside|straddle\n"
    "                       from the next start, that ring part's SET_VRING_ADDR address\n"
    "                       lies outside every region, or runs past region 0's end\n"
    "  irqs                 signals counted per ring on the callfds (all connections)\n"
    "  wait-irq R N MS      until ring R's signal count is N (absolute), at most MS ms\n"
    "  no-irq R|all on|off  VRING_AVAIL_F_NO_INTERRUPT in avail->flags (default off)\n"
    "  wait-used R N MS     poll until ring R's used idx reaches N, at most MS ms\n"
    "  info | quit\n";

std::string hex(uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "\"0x%llx\"", static_cast<unsigned long long>(v));
    return b;
}

template <typename T>
std::string list(const T& v) {
    std::string s = "[";
    bool first = true;
    for (auto x : v) {
        s += (first ? "" : ",") + std::to_string(x);
        first = false;
    }
    return s + "]";
}

std::string json_str(const std::string& s) {
    std::string o = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') o += '\\', o += c;
        else if (static_cast<unsigned char>(c) < 0x20) o += ' ';
        else o += c;
    }
    return o + "\"";
}

long num(std::istringstream& in, const char* what, long lo, long hi) {
    std::string t;
    if (!(in >> t)) throw UsageError(std::string("missing ") + what);
    char* end = nullptr;
    long v = std::strtol(t.c_str(), &end, 0);
    if (*end || v < lo || v > hi)
        throw UsageError(std::string(what) + " '" + t + "': expected " + std::to_string(lo) +
                         ".." + std::to_string(hi));
    return v;
}

class Commands {
public:
    explicit Commands(Frontend& fe) : fe_(fe) {}
    // Returns the JSON answer; sets quit.
    std::string run(const std::string& line, bool& quit);

private:
    std::string ring_answer(int r) {
        vug::Ring& g = fe_.ring(r);
        return "\"ring\":" + std::to_string(r) + ",\"avail_idx\":" + std::to_string(g.avail_idx()) +
               ",\"used_idx\":" + std::to_string(g.used_idx()) +
               ",\"free\":" + std::to_string(g.free_descs());
    }
    int ring_arg(std::istringstream& in) { return int(num(in, "ring", 0, fe_.nrings() - 1)); }
    int ring_or_all(std::istringstream& in) {  // -1: all
        std::string arg;
        in >> arg;
        if (arg == "all") return -1;
        std::istringstream a(arg);
        return ring_arg(a);
    }
    std::string no_irq_list() {
        std::string s = "[";
        for (int r = 0; r < fe_.nrings(); r++)
            s += std::string(r ? "," : "") + (fe_.ring(r).no_interrupt() ? "true" : "false");
        return s + "]";
    }
    std::string session_command(const std::string& cmd, std::istringstream& in);
    std::string log_command(const std::string& cmd, std::istringstream& in);
    std::string ring_command(const std::string& cmd, std::istringstream& in);
    std::string irq_command(const std::string& cmd, std::istringstream& in);
    std::string info();
    static inline const std::string kOk = "{\"ok\":true";
    Frontend& fe_;
};

// One line of the command language: the JSON answer; sets quit.
std::string Commands::run(const std::string& line, bool& quit) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "quit") {
        quit = true;
        return kOk + "}";
    }
    if (cmd == "help") {
        std::fputs(kUsage, stderr);
        return kOk + "}";
    }
    if (cmd == "info") return info();
    if (cmd == "irqs" || cmd == "wait-irq" || cmd == "no-irq" || cmd == "wait-used")
        return irq_command(cmd, in);
    if (cmd.starts_with("log-")) return log_command(cmd, in);
    if (cmd == "post-tx" || cmd == "post-rx" || cmd == "bad-desc" || cmd == "used" || cmd == "kick")
        return ring_command(cmd, in);
    return session_command(cmd, in);
}

// The connection and the rings' set-up: start, stop, enable/disable,
// pairs, reconnect, base, set-num.
std::string Commands::session_command(const std::string& cmd, std::istringstream& in) {
    const std::string& ok = kOk;
    std::string arg;
    if (cmd == "start") {
        in >> arg;
        if (!arg.empty() && arg != "dst") throw UsageError("start: expected no argument or 'dst'");
        fe_.start(arg == "dst");
        int en = 0;
        for (bool e : fe_.enabled()) en += e;
        return ok + ",\"rings\":" + std::to_string(fe_.nrings()) + ",\"enabled\":" +
               std::to_string(en) + ",\"features\":" + hex(fe_.features()) +
               ",\"protocol_features\":" + hex(fe_.protocol()) + "}";
    }
    if (cmd == "features") {
        fe_.negotiate();
        return ok + ",\"features\":" + hex(fe_.features()) + "}";
    }
    if (cmd == "status") {
        fe_.status(uint8_t(num(in, "status", 0, 255)));
        return ok + "}";
    }
    if (cmd == "stop") {
        in >> arg;
        if (!arg.empty() && arg != "disable")
            throw UsageError("stop: expected no argument or 'disable'");
        auto bases = fe_.stop(arg == "disable");
        return ok + ",\"bases\":" + list(bases) + "}";
    }
    if (cmd == "enable" || cmd == "disable") {
        int r = ring_arg(in);
        fe_.set_enable(r, cmd == "enable");
        return ok + ",\"ring\":" + std::to_string(r) + "}";
    }
    if (cmd == "pairs") {
        int n = int(num(in, "pairs", 1, 1 << 20));
        return ok + ",\"enabled\":" + std::to_string(fe_.set_pairs(n)) + "}";
    }
    if (cmd == "reconnect") {
        int wait_ms = 0;
        if (in >> std::ws && !in.eof()) wait_ms = int(num(in, "reconnect wait", 0, 600000));
        fe_.reconnect(wait_ms);
        return ok + ",\"connections\":" + std::to_string(fe_.connections()) + "}";
    }
    if (cmd == "base") {
        int r = ring_or_all(in);
        uint16_t b = uint16_t(num(in, "index", 0, 65535));
        fe_.set_base(r, b);
        return ok + "}";
    }
    if (cmd == "bad-addr") {
        int r = ring_arg(in);
        std::string part, kind;
        in >> part >> kind;
        const uint64_t hva = fe_.bad_addr(r, part, kind);
        return ok + ",\"ring\":" + std::to_string(r) + ",\"hva\":" + hex(hva) + "}";
    }
    if (cmd == "set-num") {
        int r = ring_arg(in);
        fe_.raw_vring_num(r, uint32_t(num(in, "num", 0, 0xffffffffl)));
        return ok + ",\"ring\":" + std::to_string(r) + "}";
    }
    throw UsageError("unknown command '" + cmd + "' (help lists them)");
}

// The dirty log: log-on/off, log-dirty, log-clear.
std::string Commands::log_command(const std::string& cmd, std::istringstream& in) {
    const std::string& ok = kOk;
    if (cmd == "log-on" || cmd == "log-off") {
        std::string shape;
        in >> shape;
        if (cmd == "log-off") fe_.log_off();
        else if (shape.empty()) fe_.log_on();
        else if (shape == "short") fe_.log_on(vug::DirtyLog::Shape::Short);
        else if (shape == "small") fe_.log_on(vug::DirtyLog::Shape::Small);
        else throw UsageError("log-on: the log is short, small or (nothing) full");
        return ok + ",\"features\":" + hex(fe_.features()) + ",\"log_bytes\":" +
               std::to_string(fe_.log() ? fe_.log()->size() : 0) + "}";
    }
    if (cmd == "log-dirty" || cmd == "log-clear" || cmd == "log-truncate") {
        const vug::DirtyLog* log = fe_.log();
        if (!log) throw UsageError(cmd + ": no log (log-on first)");
        if (cmd == "log-clear") {
            const_cast<vug::DirtyLog*>(log)->clear();
            return ok + "}";
        }
        if (cmd == "log-truncate") {
            const_cast<vug::DirtyLog*>(log)->truncate();
            return ok + "}";
        }
        auto pages = log->dirty_pages();
        std::vector<int> used_dirty;  // rings whose used ring is marked dirty
        for (int r = 0; r < fe_.nrings(); r++)
            if (log->dirty(fe_.ring(r).used_gpa(), fe_.ring(r).used_bytes())) used_dirty.push_back(r);
        size_t count = pages.size();
        if (pages.size() > 1024) pages.resize(1024);  // the first 1024 listed
        return ok + ",\"count\":" + std::to_string(count) +
               ",\"used_rings_dirty\":" + list(used_dirty) + ",\"pages\":" + list(pages) + "}";
    }
    throw UsageError("unknown command '" + cmd + "' (help lists them)");
}

// Buffers on one ring: post-tx/rx, bad-desc, used, kick.
std::string Commands::ring_command(const std::string& cmd, std::istringstream& in) {
    const std::string& ok = kOk;
    if (cmd == "post-tx" || cmd == "post-rx") {
        int r = ring_arg(in);
        int n = int(num(in, "count", 1, 32768));
        int k = 0;
        if (cmd == "post-tx") k = fe_.ring(r).post_tx(n, uint32_t(num(in, "length", 14, 2036)));
        else k = fe_.ring(r).post_rx(n);
        if (fe_.started()) fe_.kick(r);
        return ok + ",\"posted\":" + std::to_string(k) + "," + ring_answer(r) + "}";
    }
    if (cmd == "bad-desc") {
        int r = ring_arg(in);
        uint64_t addr = fe_.mem().end() + (1ull << 30);  // 1 GiB past the end
        int id = fe_.ring(r).post_bad(addr, 64);
        if (id < 0) throw UsageError("bad-desc: ring " + std::to_string(r) + " has no free descriptor");
        if (fe_.started()) fe_.kick(r);
        return ok + ",\"desc\":" + std::to_string(id) + ",\"addr\":" + std::to_string(addr) + "," +
               ring_answer(r) + "}";
    }
    if (cmd == "used") {
        int r = ring_arg(in);
        auto entries = fe_.ring(r).reap();
        std::string e = "[";
        for (size_t i = 0; i < entries.size() && i < 256; i++)
            e += (i ? "," : "") + std::string("{\"id\":") + std::to_string(entries[i].id) +
                 ",\"len\":" + std::to_string(entries[i].len) + "}";
        return ok + "," + ring_answer(r) + ",\"consumed\":" + std::to_string(entries.size()) +
               ",\"entries\":" + e + "]}";
    }
    if (cmd == "kick") {
        int r = ring_arg(in);
        fe_.kick(r);
        return ok + ",\"ring\":" + std::to_string(r) + "}";
    }
    throw UsageError("unknown command '" + cmd + "' (help lists them)");
}

std::string Commands::info() {
    const std::string& ok = kOk;
    std::vector<uint32_t> bases;
    for (int r = 0; r < fe_.nrings(); r++) bases.push_back(fe_.ring(r).base());
    return ok + ",\"started\":" + (fe_.started() ? "true" : "false") +
           ",\"logging\":" + (fe_.logging() ? "true" : "false") +
           ",\"backend_features\":" + hex(fe_.backend_features()) +
           ",\"backend_protocol_features\":" + hex(fe_.backend_protocol()) +
           ",\"features\":" + hex(fe_.features()) + ",\"protocol_features\":" +
           hex(fe_.protocol()) + ",\"queue_num\":" + std::to_string(fe_.queue_num()) +
           ",\"connections\":" + std::to_string(fe_.connections()) +
           ",\"requests\":" + std::to_string(fe_.requests()) +
           ",\"rings\":" + std::to_string(fe_.nrings()) + ",\"bases\":" + list(bases) +
           ",\"no_irq\":" + no_irq_list() + "}";
}

// Interrupts: the callfd counts, avail->flags, and polling for comparison.
std::string Commands::irq_command(const std::string& cmd, std::istringstream& in) {
    const std::string& ok = kOk;
    vug::IrqCounter& irqs = fe_.irqs();
    if (cmd == "irqs") {
        irqs.drain();
        return ok + ",\"irqs\":" + list(irqs.counts()) + ",\"total\":" +
               std::to_string(irqs.total()) + "}";
    }
    if (cmd == "no-irq") {
        int r = ring_or_all(in);
        std::string v;
        in >> v;
        if (v != "on" && v != "off") throw UsageError("no-irq: expected 'on' or 'off'");
        fe_.set_no_interrupt(r, v == "on");
        return ok + ",\"no_irq\":" + no_irq_list() + "}";
    }
    int r = ring_arg(in);
    if (cmd == "wait-irq") {
        long n = num(in, "count", 0, 1l << 48);
        bool reached = irqs.wait_for(r, uint64_t(n), int(num(in, "timeout_ms", 0, 3600000)));
        return ok + ",\"ring\":" + std::to_string(r) + ",\"irqs\":" +
               std::to_string(irqs.count(r)) + ",\"reached\":" + (reached ? "true" : "false") + "}";
    }
    uint16_t n = uint16_t(num(in, "used index", 0, 65535));
    bool reached = fe_.wait_used(r, n, int(num(in, "timeout_ms", 0, 3600000)));
    irqs.drain();
    return ok + ",\"ring\":" + std::to_string(r) + ",\"used_idx\":" +
           std::to_string(fe_.ring(r).used_idx()) + ",\"irqs\":" + std::to_string(irqs.count(r)) +
           ",\"reached\":" + (reached ? "true" : "false") + "}";
}

bool parse_args(int argc, char** argv, vug::Options& o) {
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc) throw UsageError(a + ": missing value");
            return argv[++i];
        };
        auto int_val = [&](long lo, long hi) {
            std::istringstream in(val());
            return num(in, a.c_str(), lo, hi);
        };
        if (a == "--socket") o.socket = val();
        else if (a == "--pairs") o.pairs = int(int_val(1, 128));
        else if (a == "--ring-size") o.ring_size = int(int_val(2, 32768));
        else if (a == "--mem-mb") o.mem_mb = int(int_val(1, 1 << 20));
        else if (a == "--regions") o.regions = int(int_val(1, vug::kMaxRegions));
        else if (a == "--gpa-base") o.gpa_base = uint64_t(int_val(0, 1l << 52));
        else if (a == "--region-gap") o.region_gap = int_val(-(1l << 40), 1l << 62);
        else if (a == "--base") o.base = int(int_val(0, 65535));
        else if (a == "--script") o.script = val();
        else if (a == "--stay") o.stay = true;
        else if (a == "-h" || a == "--help") return false;
        else throw UsageError("unknown option " + a);
    }
    if (o.socket.empty()) throw UsageError("--socket PATH is required");
    return true;
}

void answer(const std::string& s) {
    std::fputs(s.c_str(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    std::signal(SIGPIPE, SIG_IGN);  // a gone backend shows as EPIPE on the request
    vug::Options o;
    try {
        if (!parse_args(argc, argv, o)) {
            std::fputs(kUsage, stdout);
            return 0;
        }
    } catch (const UsageError& e) {
        std::fprintf(stderr, "vhost-user-guest: %s\n%s", e.what(), kUsage);
        return 2;
    }
    try {
        Frontend fe(o);
        Commands cmds(fe);
        std::istringstream script(o.script);
        auto next = [&](std::string& line) {
            if (!o.script.empty()) return bool(std::getline(script, line, ';'));
            return bool(std::getline(std::cin, line));
        };
        std::string line;
        bool quit = false;
        while (!quit && next(line)) {
            if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
            try {
                answer(cmds.run(line, quit));
            } catch (const UsageError& e) {
                answer("{\"ok\":false,\"error\":" + json_str(e.what()) + "}");
            } catch (const vug::VugError& e) {
                if (!o.stay) throw;
                fe.disconnect();  // waits for `reconnect`
                answer("{\"ok\":false,\"connected\":false,\"error\":" + json_str(e.what()) + "}");
            }
        }
    } catch (const UsageError& e) {
        std::fprintf(stderr, "vhost-user-guest: %s\n", e.what());
        answer("{\"ok\":false,\"fatal\":true,\"error\":" + json_str(e.what()) + "}");
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vhost-user-guest: %s\n", e.what());
        answer("{\"ok\":false,\"fatal\":true,\"error\":" + json_str(e.what()) + "}");
        return 1;
    }
    return 0;
}
