#include "profile.hpp"

#include <charconv>
#include <vector>

#include "common/prm/opcodes.hpp"
#include "common/prm/virtq.hpp"
#include "common/prm/vport.hpp"

namespace mlx5async::emu {
namespace {

constexpr uint64_t obj_bit(prm::ObjType t) { return 1ull << uint16_t(t); }

// device_features_bits_mask, in the PRM's numbering (prm::queue_feature_bits,
// Linux MLX5_VIRTIO_NET_F_*), not virtio's. Only what the loopback implements
// (doc/emulator.md, "Offloads"): CSUM (it completes NEEDS_CSUM checksums),
// GUEST_CSUM (it may deliver NEEDS_CSUM) and MRG_RXBUF (a packet spans
// receive buffers). Not HOST_TSO4/6: it does not segment.
constexpr uint16_t kNetFeatures = (1u << prm::queue_feature_bits::CSUM) |
                                  (1u << prm::queue_feature_bits::GUEST_CSUM) |
                                  (1u << prm::queue_feature_bits::MRG_RXBUF);

// sq_ts_format: cx6dx free-running timestamps only, cx7 both formats.
prm::GeneralCaps general_caps(uint16_t vhca_id, uint8_t sq_ts_format) {
    prm::GeneralCaps g;
    g.vhca_id = vhca_id;
    g.sq_ts_format = sq_ts_format;
    g.log_max_pd = 18;
    g.umem_uid_0 = true;
    g.event_cap = true;  // DevX event masks valid (OBJECT_CHANGE subscribable)
    g.eth_net_offloads = true;
    g.general_obj_types = obj_bit(prm::ObjType::VIRTIO_NET_Q) |
                          obj_bit(prm::ObjType::VIRTIO_Q_COUNTERS);
    return g;
}

// Values are illustrative, not read from hardware (doc/emulator.md).
prm::VirtioEmulationCaps virtio_caps(bool cx7) {
    prm::VirtioEmulationCaps v;
    v.eth_frame_offload_type = true;
    v.virtio_version_1_0 = true;
    v.device_features_bits_mask = kNetFeatures;
    v.event_mode = cx7 ? 0x7 : 0x3;         // 1 << NO_MSIX | 1 << QP (| 1 << MSIX)
    v.virtio_queue_type = 0x3;  // split and packed (the datapath runs both)
    v.max_tunnel_desc = 0;
    v.log_doorbell_stride = 2;  // 4-byte doorbell registers
    v.log_doorbell_bar_size = 12;
    v.doorbell_bar_offset = 0x3000;
    v.max_emulated_devices = cx7 ? 16 : 8;
    v.max_num_virtio_queues = cx7 ? 512 : 256;
    v.desc_group_mkey_supported = cx7;
    v.freeze_to_rdy_supported = cx7;  // cx6dx: older FW, resume unsupported
    v.umem_param[0] = {128, 4096};
    v.umem_param[1] = {128, 4096};
    v.umem_param[2] = {16, 4096};
    return v;
}

Result<uint64_t> parse_uint(std::string_view key, std::string_view v) {
    uint64_t out = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || p != v.data() + v.size())
        return fail(Errc::InvalidArgument, "emu spec: " + std::string(key) + "=" +
                                               std::string(v) + " is not a number");
    return out;
}

Result<void> set_u32(uint32_t& dst, std::string_view key, std::string_view v, uint64_t max) {
    auto n = parse_uint(key, v);
    if (!n) return unexpected(n.error());
    if (*n > max)
        return fail(Errc::InvalidArgument, "emu spec: " + std::string(key) + " out of range");
    dst = uint32_t(*n);
    return {};
}

// "52:54:00:12:34:56": six hex octets, colon-separated.
Result<uint64_t> parse_mac(std::string_view v) {
    uint64_t mac = 0;
    auto bad = [&] {
        return fail(Errc::InvalidArgument, "emu spec: mac=" + std::string(v) +
                                               " is not six hex octets (52:54:00:12:34:56)");
    };
    if (v.size() != 17) return bad();
    for (size_t i = 0; i < 6; ++i) {
        if (i && v[3 * i - 1] != ':') return bad();
        unsigned octet = 0;
        auto [p, ec] = std::from_chars(v.data() + 3 * i, v.data() + 3 * i + 2, octet, 16);
        if (ec != std::errc() || p != v.data() + 3 * i + 2) return bad();
        mac = (mac << 8) | octet;
    }
    return mac;
}

Result<void> apply_key(Profile& p, std::string_view k, std::string_view v) {
    struct U32Key { std::string_view name; uint32_t* dst; uint64_t max; };
    const U32Key keys[] = {
        {"modify_us", &p.timing.modify_us, 10'000'000}, {"query_us", &p.timing.query_us, 10'000'000},
        {"create_us", &p.timing.create_us, 10'000'000}, {"destroy_us", &p.timing.destroy_us, 10'000'000},
        {"umem_us", &p.timing.umem_us, 10'000'000},     {"general_us", &p.timing.general_us, 10'000'000},
        {"jitter_pct", &p.timing.jitter_pct, 100},      {"max_inflight", &p.max_inflight, 1024},
        {"cmd_slots", &p.cmd_slots, 1024},              {"max_virtqs", &p.virtio.max_num_virtio_queues, 4096},
        {"cmd_timeout_ms", &p.timing.cmd_timeout_ms, 3'600'000},
        {"pin_ns", &p.timing.pin_ns, 1'000'000},         {"unpin_ns", &p.timing.unpin_ns, 1'000'000},
        {"mtt_ns", &p.timing.mtt_ns, 1'000'000},         {"mtt_lanes", &p.timing.mtt_lanes, 1024},
        {"mkey_us", &p.timing.mkey_us, 10'000'000},
        {"mtu", &p.mtu, 65535 - prm::kEthHardMtuOverhead},
        {"pin_cpus", &p.timing.pin_cpus, 4096},
    };
    for (const auto& key : keys)
        if (k == key.name) return set_u32(*key.dst, k, v, key.max);
    if (k == "packed") {  // a device (firmware) without packed virtqs: split only
        uint32_t b = 0;
        MLX5A_CHECK(set_u32(b, k, v, 1));
        p.virtio.virtio_queue_type = b ? 0x3 : 0x1;
        return {};
    }
    if (k == "freeze_to_rdy") {
        uint32_t b = 0;
        MLX5A_CHECK(set_u32(b, k, v, 1));
        p.virtio.freeze_to_rdy_supported = b != 0;
        return {};
    }
    if (k == "shared_page_kib") {
        MLX5A_CHECK(set_u32(p.shared_page_kib, k, v, 1u << 20));
        if (p.shared_page_kib != 4 && p.shared_page_kib != 2048 && p.shared_page_kib != (1u << 20))
            return fail(Errc::InvalidArgument, "emu spec: shared_page_kib must be 4, 2048 or 1048576");
        return {};
    }
    if (k == "seed") {
        auto n = parse_uint(k, v);
        if (!n) return unexpected(n.error());
        p.seed = *n;
        return {};
    }
    if (k == "mac") {
        auto mac = parse_mac(v);
        if (!mac) return unexpected(mac.error());
        p.mac = *mac;
        return {};
    }
    if (k == "wire_pcap") {
        if (v.empty() || v[0] != '/')
            return fail(Errc::InvalidArgument, "emu spec: wire_pcap must be an absolute path");
        p.wire_pcap = std::string(v);
        return {};
    }
    if (k == "early_kicks") {
        if (v == "replay") p.replay_early_kicks = true;
        else if (v == "drop") p.replay_early_kicks = false;
        else return fail(Errc::InvalidArgument, "emu spec: early_kicks must be replay or drop");
        return {};
    }
    if (k == "clock") {
        if (v == "steady") p.clock = ClockKind::Steady;
        else if (v == "manual") p.clock = ClockKind::Manual;
        else return fail(Errc::InvalidArgument, "emu spec: clock must be steady or manual");
        return {};
    }
    return fail(Errc::InvalidArgument, "emu spec: unknown key '" + std::string(k) + "'");
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    size_t pos = 0;
    while (true) {
        size_t e = s.find(sep, pos);
        out.push_back(s.substr(pos, e == std::string_view::npos ? e : e - pos));
        if (e == std::string_view::npos) break;
        pos = e + 1;
    }
    return out;
}

}  // namespace

Result<Profile> builtin_profile(std::string_view name) {
    Profile p;
    p.name = std::string(name);
    if (name == "cx6dx") {
        p.general = general_caps(0x10, 0);
        p.virtio = virtio_caps(false);
    } else if (name == "cx7") {
        p.general = general_caps(0x20, 2);
        p.virtio = virtio_caps(true);
    } else {
        return fail(Errc::NotFound, "emu: unknown profile '" + std::string(name) +
                                        "' (cx6dx, cx7)");
    }
    return p;
}

Result<Profile> parse_spec(std::string_view spec) {
    auto parts = split(spec, ',');
    auto p = builtin_profile(parts[0]);
    if (!p) return p;
    for (size_t i = 1; i < parts.size(); ++i) {
        auto kv = parts[i];
        size_t eq = kv.find('=');
        if (eq == std::string_view::npos)
            return fail(Errc::InvalidArgument, "emu spec: '" + std::string(kv) + "' is not key=value");
        MLX5A_CHECK(apply_key(*p, kv.substr(0, eq), kv.substr(eq + 1)));
    }
    if (p->mtu < 68)  // IPv4's minimum (RFC 791), as virtio's VIRTIO_MIN_MTU
        return fail(Errc::InvalidArgument, "emu spec: mtu must be at least 68");
    if (p->max_inflight == 0 || p->cmd_slots == 0 || p->max_inflight > p->cmd_slots)
        return fail(Errc::InvalidArgument, "emu spec: need 0 < max_inflight <= cmd_slots");
    return p;
}

}  // namespace mlx5async::emu
