// A scripted DevxApi for engine unit tests (rust-vmm dummy_backend shape).
//
// The DevxApi table has no user pointer, so one FakeDevx is live per process
// at a time (tests run serially). It models just enough of a device:
// - objects with a virtq image (state, hw_available_index, hw_used_index):
//   MODIFY with the STATE bit sets the state, QUERY returns the image;
// - a script deciding each command's reply: PRM status + syndrome, a call
//   errno, or "hold" (the command does not complete until released: a
//   blocking call blocks its thread, an async query stays unanswered);
// - EBUSY injection for obj_query_async;
// - a trace of issue/complete events and the peak of commands in flight.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "common/devx/devx_api.hpp"
#include "common/devx/raii.hpp"
#include "common/prm/virtq.hpp"

namespace mlx5async::testing {

enum class FakeOp : uint8_t { Create, Modify, Query, QueryAsync, Destroy, General };

struct FakeCall {
    FakeOp op;
    uint32_t obj_id = 0;
    uint16_t opcode = 0;
    std::vector<std::byte> in;  // Create: the command's input (the others: empty)
};

struct FakeReply {
    uint8_t status = 0;
    uint32_t syndrome = 0;
    int call_errno = 0;  // returned by the call (blocking) or the issue (async)
    bool hold = false;
};

// One line of the trace: what happened to which object, in order.
struct FakeEvent {
    enum Kind : uint8_t { Issue, Complete } kind;
    FakeOp op;
    uint32_t obj_id;
};

class FakeDevx {
public:
    using Script = std::function<FakeReply(const FakeCall&)>;

    FakeDevx();
    ~FakeDevx();
    FakeDevx(const FakeDevx&) = delete;
    FakeDevx& operator=(const FakeDevx&) = delete;

    static const devx::DevxApi& api();
    ibv_context* ctx() { return &ctx_; }
    // A live object (as if created), with a virtq image in `state` whose hw
    // indexes are distinct per object: available = 1000 + id, used = 2000 + id.
    devx::DevxObj make_obj(prm::VirtqState state = prm::VirtqState::RDY);

    void set_script(Script s);
    // The next `n` obj_query_async calls return EBUSY.
    void busy_next_async(unsigned n);

    // Held commands: wait until `n` are held, release them all.
    bool wait_held(size_t n, std::chrono::milliseconds timeout);
    void release_all();

    // Until no command is inside the fake (held ones released and returned).
    bool wait_idle(std::chrono::milliseconds timeout);
    // PDs, umems, UARs, event channels and open contexts not yet freed.
    int live_resources() const;

    std::vector<FakeEvent> trace() const;
    unsigned peak_in_flight() const;
    unsigned in_flight() const;
    unsigned live_objects() const;
    prm::VirtqState state_of(uint32_t obj_id) const;
    uint64_t async_issued() const;

    // Table entries (static: the table has no user pointer).
    struct Hooks;

private:
    struct Obj {
        uint32_t id;
        prm::VirtqAttr attr;
        std::unique_ptr<uint32_t> handle;  // what mlx5dv_devx_obj* points at (holds id)
    };
    // A new object's handle (under mu_).
    mlx5dv_devx_obj* add_obj(std::unique_ptr<Obj> obj);
    struct Completion {
        uint64_t wr_id;
        std::vector<std::byte> out;
    };
    struct Held {
        uint64_t ticket;
        bool async;
        Completion comp;  // async only
    };

    FakeReply decide(const FakeCall& call);
    void begin(FakeOp op, uint32_t id);
    void end(FakeOp op, uint32_t id);
    // Runs the modelled command, writes `out`; returns the call's errno.
    int execute(FakeOp op, Obj* obj, const void* in, size_t inlen, void* out, size_t outlen);
    void wait_if_held(const FakeReply& r, std::unique_lock<std::mutex>& lk);
    void push_completion(Completion c);

    mutable std::mutex mu_;  // protects everything below
    std::condition_variable cv_;
    ibv_context ctx_{};
    Script script_;
    unsigned busy_left_ = 0;
    uint32_t next_id_ = 0x100;
    std::map<uint32_t, std::unique_ptr<Obj>> objs_;
    std::vector<FakeEvent> trace_;
    unsigned in_flight_ = 0, peak_ = 0;
    uint64_t async_issued_ = 0;
    int live_resources_ = 0;
    ibv_device dev_{};
    ibv_device* dev_list_[2] = {&dev_, nullptr};
    ibv_pd pd_{};
    mlx5dv_devx_umem umem_{};
    mlx5dv_devx_uar uar_{};
    mlx5dv_devx_event_channel ev_ch_{};
    uint64_t next_ticket_ = 1;
    std::vector<Held> held_;
    std::vector<uint64_t> released_;
    std::deque<Completion> completions_;
    int pipe_[2] = {-1, -1};  // cmd_comp fd: one byte per completion
    mlx5dv_devx_cmd_comp comp_{};
};

}  // namespace mlx5async::testing
