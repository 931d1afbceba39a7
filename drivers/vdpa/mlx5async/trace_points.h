/* The PMD's rte_trace tracepoints (DPDK's RTE_TRACE_POINT conventions),
 * registered under pmd.vdpa.mlx5async.*: EAL's --trace=pmd.vdpa.mlx5async.*
 * records them, and the CTF trace it writes at exit (--trace-dir) reads
 * back with babeltrace2. C: DPDK's trace macros use typeof.
 *
 *   batch.submit   a firmware batch handed to the engine (what for, entries, steps)
 *   batch.return   the engine returned it (done, failed, timed out, elapsed)
 *   cmd.issue      one command, just before it reaches the device
 *   cmd.complete   its answer (PRM status, syndrome, the call's errno, latency)
 *   ledger.phase   a downtime-ledger phase stamped (core/ledger.hpp)
 */
#ifndef MLX5A_TRACE_POINTS_H
#define MLX5A_TRACE_POINTS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void mlx5a_trace_batch_submit(const char *dev, const char *batch, uint32_t entries, uint32_t steps);
void mlx5a_trace_batch_return(const char *dev, const char *batch, uint32_t done, uint32_t failed,
			      uint32_t timed_out, uint64_t elapsed_ns);
void mlx5a_trace_cmd_issue(const char *dev, const char *type, uint16_t opcode, int32_t queue,
			   uint32_t obj_id);
void mlx5a_trace_cmd_complete(const char *dev, const char *type, uint16_t opcode, int32_t queue,
			      uint32_t obj_id, uint8_t status, uint32_t syndrome, int32_t err,
			      uint64_t latency_ns);
void mlx5a_trace_ledger_phase(const char *dev, const char *phase, uint64_t seq, uint64_t mono_ns,
			      uint64_t wall_ns);

#ifdef __cplusplus
}
#endif

#endif
