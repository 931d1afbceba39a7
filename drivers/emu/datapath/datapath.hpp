// The datapath of one emulated device: a thread ("emu-dp<N>") that reads the
// VAR doorbell pages and runs the TX->RX loopback of every RDY queue pair,
// then sends the interrupts the passes owe (QP event mode; it also reads the
// CQ doorbell register of every UAR page: interrupts.hpp), and puts what
// the driver's send queues post on the port's wire (the send doorbell
// register of every UAR page: send_queue.hpp, wire.hpp).
//
// Doorbells. A kick is a store of the queue index to offset 0 of a VAR page
// (DPDK mlx5 vdpa's kick relay, or a frontend's host notifier). Memory writes
// wake nobody, so the thread polls: each pass swaps every doorbell word with
// an idle pattern (0xffffffff) and takes what was there. After activity it
// keeps passing (yielding) for a while, then sleeps with a growing timeout
// (20 us doubling up to 1 ms); Device::kick() and a virtq entering RDY wake
// it at once. Idle cost: at most ~1000 wake-ups a second, no busy loop.
// Doorbells are a single register per page (last writer wins), so any
// doorbell of a device makes the next passes scan every RDY pair of it: a
// kick overwritten by another queue's is never lost.
//
// Exactness. Each pair is processed under DeviceState::mu, the lock every
// command's semantics runs under (and the one emu::translate needs for the
// mkey tables), one whole chain at a time. So once MODIFY->SUSPEND has
// returned no chain of that queue is in flight, and hw_available_index /
// hw_used_index in the object are exactly what was consumed and completed.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "interrupts.hpp"
#include "send_queue.hpp"
#include "ring.hpp"

namespace mlx5async::emu {

struct DeviceState;
class VirtqObj;

namespace dp {

struct DatapathStats {
    uint64_t passes = 0;
    uint64_t packets = 0;
    uint64_t doorbells = 0;  // doorbell writes seen on VAR pages
    uint64_t sleeps = 0;
    uint64_t errors = 0;     // virtqs moved to ERR
    IrqStats irq;            // interrupts (QP event mode), CQ arms and events
    SendStats send;          // the send queues' doorbells and frames
};

class Datapath {
public:
    // `wire` outlives the datapath (the device owns both).
    Datapath(DeviceState& st, uint32_t index, bool freeze_to_rdy, Wire& wire);
    ~Datapath();
    Datapath(const Datapath&) = delete;
    Datapath& operator=(const Datapath&) = delete;

    // Guest memory access. Without a translator nothing is processed.
    // Called with DeviceState::mu NOT held.
    void set_translator(Translator t);
    // Tests: told of every write the device makes to guest memory.
    void set_write_observer(WriteObserver o);
    // Told (context, queue index) when a TX virtq sent a gratuitous ARP,
    // under DeviceState::mu, as the frame leaves: the downtime ledger's
    // announce. Replaced or cleared under the same lock, so no call runs
    // after set_announce_observer({}) returned.
    using AnnounceObserver = std::function<void(uint32_t ctx, uint16_t queue_index)>;
    void set_announce_observer(AnnounceObserver o);

    // VAR pages (api_device.cpp): mapped here so the thread can read them.
    void add_doorbell(uint32_t var_id, uint32_t ctx, int fd, off_t off);
    void remove_doorbell(uint32_t var_id);
    // UAR pages (api_device.cpp): the thread reads their CQ and send doorbell registers.
    void add_uar(uint32_t uar_id, uint32_t ctx, int fd, off_t off);
    void remove_uar(uint32_t uar_id);
    void drop_context(uint32_t ctx);

    // A kick (Device::kick) or a virtq entering RDY with kicks recorded
    // meanwhile (the replay): wake and scan.
    void notify();
    void stop();
    DatapathStats stats() const;

    static constexpr uint32_t kIdleDoorbell = 0xffffffffu;
    // No CQ doorbell has cqn bits 24..31 set, no send doorbell (a WQE's
    // first 8 bytes) ds 63: all-ones is never a real write to either.
    static constexpr uint64_t kIdleCqDoorbell = ~0ull;
    static constexpr uint64_t kIdleSendDoorbell = ~0ull;

private:
    struct Doorbell {
        uint32_t var_id, ctx;
        uint32_t* word;
        void* map;
    };
    struct UarPage {
        uint32_t uar_id, ctx;
        uint64_t* cq_doorbell;    // offset 0x20
        uint64_t* send_doorbell;  // offset 0x800
        void* map;
    };
    // What the UAR pages' registers held since the last pass.
    struct UarWrites {
        std::vector<std::pair<uint32_t, uint64_t>> cq;  // (uar, register)
        std::vector<uint32_t> send;                     // uars whose send register was written
    };
    struct Pair {
        uint32_t tx = 0, rx = 0;
    };
    void run(std::stop_token stop);
    bool pass();
    std::vector<std::pair<uint32_t, uint16_t>> read_doorbells();
    UarWrites read_uar_doorbells();
    void count_kicks(const std::vector<std::pair<uint32_t, uint16_t>>& rung);
    bool service_interrupts(const std::vector<std::pair<uint32_t, uint64_t>>& cq_doorbells);
    bool service_sends(const std::vector<uint32_t>& uars);
    void interrupt_after_pass(uint32_t id, VirtqObj& vq, uint16_t used_before, IrqStats& s);
    std::vector<Pair> ready_pairs();
    uint32_t process_pair(const Pair& p);

    DeviceState& st_;
    uint32_t index_;
    bool freeze_to_rdy_;
    Wire& wire_;
    Translator tr_;            // under st_.mu
    WriteObserver observer_;   // under st_.mu
    AnnounceObserver announce_observer_;  // under st_.mu
    mutable std::mutex db_mu_;  // doorbells_
    std::vector<Doorbell> doorbells_;
    std::vector<UarPage> uars_;       // under db_mu_
    std::vector<uint32_t> irq_owed_;  // virtqs owing an interrupt (under st_.mu)
    std::mutex wake_mu_;  // guards woken_; wake_cv_ waits on it
    std::condition_variable_any wake_cv_;
    bool woken_ = false;  // under wake_mu_
    std::atomic<bool> kicked_{false};
    uint32_t hot_ = 0;  // passes left that scan all pairs (thread only)
    mutable std::mutex stats_mu_;  // guards stats_ (the thread writes, telemetry reads)
    DatapathStats stats_;
    std::jthread thread_;  // last: stops first
};

}  // namespace dp
}  // namespace mlx5async::emu
