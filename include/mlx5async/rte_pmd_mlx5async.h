/* SPDX-License-Identifier: BSD-3-Clause
 * mlx5async vDPA PMD: public API beyond rte_vdpa_dev_ops.
 *
 * Per-device and multi-device suspend/resume (one firmware batch per device
 * over its virtqs, every listed device at once), virtq state queries, the last operation's
 * timing breakdown, engine settings and command tracing, for applications
 * such as vdpa-testpmd and migration orchestrators.
 *
 * All functions return 0 (or a count) on success and a negative errno on
 * failure; none blocks longer than the device's timeout_ms.
 */
#ifndef RTE_PMD_MLX5ASYNC_H
#define RTE_PMD_MLX5ASYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_vdpa.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RTE_PMD_MLX5ASYNC_DRIVER_NAME "vdpa_mlx5async"

enum rte_pmd_mlx5async_strategy {
	RTE_PMD_MLX5ASYNC_STRATEGY_ASYNC = 0,      /* batched async engine */
	RTE_PMD_MLX5ASYNC_STRATEGY_SEQUENTIAL = 1, /* one blocking command at a time */
	RTE_PMD_MLX5ASYNC_STRATEGY_THREADS = 2,    /* DPDK max_conf_threads model */
};

enum rte_pmd_mlx5async_op {
	RTE_PMD_MLX5ASYNC_OP_SUSPEND = 0,
	RTE_PMD_MLX5ASYNC_OP_RESUME = 1,
};

/* What a firmware batch was for (rte_pmd_mlx5async_cmd_span.op); SUSPEND
 * and RESUME equal the rte_pmd_mlx5async_op values. */
enum rte_pmd_mlx5async_batch {
	RTE_PMD_MLX5ASYNC_BATCH_SUSPEND = 0,   /* MODIFY(SUSPEND) + QUERY */
	RTE_PMD_MLX5ASYNC_BATCH_RESUME = 1,    /* MODIFY to RDY (start, resume) */
	RTE_PMD_MLX5ASYNC_BATCH_SETUP = 2,     /* creating virtqs and counters */
	RTE_PMD_MLX5ASYNC_BATCH_MEMORY = 3,    /* guest-memory mkeys */
	RTE_PMD_MLX5ASYNC_BATCH_DIRTY_LOG = 4, /* the vhost log and the virtqs' bitmap fields */
	RTE_PMD_MLX5ASYNC_BATCH_COUNTERS = 5,  /* QUERY of virtq counters */
	RTE_PMD_MLX5ASYNC_BATCH_TEARDOWN = 6,  /* unregistering memory */
	RTE_PMD_MLX5ASYNC_BATCH_RECOVERY = 7,  /* re-creating a virtq after an error */
	RTE_PMD_MLX5ASYNC_BATCH_QUERY = 8,     /* live state and indexes */
};

/* The downtime ledger: when each step of the device's last stop (the
 * source side of a live migration, from the first GET_VRING_BASE) and of
 * its last start (the destination side, from dev_conf) happened. */
enum rte_pmd_mlx5async_ledger_phase {
	RTE_PMD_MLX5ASYNC_LEDGER_STOP_REQUESTED = 0,    /* dev_close entered */
	RTE_PMD_MLX5ASYNC_LEDGER_SUSPEND_ISSUED = 1,    /* suspend batch handed to the engine */
	RTE_PMD_MLX5ASYNC_LEDGER_SUSPEND_DONE = 2,      /* every MODIFY + QUERY answered */
	RTE_PMD_MLX5ASYNC_LEDGER_BASES_HANDED_BACK = 3, /* rte_vhost_set_vring_base per ring */
	RTE_PMD_MLX5ASYNC_LEDGER_USED_RINGS_LOGGED = 4, /* used rings logged dirty (LOG_ALL) */
	RTE_PMD_MLX5ASYNC_LEDGER_START_REQUESTED = 5,   /* dev_conf entered */
	RTE_PMD_MLX5ASYNC_LEDGER_MEMORY_REGISTERED = 6, /* guest memory registered or reused */
	RTE_PMD_MLX5ASYNC_LEDGER_VIRTQS_CREATED = 7,    /* every started ring has a virtq */
	RTE_PMD_MLX5ASYNC_LEDGER_ALL_READY = 8,         /* every started ring RDY */
	RTE_PMD_MLX5ASYNC_LEDGER_CONF_RETURNED = 9,     /* dev_conf returns to vhost */
	RTE_PMD_MLX5ASYNC_LEDGER_NOTIFIERS_SET = 10,    /* host notifiers answered by the frontend */
	RTE_PMD_MLX5ASYNC_LEDGER_ANNOUNCED = 11,        /* the guest's first gratuitous ARP left the
	                                                 * device (backends that see frames: the
	                                                 * emulator plugin) */
	RTE_PMD_MLX5ASYNC_LEDGER_DEVICE_ANNOUNCED = 12, /* the device's own first RARP of the
	                                                 * start posted (devarg announce) */
	RTE_PMD_MLX5ASYNC_LEDGER_PHASES = 13,
};

struct rte_pmd_mlx5async_ledger {
	uint64_t stop_seq;      /* stops recorded since probe (0: none) */
	uint64_t start_seq;     /* starts recorded since probe */
	uint64_t mono_ns[RTE_PMD_MLX5ASYNC_LEDGER_PHASES]; /* CLOCK_MONOTONIC, 0: not reached */
	uint64_t wall_ns[RTE_PMD_MLX5ASYNC_LEDGER_PHASES]; /* CLOCK_REALTIME, same moments */
	uint32_t stop_rings;    /* rings whose indexes went back to vhost */
	uint32_t logged_rings;  /* of those, used rings logged dirty */
	uint32_t start_rings;   /* rings the start brought to RDY */
	uint32_t regions_registered; /* memory regions registered by the start (0: reused) */
	int32_t notifiers_rc;   /* rte_vhost_host_notifier_ctrl result (when tried) */
	uint8_t notifiers_tried;/* 0: no doorbell page, or not answered yet */
	/* The start dev_conf posted failed (it runs after dev_conf returned):
	 * a negative errno, 0 when it did not fail; the cause is in the log and
	 * in telemetry's ledger (start_error). */
	int32_t start_rc;
};

/* Firmware virtq state as last known by the driver (PRM values), or NONE. */
#define RTE_PMD_MLX5ASYNC_VQ_STATE_INIT 0x0
#define RTE_PMD_MLX5ASYNC_VQ_STATE_RDY 0x1
#define RTE_PMD_MLX5ASYNC_VQ_STATE_SUSPEND 0x2
#define RTE_PMD_MLX5ASYNC_VQ_STATE_ERR 0x3
#define RTE_PMD_MLX5ASYNC_VQ_STATE_NONE 0xff /* no firmware object */

struct rte_pmd_mlx5async_dev_info {
	char name[64];          /* vdev name, e.g. vdpa_mlx5async0 */
	char backend[64];       /* "emu:cx7" or "rdma-core:0000:08:00.2" */
	/* The name the backend knows the device by: the emulator plugin's
	 * device (emu=: mlx5emu.h addresses it so), or the rdma-core device. */
	char backend_device[64];
	uint32_t max_queues;    /* virtqs the device supports */
	uint32_t queues;        /* virtqs with a firmware object */
	uint32_t queue_size;    /* ring size of existing objects (0: none) */
	uint32_t max_inflight;  /* engine throttle */
	enum rte_pmd_mlx5async_strategy strategy;
	int vid;                /* the vhost connection served (its dev_conf took the device), -1 if none */
	uint64_t features;      /* virtio features the device offers */
	/* Firmware commands the device has not answered after their batch gave
	 * up on them: each holds one of max_inflight command slots until it
	 * completes or the kernel's command timeout fails it. */
	uint32_t unanswered_cmds;
	/* Virtqs whose state may differ from the driver's (their last command
	 * failed or is unanswered): operations covering them fail until the
	 * driver learned their state. */
	uint32_t unsure_queues;
	/* 1: the virtqs raise interrupts (event QPs, relayed to the callfds);
	 * 0: they raise none (event_mode=none: polling frontends). */
	uint32_t interrupts;
};

struct rte_pmd_mlx5async_vq_info {
	uint16_t index;             /* virtq index (vhost ring number) */
	uint8_t fw_state;           /* RTE_PMD_MLX5ASYNC_VQ_STATE_* */
	uint8_t error_type;         /* when fw_state == ERR */
	uint16_t hw_available_index;/* last queried / set */
	uint16_t hw_used_index;
	uint32_t obj_id;            /* firmware object id, 0 if none */
	uint32_t errors;            /* errors recovered on this virtq */
	uint8_t live;               /* 1: state and indexes just queried (RDY virtqs, query_vq_info);
	                             * 0: the saved ones (last suspend, or the last start's) */
	uint8_t unsure;             /* 1: its last command failed or is unanswered */
	uint64_t interrupts;        /* callfd writes (event_mode=irq) */
	uint64_t arp_frames;        /* ARP frames it sent, when the backend counts them (the
	                             * emulator plugin; 0 on rdma-core) */
	uint64_t announce_frames;   /* of those, gratuitous: the guest announcing itself */
};

struct rte_pmd_mlx5async_timing {
	enum rte_pmd_mlx5async_op op;
	uint64_t total_ns;      /* whole operation */
	uint64_t prepare_ns;    /* building the batch */
	uint64_t firmware_ns;   /* the firmware batch (first submit .. last completion) */
	uint64_t vhost_ns;      /* handing indexes back to vhost, dirty-log of used rings */
	uint32_t queues;        /* virtqs the operation touched */
	uint32_t commands;      /* firmware commands issued */
	uint32_t failed;        /* commands that failed or timed out */
	uint32_t peak_inflight; /* highest commands in flight */
};

/* One firmware command, for traces (Chrome trace events in vdpa-testpmd). */
struct rte_pmd_mlx5async_cmd_span {
	uint64_t submit_ns;     /* CLOCK_MONOTONIC */
	uint64_t end_ns;
	uint16_t opcode;        /* PRM opcode */
	uint8_t status;         /* PRM status, 0xff: timed out / no answer */
	uint8_t op;             /* enum rte_pmd_mlx5async_batch */
	int16_t queue;          /* virtq index, -1 if none */
	uint32_t obj_id;
};

/* Latency of one command type (what a firmware command did to which kind
 * of object: "create_virtq", "modify_virtq", "query_virtq",
 * "destroy_virtq", "create_umem", "create_mkey", "create_qp" ...), over
 * every batch the device ran since probe. Commands answered after their
 * batch gave up on them are not in it. */
#define RTE_PMD_MLX5ASYNC_LATENCY_BUCKETS 40
struct rte_pmd_mlx5async_cmd_latency {
	char type[32];
	uint64_t count;     /* commands completed (succeeded or failed) */
	uint64_t sum_ns;
	uint64_t max_ns;
	uint64_t timed_out; /* given up on at their batch's deadline (no latency) */
	uint64_t p50_ns;    /* upper bound of the bucket holding the median */
	uint64_t p99_ns;    /* the same for the 99th percentile */
	/* Bucket b: latencies in [2^b, 2^(b+1)) ns (b = 0 also 0 ns); the last
	 * bucket everything from 2^39 ns up. */
	uint64_t buckets[RTE_PMD_MLX5ASYNC_LATENCY_BUCKETS];
};

/* Commands the firmware (or the kernel) refused, per command type, PRM
 * status and syndrome. */
struct rte_pmd_mlx5async_fw_error {
	char type[32];      /* as in rte_pmd_mlx5async_cmd_latency */
	uint8_t status;     /* PRM status; 0: the call itself failed */
	uint32_t syndrome;  /* PRM syndrome; the call's errno when status is 0 */
	uint64_t count;
};

/* True when dev is driven by this PMD. */
bool rte_pmd_mlx5async_is_mine(struct rte_vdpa_device *dev);

int rte_pmd_mlx5async_get_dev_info(struct rte_vdpa_device *dev,
			       struct rte_pmd_mlx5async_dev_info *info);

/* The vhost-user socket the driver serves dev on itself (devarg
 * vhost_socket: registered, attached and started at probe, unregistered at
 * remove): an application must not attach dev to a socket again. Copies
 * the path, NUL-terminated, into path and returns its length; -ENOENT when
 * the application attaches dev itself (no vhost_socket), -ENOSPC when size
 * is too small, -ENODEV when dev is not this driver's. */
int rte_pmd_mlx5async_get_vhost_socket(struct rte_vdpa_device *dev, char *path, size_t size);

/* Puts the driver's vhost-user message hooks on connection vid from its
 * first message. Call it from the new_connection notify op
 * (rte_vhost_driver_callback_register) of every socket an application
 * attaches a device of this driver to. Among other things the hooks refuse
 * a SET_MEM_TABLE with a region whose file is shorter than the range vhost
 * maps from it, which would otherwise kill the process with SIGBUS
 * inside vhost. Without the call the hooks start at the driver's first
 * vDPA callback for vid, after those messages. Sockets the driver serves
 * itself (vhost_socket) need no call. Returns 0, or -ENODEV when vid's
 * socket is not attached to a device of this driver. */
int rte_pmd_mlx5async_watch_connection(int vid);

/* Fills up to n entries (one per virtq with an object); returns the count.
 * The indexes are the saved ones (live = 0): no firmware command is sent. */
int rte_pmd_mlx5async_get_vq_info(struct rte_vdpa_device *dev,
			      struct rte_pmd_mlx5async_vq_info *vqs, unsigned int n);
/* The same, with every RDY virtq queried from the device in one batch
 * (live = 1): the indexes a running ring has reached. */
int rte_pmd_mlx5async_query_vq_info(struct rte_vdpa_device *dev,
				struct rte_pmd_mlx5async_vq_info *vqs, unsigned int n);

/* The downtime ledger of the device (see rte_pmd_mlx5async_ledger_phase). */
int rte_pmd_mlx5async_get_ledger(struct rte_vdpa_device *dev, struct rte_pmd_mlx5async_ledger *l);
/* "stop_requested", "suspend_issued" ... (NULL for an unknown phase). */
const char *rte_pmd_mlx5async_ledger_phase_name(enum rte_pmd_mlx5async_ledger_phase p);

/* Suspend (MODIFY->SUSPEND + QUERY, pipelined) every RDY virtq of every
 * listed device: one batch per device, all devices at once (each has its own
 * engine and firmware command queue), so N devices take about as long as the
 * slowest; resume brings every SUSPENDed virtq back to RDY.
 * Virtqs of a device fail or succeed independently; on any failure the call
 * returns the first error and every device's timing says how many failed. */
int rte_pmd_mlx5async_suspend(struct rte_vdpa_device *const devs[], unsigned int n);
int rte_pmd_mlx5async_resume(struct rte_vdpa_device *const devs[], unsigned int n);

int rte_pmd_mlx5async_last_timing(struct rte_vdpa_device *dev, enum rte_pmd_mlx5async_op op,
				  struct rte_pmd_mlx5async_timing *t);

/* Fills up to n entries, one per command type the device ran, and returns
 * how many such types there are (more than n: the rest did not fit). */
int rte_pmd_mlx5async_get_cmd_latency(struct rte_vdpa_device *dev,
				      struct rte_pmd_mlx5async_cmd_latency *lat, unsigned int n);
/* Fills up to n entries, one per (type, status, syndrome) seen, first seen
 * first, and returns how many there are; at most 64 keys are kept, and
 * *unkeyed (when not NULL) gets the count of failures beyond them. */
int rte_pmd_mlx5async_get_fw_errors(struct rte_vdpa_device *dev,
				    struct rte_pmd_mlx5async_fw_error *errs, unsigned int n,
				    uint64_t *unkeyed);

/* "async", "sequential", "threads" (the devarg's values); NULL for another value. */
const char *rte_pmd_mlx5async_strategy_name(enum rte_pmd_mlx5async_strategy s);

int rte_pmd_mlx5async_set_strategy(struct rte_vdpa_device *dev,
				   enum rte_pmd_mlx5async_strategy s);
int rte_pmd_mlx5async_set_max_inflight(struct rte_vdpa_device *dev, uint32_t n);

/* Command tracing: enable, then read (and consume) up to n spans. */
int rte_pmd_mlx5async_trace_enable(struct rte_vdpa_device *dev, bool on);
int rte_pmd_mlx5async_trace_read(struct rte_vdpa_device *dev,
				 struct rte_pmd_mlx5async_cmd_span *spans, unsigned int n);

#ifdef __cplusplus
}
#endif

#endif /* RTE_PMD_MLX5ASYNC_H */
