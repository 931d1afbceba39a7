#include "config.hpp"

#include <sys/un.h>

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "plugin_loader.hpp"

namespace mlx5async::core {
namespace {

// emu_<key> devargs are forwarded into the emulator spec ("cx7,modify_us=0"),
// which the emulator itself checks (check_emulator_spec).
constexpr std::string_view kEmuPrefix = "emu_";

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

bool is_pci_address(std::string_view s) {
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

Unexpected<Error> bad(std::string_view key, std::string_view value, std::string_view expected) {
    return fail(Errc::InvalidArgument, "devarg " + std::string(key) + "=" + std::string(value) +
                                           ": expected " + std::string(expected));
}

}  // namespace

Result<Strategy> parse_strategy(std::string_view s) {
    if (auto v = devx::parse_strategy(s)) return *v;
    return bad("strategy", s, devx::strategy_choices());
}

const std::vector<std::pair<std::string_view, std::string_view>>& devarg_keys() {
    static const std::vector<std::pair<std::string_view, std::string_view>> keys = {
        {"emu", "emulated device profile: cx6dx|cx7"},
        {"dev", "a ConnectX through rdma-core: PCI address [dddd:]bb:dd.f or ibv device name"},
        {"queues", "queue pairs to pre-create at probe, 1..512"},
        {"queue_size", "ring size to pre-create with, power of 2 in 2..32768"},
        {"max_inflight", "firmware commands in flight, 1..256 (default 16)"},
        {"strategy", MLX5A_STRATEGY_CHOICES " (default async)"},
        {"max_conf_threads", "worker threads of the threads strategy, 1..64 (DPDK mlx5 name)"},
        {"timeout_ms", "deadline of one control batch, 1..600000 (default 2000)"},
        {"start_attempts", "attempts of a start that failed in the firmware, 1..10 (default 3; 1: "
                           "no retry)"},
        {"event_mode", "irq|none: vring interrupts through callfds, or none (the frontend "
                       "polls); default irq when the device has QP event mode"},
        {"event_core", "CPU of the kick and interrupt threads, -1..1023 (default -1: any)"},
        {"vhost_socket", "a vhost-user socket the driver registers, attaches the device to and "
                         "starts at probe: an absolute path of at most 107 bytes"},
        {"vhost_client", "0|1: 1 connects to vhost_socket as a client (the frontend listens); "
                         "default 0"},
        {"announce", "on|off: the device announces the VM (RARP) when a start has every ring "
                     "ready, and when QEMU asks (SEND_RARP); default on"},
        {"announce_rounds", "RARPs per announce, 1..1000 (default 5, QEMU's announce-rounds)"},
        {"announce_initial_ms", "wait after the first RARP, 1..100000 (default 50, announce-initial)"},
        {"announce_step_ms", "each later wait grows by this, 0..10000 (default 100, announce-step)"},
        {"announce_max_ms", "longest wait between RARPs, 1..100000 (default 550, announce-max)"},
        {"emu_<key>", "emulator spec override (emu_modify_us=0 ...; keys: doc/emulator.md)"},
    };
    return keys;
}

namespace {

// One devarg into `c`; `emu_overrides` collects the emu_<key> ones.
Result<void> apply_devarg(DeviceConfig& c, std::string& emu_overrides, const std::string& k,
                          const std::string& v) {
    auto set_uint = [&](uint32_t& dst, uint64_t lo, uint64_t hi) -> Result<void> {
        auto r = parse_uint(k, v, lo, hi);
        MLX5A_CHECK(r);
        dst = uint32_t(*r);
        return {};
    };
    if (k == "emu") {
        c.emu_spec = v;
    } else if (k == "dev") {
        if (!is_pci_address(v) && !is_ibdev_name(v))
            return bad(k, v, "a PCI address [dddd:]bb:dd.f or an ibv device name (mlx5_0)");
        c.hw_device = v;
    } else if (k == "queues") {
        return set_uint(c.queues, 1, 512);
    } else if (k == "queue_size") {
        MLX5A_CHECK(set_uint(c.queue_size, 2, 32768));
        if (c.queue_size & (c.queue_size - 1)) return bad(k, v, "a power of 2 in 2..32768");
    } else if (k == "max_inflight") {
        return set_uint(c.max_inflight, kMaxInflightRange.lo, kMaxInflightRange.hi);
    } else if (k == "strategy") {
        auto r = parse_strategy(v);
        MLX5A_CHECK(r);
        c.strategy = *r;
    } else if (k == "max_conf_threads") {
        return set_uint(c.threads, 1, 64);
    } else if (k == "timeout_ms") {
        return set_uint(c.timeout_ms, kTimeoutMsRange.lo, kTimeoutMsRange.hi);
    } else if (k == "start_attempts") {
        return set_uint(c.start_attempts, 1, 10);
    } else if (k == "event_mode") {
        if (v == "irq") c.event_mode = EventMode::Irq;
        else if (v == "none") c.event_mode = EventMode::None;
        else return bad(k, v, "irq|none");
        c.event_mode_set = true;
    } else if (k == "event_core") {
        if (v == "-1") {
            c.event_core = -1;
            return {};
        }
        uint32_t cpu = 0;
        MLX5A_CHECK(set_uint(cpu, 0, 1023));
        c.event_core = int(cpu);
    } else if (k == "vhost_socket") {
        // vhost binds or connects a sockaddr_un: the path and its NUL fit sun_path.
        constexpr size_t kMaxPath = sizeof(sockaddr_un::sun_path) - 1;
        if (v.empty() || v[0] != '/' || v.size() > kMaxPath)
            return bad(k, v, "an absolute path of at most " + std::to_string(kMaxPath) + " bytes (" +
                                 std::to_string(v.size()) + " given)");
        c.vhost_socket = v;
    } else if (k == "vhost_client") {
        if (v != "0" && v != "1") return bad(k, v, "0|1");
        c.vhost_client = v == "1";
    } else if (k == "announce") {
        if (v != "on" && v != "off") return bad(k, v, "on|off");
        c.announce.on = v == "on";
        c.announce.set = true;
    } else if (k == "announce_rounds") {
        return set_uint(c.announce.rounds, 1, 1000);
    } else if (k == "announce_initial_ms") {
        return set_uint(c.announce.initial_ms, 1, 100000);
    } else if (k == "announce_step_ms") {
        return set_uint(c.announce.step_ms, 0, 10000);
    } else if (k == "announce_max_ms") {
        return set_uint(c.announce.max_ms, 1, 100000);
    } else if (std::string_view(k).starts_with(kEmuPrefix) && k.size() > kEmuPrefix.size()) {
        if (v.find(',') != std::string::npos || v.find('=') != std::string::npos)
            return bad(k, v, "a single value");
        emu_overrides += "," + k.substr(kEmuPrefix.size()) + "=" + v;
    } else {
        std::string keys;
        for (const auto& [name, _] : devarg_keys()) keys += (keys.empty() ? "" : ", ") + std::string(name);
        return fail(Errc::InvalidArgument, "unknown devarg '" + k + "' (accepted: " + keys + ")");
    }
    return {};
}

}  // namespace

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
        MLX5A_CHECK(apply_devarg(c, emu_overrides, k, v));
    }
    if (c.emu_spec.empty() == c.hw_device.empty())
        return fail(Errc::InvalidArgument,
                    "devargs: exactly one of emu=<profile> or dev=<PCI address> is required");
    const bool client_given =
        std::any_of(kv.begin(), kv.end(), [](const auto& p) { return p.first == "vhost_client"; });
    if (client_given && c.vhost_socket.empty())
        return fail(Errc::InvalidArgument, "devargs: vhost_client applies only with vhost_socket=<path>");
    if (!emu_overrides.empty()) {
        if (!c.is_emulated())
            return fail(Errc::InvalidArgument, "devargs: emu_* keys apply only with emu=<profile>");
        c.emu_spec += emu_overrides;
    }
    if (c.is_emulated())
        if (auto ok = check_emulator_spec(c.emu_spec); !ok)
            return fail(ok.error().code == Errc::NotSupported ? Errc::NotSupported : Errc::InvalidArgument,
                        "devargs emu=" + c.emu_spec.substr(0, c.emu_spec.find(',')) +
                                             (emu_overrides.empty() ? "" : " with emu_* keys") +
                                             ": " + ok.error().what);
    if (c.queues != 0 && c.queue_size == 0) c.queue_size = 256;  // DPDK mlx5's default ring size
    return c;
}

}  // namespace mlx5async::core
