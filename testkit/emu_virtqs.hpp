// N ready virtqs on a device reachable through a DevxApi (the emulator in
// integration tests and benchmarks): PD, three umems per queue sized from the
// virtio emulation caps, CREATE, then MODIFY to RDY. Creation goes through
// the engine (async, batched), like the PMD's probe would.
#pragma once

#include <string_view>
#include <vector>

#include "common/base/result.hpp"
#include "common/devx/devx_api.hpp"
#include "common/devx/raii.hpp"
#include "common/prm/caps.hpp"

namespace mlx5async::testing {

struct VirtqSetup {
    uint16_t queue_size = 256;
    // Initial hw indexes, set at CREATE: queue q gets base + q, so every
    // queue's indexes are distinct and a crossed result shows.
    uint16_t avail_base = 100;
    uint16_t used_base = 40;
    unsigned max_inflight = 16;
};

struct ReadyVirtqs {
    // Declaration order = reverse destruction order: objects before umems
    // before the PD, all before the context.
    devx::Context ctx;
    devx::Pd pd;
    std::vector<devx::Umem> umems;  // 3 per queue
    std::vector<devx::DevxObj> vqs;
    prm::VirtioEmulationCaps caps;
    VirtqSetup setup;

    uint16_t avail_of(size_t q) const { return uint16_t(setup.avail_base + q); }
    uint16_t used_of(size_t q) const { return uint16_t(setup.used_base + q); }
};

// Blocking QUERY_HCA_CAP of the virtio emulation caps.
Result<prm::VirtioEmulationCaps> query_virtio_caps(const devx::Context& ctx);

Result<ReadyVirtqs> make_ready_virtqs(const devx::DevxApi& api, std::string_view device,
                                      unsigned n, VirtqSetup setup = {});

}  // namespace mlx5async::testing
