// One emulated ConnectX: profile, command interface, semantic state, faults,
// trace. Tests and the driver's emulator mode reach it via emu::device_of().
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "clock.hpp"
#include "datapath/datapath.hpp"
#include "datapath/wire.hpp"
#include "cmd_if.hpp"
#include "faults.hpp"
#include "profile.hpp"
#include "state.hpp"
#include "trace.hpp"

namespace mlx5async::emu {

class Device;

// The ibv_device a Device hands out (rdma-core's struct first, so the
// pointer converts both ways).
struct DeviceHandle {
    ibv_device pub;
    uint32_t magic;
    Device* dev;
};
inline constexpr uint32_t kDeviceMagic = 0x454d5544;  // "EMUD"

struct VirtqInfo {
    prm::VirtqState state = prm::VirtqState::INIT;
    uint16_t hw_available_index = 0;
    uint16_t hw_used_index = 0;
    uint8_t error_type = 0;
    KickCounters kicks;
    IrqCounters irq;      // interrupts (datapath/interrupts.hpp)
    FrameCounters frames;  // what it sent (TX virtqs; datapath/loopback.hpp)
    prm::VirtqAttr attr;  // the stored context
};

// A CQ as the device sees it (tests; datapath/interrupts.hpp).
struct CqInfo {
    uint32_t produced = 0;  // CQEs written
    bool armed = false;
    uint32_t arm_ci = 0;
    uint64_t arms = 0;
    uint64_t events = 0;
    uint32_t refs = 0;
};

// A QP as the device sees it.
struct QpInfo {
    prm::QpState state = prm::QpState::RST;
    uint32_t remote_qpn = 0;
    bool firmware = false;
    uint16_t rq_consumed = 0;  // receive WQEs consumed
    uint32_t refs = 0;
};

// A send queue as the device sees it.
struct SqInfo {
    prm::SqState state = prm::SqState::RST;
    uint16_t consumed = 0;  // basic blocks taken
    uint64_t sent = 0;      // frames put on the wire
    uint64_t completions = 0;
    std::string error;      // why it is in ERR
};

struct UmemInfo {
    uint64_t addr = 0;
    uint64_t size = 0;
    uint32_t refs = 0;
    uint64_t device_addr = 0;  // where the device reaches addr (host_pin.hpp)
    bool own_view = false;     // the device maps the pages itself
};

// Live objects per table (tests check for leaks).
struct ObjectCounts {
    size_t pds = 0, umems = 0, mkeys = 0, counters = 0, virtqs = 0, cqs = 0, qps = 0, uars = 0, sqs = 0;
};

// A command's semantics, given the fault decision and whether it was aborted.
using SemanticsFn = std::function<CmdOutcome(bool aborted, const FaultDecision&)>;

class Device : public std::enable_shared_from_this<Device> {
public:
    // `wire`: the port's wire as the spec's wire_pcap opened it (null: one
    // without a file).
    Device(std::string name, Profile p, uint32_t index, std::unique_ptr<dp::Wire> wire = nullptr);
    ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    const std::string& name() const { return name_; }
    const Profile& profile() const { return profile_; }
    ibv_device* ibv() { return &handle_.pub; }

    // Fault injection.
    FaultPolicy& faults() { return faults_; }

    // Observability.
    std::vector<TraceEntry> trace() const { return trace_.snapshot(); }
    void clear_trace() { trace_.clear(); }
    CmdCounters counters() const { return cmd_if_.counters(); }
    uint32_t inflight() const { return cmd_if_.inflight(); }

    // Time (manual clock: clock=manual in the spec).
    int64_t now_ns() const { return clock_->now_ns(); }
    void advance_clock(std::chrono::nanoseconds d);
    size_t complete_next(size_t n) { return cmd_if_.complete_next(n); }
    bool wait_running(size_t n, std::chrono::milliseconds timeout) {
        return cmd_if_.wait_running(n, timeout);
    }
    bool wait_completed(uint64_t n, std::chrono::milliseconds timeout) {
        return cmd_if_.wait_completed(n, timeout);
    }

    // Virtq control and inspection (tests; the datapath later).
    Result<void> force_virtq_error(uint32_t obj_id, uint8_t error_type);
    Result<VirtqInfo> virtq_info(uint32_t obj_id);
    // Moves the hw indexes as the datapath would (RDY only), modulo 2^16.
    Result<void> advance_virtq(uint32_t obj_id, uint16_t avail_delta, uint16_t used_delta);
    // A doorbell: delivered in RDY, recorded while INIT/SUSPEND, replayed on RDY.
    Result<void> kick(uint32_t obj_id);
    Result<UmemInfo> umem_info(uint32_t umem_id);
    Result<CqInfo> cq_info(uint32_t cqn);
    Result<QpInfo> qp_info(uint32_t qpn);
    Result<SqInfo> sq_info(uint32_t sqn);
    // Sets what QUERY of a VIRTIO_Q_COUNTERS object returns (until the
    // datapath counts).
    Result<void> set_virtq_counters(uint32_t counters_id, const prm::VirtqCounters& v);
    size_t virtq_count();
    ObjectCounts object_counts();
    // Object ids of the virtqs with this queue_index (any context).
    std::vector<uint32_t> virtqs_of_queue(uint16_t queue_index);

    // The virtio datapath (doc/emulator.md "Datapath").
    dp::Datapath& datapath() { return *datapath_; }
    // What the device sent to the network (the driver's send queues).
    const dp::Wire& wire() const { return *wire_; }

    // Ends hung and queued commands (blocking callers get ENXIO, async ones
    // are flushed), then every later command fails with ENXIO.
    void close();
    bool closed() const { return closed_.load(); }

    // --- for the DevxApi layer ---
    // Runs a blocking command through faults + command interface.
    CmdOutcome execute(const CmdDesc& d, SemanticsFn fn);
    // 0, EBUSY or ENXIO; fn runs on the firmware thread.
    int execute_async(const CmdDesc& d, SemanticsFn fn);
    DeviceState& state() { return state_; }
    uint32_t new_context_id() { return ++next_ctx_; }
    // Removes every object a context created (context close).
    void drop_context_objects(uint32_t ctx);

private:
    std::string name_;
    Profile profile_;
    DeviceHandle handle_{};
    std::unique_ptr<Clock> clock_;
    Trace trace_;
    FaultPolicy faults_;
    DeviceState state_;
    std::unique_ptr<dp::Wire> wire_;
    std::unique_ptr<dp::Datapath> datapath_;  // uses state_ and wire_
    std::atomic<bool> closed_{false};
    std::atomic<uint32_t> next_ctx_{0};
    CommandInterface cmd_if_;  // last: stops first
};

}  // namespace mlx5async::emu
