// Typed commands, batch entries (chains of steps on one queue) and their
// results. A Batch is what Engine::run takes; a BatchResult is what it
// returns: one EntryResult per entry, one StepResult per step, both in
// submission order.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "command_stats.hpp"
#include "common/base/result.hpp"
#include "common/prm/field.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/virtq.hpp"
#include "devx_api.hpp"
#include "raii.hpp"

namespace mlx5async::devx {

// How a command reaches the device. Only QUERY has an asynchronous form in
// rdma-core (mlx5dv_devx_obj_query_async); the others are blocking ioctls.
// RegUmem is mlx5dv_devx_umem_reg: the kernel pins the pages, then issues
// CREATE_UMEM with their MTT (a blocking ioctl like the others).
enum class CmdKind : uint8_t { Create, Modify, Query, Destroy, General, RegUmem };

// What the engine should decode from a successful output.
enum class Decode : uint8_t { Raw, Virtq };

// What a step of a chain made, for the later steps that name it: a
// RegUmem's umem id, or a CREATE's id (obj_id, cqn, qpn, mkey_index: its
// output's third dword) and object.
struct Made {
    uint32_t id = 0;
    mlx5dv_devx_obj* obj = nullptr;
};

// One firmware command. Built through the factories below; move-only (a
// Destroy owns the object it destroys until the destroy succeeds).
struct Command {
    CmdKind kind = CmdKind::General;
    uint16_t opcode = 0;             // PRM opcode, for results and logs
    CmdType type;                    // what it does to which object (CommandStats)
    uint32_t obj_id = 0;             // object addressed (0 for create/general)
    int queue = -1;                  // virtq index when known
    Decode decode = Decode::Raw;
    ibv_context* ctx = nullptr;      // Create, General
    mlx5dv_devx_obj* obj = nullptr;  // Modify, Query, Destroy
    DevxObj owned;                   // Destroy: the object, returned on failure
    const DevxApi* api = nullptr;    // to wrap a created object
    std::vector<std::byte> in;
    size_t outlen = 0;
    // RegUmem: the host range and its access flags (nothing in `in`).
    void* umem_addr = nullptr;
    size_t umem_size = 0;
    uint32_t umem_access = 0;
    // A chain whose steps name what earlier steps made (a direct mkey its
    // umem, a QP its CQ, a QP transition its QP and the peer's) runs on one
    // worker, with no round trip through its caller: these are filled when
    // the step is issued, from the steps (index in the entry) before it.
    // Fields of `in` that take an earlier step's Made::id (its low bits):
    // of this chain, or of entry `entry` of the batch (an earlier one, which
    // the engine then waits for as if it were in Entry::after).
    struct IdFrom {
        prm::Field field;
        uint16_t step = 0;
        int32_t entry = -1;  // -1: this chain
    };
    std::vector<IdFrom> ids_from;
    // A MODIFY of the object an earlier step created (its index; -1: none):
    // `obj` and `obj_id` are that step's.
    int obj_from = -1;
    bool binds() const noexcept { return !ids_from.empty() || obj_from >= 0; }
    // Fills and drops the ids_from of other entries; `made(entry, step)`.
    template <typename MadeOf>
    void bind_entries(MadeOf made) {
        std::erase_if(ids_from, [&](const IdFrom& f) {
            if (f.entry < 0) return false;
            set_id(f.field, made(size_t(f.entry), size_t(f.step)).id);
            return true;
        });
    }
    // Fills ids_from and obj_from; `made(step)` is what that step made.
    template <typename MadeOf>
    void bind(MadeOf made) {
        for (const IdFrom& f : ids_from)
            if (f.entry < 0) set_id(f.field, made(size_t(f.step)).id);
        if (obj_from >= 0) {
            const Made m = made(size_t(obj_from));
            obj = m.obj;
            obj_id = m.id;
        }
    }

    // Takes a throttle token as well as a command slot (a general-object command).
    bool throttled() const noexcept { return prm::is_throttled_opcode(opcode); }

    // Virtq commands (VIRTIO_NET_Q general object).
    static Result<Command> create_virtq(const Context& ctx, const prm::VirtqAttr& attr,
                                        int queue);
    static Result<Command> modify_virtq(const DevxObj& obj, const prm::VirtqAttr& attr,
                                        int queue);
    static Command modify_virtq_state(const DevxObj& obj, prm::VirtqState state, int queue);
    static Command query_virtq(const DevxObj& obj, int queue);
    // Any object, pre-encoded input (create/modify/query of a general object ...).
    static Command create_obj(const Context& ctx, std::vector<std::byte> in, size_t outlen,
                              int queue = -1);
    static Command modify_obj(const DevxObj& obj, std::vector<std::byte> in, size_t outlen,
                              int queue = -1);
    // A MODIFY of what step `step` of its chain creates (obj_from).
    static Command modify_made(const Context& ctx, uint16_t step, std::vector<std::byte> in,
                               size_t outlen, int queue = -1);
    static Command query_obj(const DevxObj& obj, std::vector<std::byte> in, size_t outlen,
                             int queue = -1);
    // Takes the object; the StepResult gives it back if the destroy fails or
    // never runs.
    static Command destroy(DevxObj&& obj, int queue = -1);
    // Any PRM command through mlx5dv_devx_general_cmd (QUERY_HCA_CAP ...).
    static Command general(const Context& ctx, std::vector<std::byte> in, size_t outlen,
                           int queue = -1);
    // Registers [addr, addr + size) as it is (Umem::reg_existing); the
    // StepResult holds the umem. The memory must outlive it.
    static Command reg_umem(const Context& ctx, void* addr, size_t size,
                            uint32_t access = IBV_ACCESS_LOCAL_WRITE, int queue = -1);

private:
    void set_id(const prm::Field& f, uint32_t id);
};

// A chain of steps on one queue: step k+1 is issued only after step k
// completed successfully; a failing step cancels the rest of its chain only.
// An entry may wait for earlier entries of its batch (`after`, and those
// its steps' ids_from name): its first step is issued once each of them
// ended with every step Done; when one did not, it is Cancelled, never
// issued. An entry naming itself or a later one fails (EINVAL), unissued.
struct Entry {
    int queue = -1;
    std::vector<Command> steps;
    std::vector<uint32_t> after;
};

class Batch {
public:
    // Returns the entry's index (its position in BatchResult::entries).
    size_t add(Entry e);
    size_t add(Command c);  // a one-step entry
    // MODIFY(state=SUSPEND) then QUERY (state, hw_available_index, hw_used_index).
    size_t add_suspend(const DevxObj& vq, int queue);
    // MODIFY(state=RDY).
    size_t add_resume(const DevxObj& vq, int queue);

    size_t size() const noexcept { return entries_.size(); }
    bool empty() const noexcept { return entries_.empty(); }
    std::vector<Entry>& entries() noexcept { return entries_; }
    const std::vector<Entry>& entries() const noexcept { return entries_; }
    // What the caller runs it for (its own numbering), for tracers
    // (CommandObserver); the engine does nothing else with it.
    void set_label(uint8_t l) noexcept { label_ = l; }
    uint8_t label() const noexcept { return label_; }

private:
    std::vector<Entry> entries_;
    uint8_t label_ = 0;
};

// Queued -> Issued -> {Done, Failed, TimedOut}; Cancelled when the step never
// ran (an earlier step of its chain failed or timed out, or shutdown).
enum class StepState : uint8_t { Queued, Issued, Done, Failed, TimedOut, Cancelled };

struct StepResult {
    StepState state = StepState::Queued;
    CmdKind kind = CmdKind::General;
    uint16_t opcode = 0;
    CmdType type;
    uint32_t obj_id = 0;
    int queue = -1;
    uint8_t status = 0;               // PRM status byte of the output
    const char* status_name = "OK";   // prm::status_name(status)
    uint32_t syndrome = 0;
    int sys_errno = 0;                // errno of the call (positive), 0 if none
    unsigned busy_retries = 0;        // async QUERY EBUSY/EAGAIN requeues
    bool never_issued = false;        // TimedOut waiting for a command slot
    std::chrono::nanoseconds latency{0};  // issue -> completion
    std::chrono::steady_clock::time_point issued_at{};  // when handed to the device (traces)
    // Decode::Virtq: state, hw indexes ... On the heap: most steps have
    // none, and a batch's results are allocated for every step at once.
    std::unique_ptr<prm::VirtqAttr> virtq;
    std::vector<std::byte> out;           // raw output (every kind)
    DevxObj obj;  // Create: the new object; Destroy that did not happen: the object back
    Umem umem;    // RegUmem: the registered umem

    bool ok() const noexcept { return state == StepState::Done; }
    // What the step made (nothing unless it is a Done RegUmem or CREATE).
    Made made() const noexcept;
    // The failure as an Error (Firmware, System, Timeout, Cancelled).
    Error error() const;
};

// What `stats` keeps of one step of a batch that returned: its latency when
// it completed, its error when it failed; Queued or Cancelled steps never ran.
void record_step(CommandStats& stats, const StepResult& r);

struct EntryResult {
    int queue = -1;
    std::vector<StepResult> steps;
    bool ok() const noexcept;

    EntryResult() = default;
    EntryResult(EntryResult&&) = default;
    EntryResult& operator=(EntryResult&&) = default;
    // Last step first: a step may name what an earlier one made (an mkey its
    // umem, a QP its CQ), which the device keeps until the namer is gone.
    ~EntryResult() {
        while (!steps.empty()) steps.pop_back();
    }
};

struct BatchResult {
    std::vector<EntryResult> entries;
    unsigned done = 0, failed = 0, timed_out = 0, cancelled = 0;
    unsigned peak_inflight = 0;  // high-water mark of the throttle during this run
    unsigned peak_slots = 0;     // of the command slots
    std::chrono::nanoseconds elapsed{0};
    bool ok() const noexcept { return failed == 0 && timed_out == 0 && cancelled == 0; }

    BatchResult() = default;
    BatchResult(BatchResult&&) = default;
    BatchResult& operator=(BatchResult&&) = default;
    // Last entry first: an entry may name what an earlier one made (a
    // virtq's CREATE its ring's umems, the indirect mkey the chunks' mkeys).
    ~BatchResult() {
        while (!entries.empty()) entries.pop_back();
    }
};

}  // namespace mlx5async::devx
