/* mlx5emu, the emulated ConnectX: its own API for programs that drive it
 * (fault injection, the cost model's latencies). Installed with the
 * emulator plugin (libmlx5emu.so, package mlx5async-emulator); the PMD
 * knows none of it. A device is named as the PMD named it: the
 * backend_device of rte_pmd_mlx5async_dev_info. A program that did not link
 * libmlx5emu.so finds these functions in the copy the PMD loaded:
 * dlopen(MLX5EMU_SONAME, RTLD_NOW | RTLD_NOLOAD), then dlsym. */
#ifndef MLX5EMU_H
#define MLX5EMU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MLX5EMU_SONAME "libmlx5emu.so.0"

/* The cost model of a device: per-command latencies and the firmware's
 * limit of general-object commands in flight. */
struct mlx5emu_model {
	uint64_t modify_ns;     /* MODIFY_GENERAL_OBJECT */
	uint64_t query_ns;      /* QUERY_GENERAL_OBJECT */
	uint32_t max_inflight;  /* the firmware throttle */
};

/* 0, or -ENOENT when no emulated device has that name. */
int mlx5emu_get_model(const char *device, struct mlx5emu_model *m);

/* The model's ideal time of a multi-queue operation on `queues` virtqs by a
 * driver keeping at most `max_inflight` commands in flight:
 * ceil(queues / min(max_inflight, the firmware's)) waves of one MODIFY
 * (resume) or of a pipelined MODIFY + QUERY (suspend). 0 when the device
 * is unknown or queues is 0. */
uint64_t mlx5emu_ideal_ns(const char *device, int suspend, uint32_t queues, uint32_t max_inflight);

/* A fault rule on a device (doc/emulator.md, "Fault injection"), e.g.
 * "op=modify nth=3 status=0x9 syndrome=0x1", "op=query hang",
 * "vq=5 error_type=1" (virtq 5 to ERR) or "clear". 0, or -errno with the
 * reason in err. */
int mlx5emu_fault(const char *device, const char *rule, char *err, size_t errlen);

/* The objects a device holds (the firmware's view, whoever made them):
 * what a leak check compares over time. */
struct mlx5emu_objects {
	uint32_t pds;
	uint32_t uars;
	uint32_t umems;
	uint32_t mkeys;
	uint32_t counters;  /* virtio_q_counters */
	uint32_t virtqs;
	uint32_t cqs;
	uint32_t qps;
	uint32_t sqs;
};

/* 0, or -ENOENT when no emulated device has that name. */
int mlx5emu_get_objects(const char *device, struct mlx5emu_objects *o);

#ifdef __cplusplus
}
#endif

#endif /* MLX5EMU_H */
