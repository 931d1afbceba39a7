// The emulator plugin's own API (include/mlx5emu/mlx5emu.h) for devices the PMD
// runs on it (emu= devargs): the cost model's latencies and ideal times,
// fault rules and the objects the device holds. Resolved at run time from the copy of libmlx5emu.so the
// PMD loaded: on hardware there is none, and these report nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <mlx5emu.h>

#include "app.hpp"

namespace vdpa_testpmd {

// The model of p's device; nullopt when it is not emulated.
std::optional<mlx5emu_model> emulator_model(const Port& p);
// The model's ideal of `op` over `queues` virtqs with p's max_inflight (0:
// not emulated).
uint64_t emulator_ideal_ns(const Port& p, rte_pmd_mlx5async_op op, uint32_t queues);
// A fault rule on p's emulated device: 0, -ENOTSUP when it is not
// emulated, or -errno with the reason in `why`.
int emulator_fault(const Port& p, const char* rule, std::string& why);
// The objects p's emulated device holds; nullopt when it is not emulated.
std::optional<mlx5emu_objects> emulator_objects(const Port& p);

}  // namespace vdpa_testpmd
