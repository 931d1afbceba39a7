/* The tracepoints' definitions (trace_points.h says what each records),
 * included by trace_register.c (after rte_trace_point_register.h) and by
 * trace_emit.c. */
#ifndef MLX5A_TRACE_DEFS_H
#define MLX5A_TRACE_DEFS_H

#include <rte_trace_point.h>

RTE_TRACE_POINT(
	mlx5a_tp_batch_submit,
	RTE_TRACE_POINT_ARGS(const char *dev, const char *batch, uint32_t entries, uint32_t steps),
	rte_trace_point_emit_string(dev);
	rte_trace_point_emit_string(batch);
	rte_trace_point_emit_u32(entries);
	rte_trace_point_emit_u32(steps);
)

RTE_TRACE_POINT(
	mlx5a_tp_batch_return,
	RTE_TRACE_POINT_ARGS(const char *dev, const char *batch, uint32_t done, uint32_t failed,
			     uint32_t timed_out, uint64_t elapsed_ns),
	rte_trace_point_emit_string(dev);
	rte_trace_point_emit_string(batch);
	rte_trace_point_emit_u32(done);
	rte_trace_point_emit_u32(failed);
	rte_trace_point_emit_u32(timed_out);
	rte_trace_point_emit_u64(elapsed_ns);
)

RTE_TRACE_POINT(
	mlx5a_tp_cmd_issue,
	RTE_TRACE_POINT_ARGS(const char *dev, const char *type, uint16_t opcode, int32_t queue,
			     uint32_t obj_id),
	rte_trace_point_emit_string(dev);
	rte_trace_point_emit_string(type);
	rte_trace_point_emit_u16(opcode);
	rte_trace_point_emit_i32(queue);
	rte_trace_point_emit_u32(obj_id);
)

RTE_TRACE_POINT(
	mlx5a_tp_cmd_complete,
	RTE_TRACE_POINT_ARGS(const char *dev, const char *type, uint16_t opcode, int32_t queue,
			     uint32_t obj_id, uint8_t status, uint32_t syndrome, int32_t err,
			     uint64_t latency_ns),
	rte_trace_point_emit_string(dev);
	rte_trace_point_emit_string(type);
	rte_trace_point_emit_u16(opcode);
	rte_trace_point_emit_i32(queue);
	rte_trace_point_emit_u32(obj_id);
	rte_trace_point_emit_u8(status);
	rte_trace_point_emit_u32(syndrome);
	rte_trace_point_emit_i32(err);
	rte_trace_point_emit_u64(latency_ns);
)

RTE_TRACE_POINT(
	mlx5a_tp_ledger_phase,
	RTE_TRACE_POINT_ARGS(const char *dev, const char *phase, uint64_t seq, uint64_t mono_ns,
			     uint64_t wall_ns),
	rte_trace_point_emit_string(dev);
	rte_trace_point_emit_string(phase);
	rte_trace_point_emit_u64(seq);
	rte_trace_point_emit_u64(mono_ns);
	rte_trace_point_emit_u64(wall_ns);
)

#endif
