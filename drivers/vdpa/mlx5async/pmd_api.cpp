// include/mlx5async/rte_pmd_mlx5async.h: the application-facing API.
#include "rte_pmd_mlx5async.h"

#include <rte_vhost.h>
#include <vdpa_driver.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "common/devx/error_log.hpp"
#include "common/prm/status.hpp"
#include "log.hpp"
#include "pmd_device.hpp"
#include "vhost_hooks.hpp"

using namespace mlx5async;
using mlx5async::pmd::PmdDevice;

namespace {

PmdDevice* dev_of(rte_vdpa_device* vdpa) { return vdpa ? pmd::find_device(vdpa) : nullptr; }

int report(PmdDevice* d, const char* what, const Result<void>& r) {
    if (r) return 0;
    MLX5A_LOG(ERR, "%s: %s: %s", d->core->name().c_str(), what, devx::describe_once(r.error()).c_str());
    return to_errno(r.error());
}

// Runs op on every device at once (each device has its own engine and
// firmware queue), so N devices cost about one device's batch, not N.
template <typename F>
int for_all_devices(rte_vdpa_device* const devs[], unsigned n, const char* what, F op) {
    std::vector<PmdDevice*> ds;
    for (unsigned i = 0; i < n; i++) {
        PmdDevice* d = dev_of(devs[i]);
        if (!d) return -ENODEV;
        ds.push_back(d);
    }
    std::vector<int> rc(ds.size(), 0);
    {
        std::vector<std::jthread> th;
        for (size_t i = 1; i < ds.size(); i++)
            th.emplace_back([&, i] { rc[i] = report(ds[i], what, op(*ds[i]->core)); });
        if (!ds.empty()) rc[0] = report(ds[0], what, op(*ds[0]->core));
    }
    for (int r : rc)
        if (r) return r;
    return 0;
}

int fill_vq_info(PmdDevice& d, const std::vector<core::VqInfo>& info, rte_pmd_mlx5async_vq_info* vqs,
                 unsigned n) {
    unsigned k = 0;
    for (const auto& v : info) {
        if (v.phase == core::VqPhase::Absent) continue;
        if (vqs && k < n)
            vqs[k] = {v.index,  v.fw_state, v.error_type, v.hw_available_index, v.hw_used_index,
                      v.obj_id, v.errors,   v.live,       v.unsure,             d.core->irq_calls(v.index),
                      v.arp_frames, v.announce_frames};
        k++;
    }
    return int(vqs ? std::min(k, n) : k);
}

// Every extern "C" entry runs inside this: no C++ exception (a thread that
// cannot start, an allocation) crosses into a C caller.
template <typename F>
int c_boundary(const char* fn, F&& f) noexcept {
    try {
        return f();
    } catch (const std::bad_alloc&) {
        MLX5A_LOG(ERR, "%s: out of memory", fn);
        return -ENOMEM;
    } catch (const std::system_error& e) {
        MLX5A_LOG(ERR, "%s: %s", fn, e.what());
        return e.code().category() == std::system_category() && e.code().value() > 0 ? -e.code().value()
                                                                                     : -EIO;
    } catch (const std::exception& e) {
        MLX5A_LOG(ERR, "%s: %s", fn, e.what());
        return -EIO;
    } catch (...) {
        MLX5A_LOG(ERR, "%s: unknown exception", fn);
        return -EIO;
    }
}

std::optional<core::Strategy> from_c(rte_pmd_mlx5async_strategy s) {
    switch (s) {
    case RTE_PMD_MLX5ASYNC_STRATEGY_ASYNC: return core::Strategy::Async;
    case RTE_PMD_MLX5ASYNC_STRATEGY_SEQUENTIAL: return core::Strategy::Sequential;
    case RTE_PMD_MLX5ASYNC_STRATEGY_THREADS: return core::Strategy::Threads;
    }
    return std::nullopt;
}

rte_pmd_mlx5async_strategy to_c(core::Strategy s) {
    switch (s) {
    case core::Strategy::Async: return RTE_PMD_MLX5ASYNC_STRATEGY_ASYNC;
    case core::Strategy::Sequential: return RTE_PMD_MLX5ASYNC_STRATEGY_SEQUENTIAL;
    case core::Strategy::Threads: return RTE_PMD_MLX5ASYNC_STRATEGY_THREADS;
    }
    return RTE_PMD_MLX5ASYNC_STRATEGY_ASYNC;
}

}  // namespace


extern "C" {

bool rte_pmd_mlx5async_is_mine(rte_vdpa_device* dev) {
    return c_boundary(__func__, [&] { return dev_of(dev) != nullptr ? 1 : 0; }) == 1;
}

int rte_pmd_mlx5async_get_dev_info(rte_vdpa_device* dev, rte_pmd_mlx5async_dev_info* info) {
    return c_boundary(__func__, [&]() -> int {
        PmdDevice* d = dev_of(dev);
        if (!d) return -ENODEV;
        if (!info) return -EINVAL;
        *info = {};
        auto& c = *d->core;
        std::snprintf(info->name, sizeof info->name, "%s", c.name().c_str());
        std::snprintf(info->backend, sizeof info->backend, "%s", c.backend().c_str());
        std::snprintf(info->backend_device, sizeof info->backend_device, "%s", c.backend_device().c_str());
        info->max_queues = c.max_virtqs();
        uint32_t with_obj = 0, qsize = 0;
        for (const auto& v : c.vq_info()) {
            if (v.phase == core::VqPhase::Absent) continue;
            with_obj++;
        }
        qsize = c.config().queue_size;
        info->queues = with_obj;
        info->queue_size = qsize;
        info->max_inflight = c.config().max_inflight;
        info->strategy = to_c(c.config().strategy);
        info->vid = d->vid;
        info->features = c.features();
        auto health = c.command_health();
        info->unanswered_cmds = health.unanswered;
        info->unsure_queues = health.unsure_virtqs;
        info->interrupts = c.irq_stats().enabled;
        return 0;
    });
}

int rte_pmd_mlx5async_get_vhost_socket(rte_vdpa_device* dev, char* path, size_t size) {
    return c_boundary(__func__, [&]() -> int {
        PmdDevice* d = dev_of(dev);
        if (!d) return -ENODEV;
        const std::string& sock = d->core->config().vhost_socket;
        if (sock.empty()) return -ENOENT;
        if (!path || size <= sock.size()) return -ENOSPC;
        std::memcpy(path, sock.c_str(), sock.size() + 1);
        return int(sock.size());
    });
}

int rte_pmd_mlx5async_watch_connection(int vid) {
    return c_boundary(__func__, [&]() -> int {
        if (!dev_of(rte_vhost_get_vdpa_device(vid))) return -ENODEV;
        pmd::watch_messages(vid);
        return 0;
    });
}

int rte_pmd_mlx5async_get_vq_info(rte_vdpa_device* dev, rte_pmd_mlx5async_vq_info* vqs, unsigned n) {
    return c_boundary(__func__, [&]() -> int {
        PmdDevice* d = dev_of(dev);
        if (!d) return -ENODEV;
        return fill_vq_info(*d, d->core->vq_info(), vqs, n);
    });
}

int rte_pmd_mlx5async_query_vq_info(rte_vdpa_device* dev, rte_pmd_mlx5async_vq_info* vqs,
                                    unsigned n) {
    return c_boundary(__func__, [&]() -> int {
        PmdDevice* d = dev_of(dev);
        if (!d) return -ENODEV;
        return fill_vq_info(*d, d->core->query_vq_info(), vqs, n);
    });
}

int rte_pmd_mlx5async_get_ledger(rte_vdpa_device* dev, rte_pmd_mlx5async_ledger* l) {
    return c_boundary(__func__, [&]() -> int {
        static_assert(size_t(RTE_PMD_MLX5ASYNC_LEDGER_PHASES) == core::kLedgerPhases);
        PmdDevice* d = dev_of(dev);
        if (!d) return -ENODEV;
        if (!l) return -EINVAL;
        const auto s = d->core->ledger().snapshot();
        *l = {};
        l->stop_seq = s.stop_seq;
        l->start_seq = s.start_seq;
        for (size_t i = 0; i < core::kLedgerPhases; i++) {
            l->mono_ns[i] = s.at[i].mono_ns;
            l->wall_ns[i] = s.at[i].wall_ns;
        }
        l->stop_rings = s.stop_rings;
        l->logged_rings = s.logged_rings;
        l->start_rings = s.start_rings;
        l->regions_registered = s.regions;
        l->notifiers_rc = s.notifiers_rc;
        l->notifiers_tried = s.notifiers_tried;
        l->start_rc = s.start_rc;
        return 0;
    });
}

int rte_pmd_mlx5async_get_cmd_latency(rte_vdpa_device* dev, rte_pmd_mlx5async_cmd_latency* lat,
                                      unsigned int n) {
    return c_boundary(__func__, [&]() -> int {
        static_assert(RTE_PMD_MLX5ASYNC_LATENCY_BUCKETS == devx::LatencyHistogram::kBuckets);
        PmdDevice* d = dev_of(dev);
        if (!d) return -ENODEV;
        if (!lat && n) return -EINVAL;
        const devx::CommandStats s = d->core->command_stats();
        unsigned types = 0;
        for (size_t i = 0; i < devx::kCmdTypes; i++) {
            const devx::LatencyHistogram& h = s.latency[i];
            if (!h.count && !h.timed_out) continue;
            if (types < n) {
                rte_pmd_mlx5async_cmd_latency& o = lat[types];
                o = {};
                snprintf(o.type, sizeof o.type, "%s", devx::cmd_type_name(devx::CmdType::at(i)).c_str());
                o.count = h.count;
                o.sum_ns = h.sum_ns;
                o.max_ns = h.max_ns;
                o.timed_out = h.timed_out;
                o.p50_ns = h.quantile_ns(0.50);
                o.p99_ns = h.quantile_ns(0.99);
                std::copy(h.buckets.begin(), h.buckets.end(), o.buckets);
            }
            ++types;
        }
        return int(types);
    });
}

int rte_pmd_mlx5async_get_fw_errors(rte_vdpa_device* dev, rte_pmd_mlx5async_fw_error* errs,
                                    unsigned int n, uint64_t* unkeyed) {
    return c_boundary(__func__, [&]() -> int {
        PmdDevice* d = dev_of(dev);
        if (!d) return -ENODEV;
        if (!errs && n) return -EINVAL;
        const devx::CommandStats s = d->core->command_stats();
        for (size_t i = 0; i < s.fw_errors.size() && i < n; i++) {
            const devx::FwErrorCount& e = s.fw_errors[i];
            errs[i] = {};
            snprintf(errs[i].type, sizeof errs[i].type, "%s", devx::cmd_type_name(e.type).c_str());
            errs[i].status = e.status;
            errs[i].syndrome = e.syndrome;
            errs[i].count = e.count;
        }
        if (unkeyed) *unkeyed = s.fw_errors_unkeyed;
        return int(s.fw_errors.size());
    });
}

const char* rte_pmd_mlx5async_ledger_phase_name(rte_pmd_mlx5async_ledger_phase p) {
    if (unsigned(p) >= core::kLedgerPhases) return nullptr;
    return core::ledger_phase_name(core::LedgerPhase(p));
}

int rte_pmd_mlx5async_suspend(rte_vdpa_device* const devs[], unsigned n) {
    return c_boundary(__func__, [&]() -> int {
        return for_all_devices(devs, n, "suspend", [](core::Device& c) { return c.suspend_all(); });
    });
}

int rte_pmd_mlx5async_resume(rte_vdpa_device* const devs[], unsigned n) {
    return c_boundary(__func__, [&]() -> int {
        return for_all_devices(devs, n, "resume", [](core::Device& c) { return c.resume_all(); });
    });
}

int rte_pmd_mlx5async_last_timing(rte_vdpa_device* dev, rte_pmd_mlx5async_op op,
                                  rte_pmd_mlx5async_timing* t) {
    return c_boundary(__func__, [&]() -> int {
        PmdDevice* d = dev_of(dev);
        if (!d) return -ENODEV;
        if (!t) return -EINVAL;
        auto x = d->core->last_timing(op == RTE_PMD_MLX5ASYNC_OP_RESUME ? core::Op::Resume
                                                                          : core::Op::Suspend);
        *t = {op, x.total_ns, x.prepare_ns, x.firmware_ns, x.vhost_ns, x.queues,
              x.commands, x.failed, x.peak_inflight};
        return 0;
    });
}

int rte_pmd_mlx5async_set_strategy(rte_vdpa_device* dev, rte_pmd_mlx5async_strategy s) {
    return c_boundary(__func__, [&]() -> int {
        PmdDevice* d = dev_of(dev);
        if (!d) return -ENODEV;
        auto cs = from_c(s);
        if (!cs) return -EINVAL;
        return report(d, "set strategy", d->core->set_strategy(*cs));
    });
}

const char* rte_pmd_mlx5async_strategy_name(rte_pmd_mlx5async_strategy s) {
    auto cs = from_c(s);
    return cs ? core::strategy_name(*cs) : nullptr;
}

int rte_pmd_mlx5async_set_max_inflight(rte_vdpa_device* dev, uint32_t n) {
    return c_boundary(__func__, [&]() -> int {
        PmdDevice* d = dev_of(dev);
        if (!d) return -ENODEV;
        return report(d, "set max_inflight", d->core->set_max_inflight(n));
    });
}

int rte_pmd_mlx5async_trace_enable(rte_vdpa_device* dev, bool on) {
    return c_boundary(__func__, [&]() -> int {
        PmdDevice* d = dev_of(dev);
        if (!d) return -ENODEV;
        d->core->trace_enable(on);
        return 0;
    });
}

int rte_pmd_mlx5async_trace_read(rte_vdpa_device* dev, rte_pmd_mlx5async_cmd_span* spans,
                                 unsigned n) {
    return c_boundary(__func__, [&]() -> int {
        PmdDevice* d = dev_of(dev);
        if (!d) return -ENODEV;
        if (!spans) return -EINVAL;
        auto v = d->core->trace_read(n);
        for (size_t i = 0; i < v.size(); i++)
            spans[i] = {v[i].submit_ns, v[i].end_ns, v[i].opcode, v[i].status, v[i].op, v[i].queue,
                        v[i].obj_id};
        return int(v.size());
    });
}

}  // extern "C"
