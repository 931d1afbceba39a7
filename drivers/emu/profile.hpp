// ConnectX profiles: the caps a device reports and its command timing model,
// plugged into the emulator core as one small attribute struct (vdpa_sim's
// vdpasim_dev_attr shape). Parsed from "profile[,key=value...]".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/base/result.hpp"
#include "common/prm/caps.hpp"

namespace mlx5async::emu {

// Per-command latency in microseconds. Defaults reproduce the published
// sequential numbers (doc/emulator.md, "Timing model").
struct Timing {
    uint32_t create_us = 800;   // CREATE_GENERAL_OBJECT (estimate)
    uint32_t modify_us = 500;   // MODIFY_GENERAL_OBJECT: 32 x 0.5 ms = 16 ms resume
    uint32_t query_us = 656;    // QUERY_GENERAL_OBJECT: 32 x (0.5 + 0.656) = 37 ms suspend
    uint32_t destroy_us = 400;  // DESTROY_GENERAL_OBJECT (estimate)
    uint32_t umem_us = 150;     // CREATE_UMEM / DESTROY_UMEM, fixed part (estimate)
    uint32_t general_us = 50;   // QUERY_HCA_CAP, PD, UAR, VAR (estimate)
    // Memory registration (doc/emulator.md, "Memory registration"):
    uint32_t pin_ns = 25;       // per backing page pinned by umem_reg (estimate)
    uint32_t unpin_ns = 10;     // per backing page released by umem_dereg (estimate)
    uint32_t mtt_ns = 12;       // per MTT/KLM entry the firmware writes (calibrated)
    uint32_t mtt_lanes = 4;     // translation-writing commands the firmware runs at once (estimate)
    // Host CPUs pinning umem pages, shared by every emulated device of the
    // process (0: as many as commands; pin_pool.hpp). 32: a large host's
    // cores left to the switch.
    uint32_t pin_cpus = 32;
    uint32_t mkey_us = 40;      // CREATE_MKEY / DESTROY_MKEY, fixed part (estimate)
    // A command the firmware never answers fails after this, as mlx5_core's
    // command timeout (MLX5_CMD_TIMEOUT_MSEC, 60 s) fails it with ETIMEDOUT.
    uint32_t cmd_timeout_ms = 60'000;
    uint32_t jitter_pct = 0;    // each latency scaled by 1 +- U(jitter_pct/100)
};

enum class ClockKind : uint8_t { Steady, Manual };

struct Profile {
    std::string name;  // "cx6dx", "cx7"
    prm::GeneralCaps general;
    prm::VirtioEmulationCaps virtio;
    Timing timing;
    uint32_t max_inflight = 16;  // mlx5_core throttle: ceil(max_reg_cmds / 2)
    uint32_t cmd_slots = 32;     // max_reg_cmds
    // The NIC vport's MTU (QUERY_NIC_VPORT_CONTEXT), the largest IP packet:
    // the loopback drops longer frames as the port would.
    uint32_t mtu = 1500;
    // The NIC vport's permanent_address (QUERY_NIC_VPORT_CONTEXT), 48 bits;
    // 0: none set (a VF whose MAC the administrator left unset).
    uint64_t mac = 0;
    // Where the port's wire is written as pcap (empty: nowhere).
    std::string wire_pcap;
    // The page size shared memory not on hugetlbfs is pinned and translated
    // in, KiB: 4 (the kernel's), or 2048 / 1048576 to model a guest on
    // hugepages without reserving them (benchmarks; hugetlbfs memory always
    // counts in its own pages).
    uint32_t shared_page_kib = 4;
    // A doorbell for a virtq not yet RDY is kept and replayed when it turns
    // RDY (vdpa_sim's pending_kick), or forgotten (early_kicks=drop: what the
    // driver must not depend on, since hardware need not keep it).
    bool replay_early_kicks = true;
    ClockKind clock = ClockKind::Steady;
    uint64_t seed = 1;
};

// "cx6dx" or "cx7"; NotFound otherwise.
Result<Profile> builtin_profile(std::string_view name);

// "profile[,key=value...]". Keys: modify_us query_us create_us destroy_us
// umem_us general_us pin_ns unpin_ns mtt_ns mtt_lanes mkey_us cmd_timeout_ms
// jitter_pct max_inflight cmd_slots max_virtqs mtu shared_page_kib=4|2048|1048576 pin_cpus
// early_kicks=replay|drop mac=xx:xx:xx:xx:xx:xx wire_pcap=PATH
// freeze_to_rdy packed clock=steady|manual seed. Unknown keys and bad values are
// InvalidArgument.
Result<Profile> parse_spec(std::string_view spec);

}  // namespace mlx5async::emu
