/* Registers the tracepoints of trace_defs.h under pmd.vdpa.mlx5async.*
 * (load-time constructors). */
#include <rte_trace_point_register.h>

#include "trace_defs.h"

RTE_TRACE_POINT_REGISTER(mlx5a_tp_batch_submit, pmd.vdpa.mlx5async.batch.submit)
RTE_TRACE_POINT_REGISTER(mlx5a_tp_batch_return, pmd.vdpa.mlx5async.batch.return)
RTE_TRACE_POINT_REGISTER(mlx5a_tp_cmd_issue, pmd.vdpa.mlx5async.cmd.issue)
RTE_TRACE_POINT_REGISTER(mlx5a_tp_cmd_complete, pmd.vdpa.mlx5async.cmd.complete)
RTE_TRACE_POINT_REGISTER(mlx5a_tp_ledger_phase, pmd.vdpa.mlx5async.ledger.phase)
