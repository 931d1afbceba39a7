// mlx5emu public facade: the emulator's DevxApi instance and its devices.
//
//   auto dev = emu::create_device("emu0", "cx7,modify_us=0,query_us=0");
//   const devx::DevxApi& api = emu::api();   // rdma-core semantics
//   ibv_context* ctx = api.open_device(*dev, &attr);
//   emu::device_of(ctx)->faults().add(...);  // tests: faults, trace, clock
//
// Spec syntax and profiles: doc/emulator.md.
#pragma once

#include <infiniband/verbs.h>

#include <string_view>

#include "common/base/result.hpp"
#include "common/devx/devx_api.hpp"
#include "device.hpp"

namespace mlx5async::emu {

inline constexpr const char* kDefaultDeviceName = "mlx5emu0";
inline constexpr const char* kProfileEnv = "MLX5EMU_PROFILE";

// Every entry implemented with rdma-core's return conventions: NULL / -1 /
// an errno value, errno set; a firmware failure fills status + syndrome in
// `out` and the call fails with EREMOTEIO (Linux mlx5_ib devx since 5.19:
// mlx5_cmd_do returns -EREMOTEIO and the output is still copied back).
const devx::DevxApi& api();

// spec: "profile[,key=value...]" (profile.hpp). The name must be unused.
Result<ibv_device*> create_device(std::string_view name, std::string_view spec);
// Closes the device (hung commands end, later commands fail with ENXIO) and
// unregisters it; memory lives on until its last context is closed.
Result<void> destroy_device(std::string_view name);

Device* find_device(std::string_view name);
Device* device_of(ibv_device* dev);
Device* device_of(ibv_context* ctx);

// A fault rule (fault_rule.hpp) on device `name`; "vq=N" names the virtq
// object of queue N (plugin.cpp, also mlx5emu_fault).
Result<void> inject_fault(std::string_view name, std::string_view rule);
// The model's ideal of a multi-queue operation (include/mlx5emu/mlx5emu.h,
// mlx5emu_ideal_ns): the one formula, for the bench and for applications.
uint64_t ideal_ns(const Profile& p, bool suspend, uint32_t queues, uint32_t max_inflight);

// Creates kDefaultDeviceName from $MLX5EMU_PROFILE (default "cx7") when no
// device exists; get_device_list calls it (the shim relies on that).
Result<void> ensure_default_device();

}  // namespace mlx5async::emu
