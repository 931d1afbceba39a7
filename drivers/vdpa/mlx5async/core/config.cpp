#include "config.hpp"

#include <charconv>
#include <cstdio>

namespace mlx5async::core {
namespace {

// emu_<key> devargs are forwarded into the emulator spec ("cx7,modify_us=0").
constexpr std::string_view kEmuPrefix = "emu_";
constexpr std::string_view kEmuKeys[] = {"modify_us", "query_us", "create_us", "destroy_us",
                                         "umem_us",   "cmd_timeout_ms", "jitter_pct", "cmd_slots", "max_virtqs",
                                         "freeze_to_rdy", "seed"};

Result<uint64_t> parse_uint(std::string_view key, std::string_view v, uint64_t lo, uint64_t hi) {
    uint64_t x = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x, 10);
    if (ec != std::errc() || p != v.data() + v.size() || x < lo || x > hi) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "devarg %.*s=%.*s: expected an integer in [%llu, %llu]",
                      int(key.size()), key.data(), int(v.size()), v.data(),
                      (unsigned long long)lo, (unsigned long long)hi);
        return fail(Errc::InvalidArgument, buf);
    }
    return x;
}

bool is_pci_bdf(std::string_view s) {
    // [dddd:]bb:dd.f, hex digits.
    auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); };
    auto all_hex = [&](std::string_view p, size_t n) {
        if (p.size() != n) return false;
        for (char c : p) if (!hex(c)) return false;
        return true;
    };
    if (s.size() == 12) {
        if (s[4] != ':') return false;
        if (!all_hex(s.substr(0, 4), 4)) return false;
        s = s.substr(5);
    }
    return s.size() == 7 && all_hex(s.substr(0, 2), 2) && s[2] == ':' && all_hex(s.substr(3, 2), 2) &&
           s[5] == '.' && s[6] >= '0' && s[6] <= '7';
}

// rdma-core device names: mlx5_0, mlx5emu0 ...
bool is_ibdev_name(std::string_view s) {
    if (s.empty() || s.size() > 63 || !(s[0] >= 'a' && s[0] <= 'z')) return false;
    for (char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
    return true;
}

// "modify_us, query_us, ..." (one list for the messages and the key table).
const std::string& emu_key_list() {
    static const std::string list = [] {
        std::string s;
        for (auto e : kEmuKeys) s += (s.empty() ? "" : ", ") + std::string(e);
        return s;
    }();
    return list;
}

Unexpected<Error> bad(std::string_view key, std::string_view value, std::string_view expected) {
    return fail(Errc::InvalidArgument, "devarg " + std::string(key) + "=" + std::string(value) +
                                           ": expected " + std::string(expected));
}

}  // namespace

const char* strategy_name(Strategy s) noexcept {
    switch (s) {
    case Strategy::Async: return "async";
    case Strategy::Sequential: return "sequential";
    case Strategy::Threads: return "threads";
    }
    return "?";
}

Result<Strategy> parse_strategy(std::string_view s) {
    if (s == "async") return Strategy::Async;
    if (s == "sequential") return Strategy::Sequential;
    if (s == "threads") return Strategy::Threads;
    return bad("strategy", s, "async|sequential|threads");
}

const std::vector<std::pair<std::string_view, std::string_view>>& devarg_keys() {
    static const std::string emu_help = "emulator timing/caps override: " + emu_key_list();
    static const std::vector<std::pair<std::string_view, std::string_view>> keys = {
        {"emu", "emulated device profile: cx6dx|cx7"},
        {"dev", "a ConnectX through rdma-core: PCI address [dddd:]bb:dd.f or ibv device name"},
        {"queues", "queue pairs to pre-create at probe, 1..512"},
        {"queue_size", "ring size to pre-create with, power of 2 in 2..32768"},
        {"max_inflight", "firmware commands in flight, 1..256 (default 16)"},
        {"strategy", "async|sequential|threads (default async)"},
        {"max_conf_threads", "worker threads of the threads strategy, 1..64 (DPDK mlx5 name)"},
        {"timeout_ms", "deadline of one control batch, 1..600000 (default 2000)"},
        {"event_mode", "irq|none: vring interrupts through callfds, or none (the frontend "
                       "polls); default irq when the device has QP event mode"},
        {"event_core", "CPU of the kick and interrupt threads, -1..1023 (default -1: any)"},
        {"emu_<key>", emu_help},
    };
    return keys;
}

Result<DeviceConfig> parse_device_config(const KeyValues& kv) {
    DeviceConfig c;
    std::string emu_overrides;
    for (size_t i = 0; i < kv.size(); i++) {
        const auto& [k, v] = kv[i];
        for (size_t j = 0; j < i; j++)
            if (kv[j].first == k)
                return fail(Errc::InvalidArgument, "devarg " + k + " given twice (" + k + "=" +
                                                       kv[j].second + ", then " + k + "=" + v +
                                                       "): give each key once");
        if (k == "emu") {
            if (v != "cx6dx" && v != "cx7") return bad(k, v, "cx6dx|cx7");
            c.emu_spec = v;
        } else if (k == "dev") {
            if (!is_pci_bdf(v) && !is_ibdev_name(v))
                return bad(k, v, "a PCI address [dddd:]bb:dd.f or an ibv device name (mlx5_0)");
            c.pci_bdf = v;
        } else if (k == "queues") {
            auto r = parse_uint(k, v, 1, 512);
            MLX5A_CHECK(r);
            c.queues = uint32_t(*r);
        } else if (k == "queue_size") {
            auto r = parse_uint(k, v, 2, 32768);
            MLX5A_CHECK(r);
            if (*r & (*r - 1)) return bad(k, v, "a power of 2 in 2..32768");
            c.queue_size = uint32_t(*r);
        } else if (k == "max_inflight") {
            auto r = parse_uint(k, v, 1, 256);
            MLX5A_CHECK(r);
            c.max_inflight = uint32_t(*r);
        } else if (k == "strategy") {
            auto r = parse_strategy(v);
            MLX5A_CHECK(r);
            c.strategy = *r;
        } else if (k == "max_conf_threads") {
            auto r = parse_uint(k, v, 1, 64);
            MLX5A_CHECK(r);
            c.threads = uint32_t(*r);
        } else if (k == "timeout_ms") {
            auto r = parse_uint(k, v, 1, 600000);
            MLX5A_CHECK(r);
            c.timeout_ms = uint32_t(*r);
        } else if (k == "event_mode") {
            if (v == "irq") c.event_mode = EventMode::Irq;
            else if (v == "none") c.event_mode = EventMode::None;
            else return bad(k, v, "irq|none");
            c.event_mode_set = true;
        } else if (k == "event_core") {
            if (v == "-1") {
                c.event_core = -1;
            } else {
                auto r = parse_uint(k, v, 0, 1023);
                MLX5A_CHECK(r);
                c.event_core = int(*r);
            }
        } else if (std::string_view(k).starts_with(kEmuPrefix)) {
            std::string_view sub = std::string_view(k).substr(kEmuPrefix.size());
            bool known = false;
            for (auto e : kEmuKeys) known = known || e == sub;
            if (!known) return bad(k, v, "an emulator key: " + emu_key_list());
            auto r = parse_uint(k, v, 0, 10000000);
            MLX5A_CHECK(r);
            emu_overrides += "," + std::string(sub) + "=" + v;
        } else {
            std::string keys;
            for (const auto& [name, _] : devarg_keys()) keys += (keys.empty() ? "" : ", ") + std::string(name);
            return fail(Errc::InvalidArgument, "unknown devarg '" + k + "' (accepted: " + keys + ")");
        }
    }
    if (c.emu_spec.empty() == c.pci_bdf.empty())
        return fail(Errc::InvalidArgument,
                    "devargs: exactly one of emu=<profile> or dev=<PCI address> is required");
    if (!emu_overrides.empty()) {
        if (!c.is_emulated())
            return fail(Errc::InvalidArgument, "devargs: emu_* keys apply only with emu=<profile>");
        c.emu_spec += emu_overrides;
    }
    if (c.queues != 0 && c.queue_size == 0) c.queue_size = 256;  // DPDK mlx5's default ring size
    return c;
}

}  // namespace mlx5async::core
