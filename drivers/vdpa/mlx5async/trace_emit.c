/* trace_points.h's functions: each emits its tracepoint (nothing unless
 * EAL's --trace enabled it). */
#include "trace_points.h"

#include "trace_defs.h"

void mlx5a_trace_batch_submit(const char *dev, const char *batch, uint32_t entries, uint32_t steps)
{
	mlx5a_tp_batch_submit(dev, batch, entries, steps);
}

void mlx5a_trace_batch_return(const char *dev, const char *batch, uint32_t done, uint32_t failed,
			      uint32_t timed_out, uint64_t elapsed_ns)
{
	mlx5a_tp_batch_return(dev, batch, done, failed, timed_out, elapsed_ns);
}

void mlx5a_trace_cmd_issue(const char *dev, const char *type, uint16_t opcode, int32_t queue,
			   uint32_t obj_id)
{
	mlx5a_tp_cmd_issue(dev, type, opcode, queue, obj_id);
}

void mlx5a_trace_cmd_complete(const char *dev, const char *type, uint16_t opcode, int32_t queue,
			      uint32_t obj_id, uint8_t status, uint32_t syndrome, int32_t err,
			      uint64_t latency_ns)
{
	mlx5a_tp_cmd_complete(dev, type, opcode, queue, obj_id, status, syndrome, err, latency_ns);
}

void mlx5a_trace_ledger_phase(const char *dev, const char *phase, uint64_t seq, uint64_t mono_ns,
			      uint64_t wall_ns)
{
	mlx5a_tp_ledger_phase(dev, phase, seq, mono_ns, wall_ns);
}
