// Handles behind the rdma-core structs the emulator hands out. Each starts
// with the public rdma-core struct (or is opaque, mlx5dv_devx_obj) and
// carries a magic so a foreign pointer is refused with EINVAL.
#pragma once

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/base/unique_fd.hpp"
#include "device.hpp"
#include "events.hpp"

namespace mlx5async::emu::detail {

inline constexpr uint32_t kCtxMagic = 0x454d5543;   // EMUC
inline constexpr uint32_t kPdMagic = 0x454d5550;    // EMUP
inline constexpr uint32_t kObjMagic = 0x454d554f;   // EMUO
inline constexpr uint32_t kUmemMagic = 0x454d554d;  // EMUM
inline constexpr uint32_t kPageMagic = 0x454d5541;  // EMUA
inline constexpr uint32_t kCompMagic = 0x454d5551;  // EMUQ
inline constexpr uint32_t kChanMagic = 0x454d5545;  // EMUE
inline constexpr size_t kPageSize = 4096;
inline constexpr uint32_t kCtxPages = 1024;  // doorbell memfd size (sparse)

// One open context: the device, and the memfd behind ctx->cmd_fd whose pages
// back UARs and VARs (mmap(ctx->cmd_fd, mmap_off) as with rdma-core).
struct ContextImpl {
    std::shared_ptr<Device> dev;
    uint32_t id = 0;
    UniqueFd memfd;
    std::mutex mu;            // pages, handles, closed
    std::vector<bool> pages;  // used pages of memfd
    uint32_t handles = 0;     // live handles pointing here
    bool closed = false;      // close_device ran; freed with its last handle
};

// Handles keep their context alive: after close_device (which removes the
// objects, as uverbs does) or once the device is closed (as a disassociated
// uverbs device) they may still be destroyed, which only frees them; any
// other use fails with EBADF (context) or ENXIO (device).
void ctx_hold(ContextImpl& c);
void ctx_release(ContextImpl* c);
bool ctx_closed(ContextImpl& c);
// ctx_closed or its device closed: destroying a handle only frees it.
bool ctx_gone(ContextImpl& c);

struct ContextHandle {
    ibv_context pub;
    uint32_t magic;
    ContextImpl* impl;
};
struct PdHandle {
    ibv_pd pub;
    uint32_t magic;
    ContextImpl* ctx;
};
struct ObjHandle {  // behind the opaque mlx5dv_devx_obj
    uint32_t magic;
    ContextImpl* ctx;
    uint16_t obj_type;
    uint32_t obj_id;  // CREATE_MKEY: mkey_index
    uint16_t create_opcode = 0;  // picks the destroy command (devx_obj_build_destroy_cmd)
    // uverbs' uobject lock: a blocking MODIFY/QUERY holds the handle shared
    // for its whole ioctl (UVERBS_ACCESS_READ), DESTROY exclusively
    // (UVERBS_ACCESS_DESTROY), so a DESTROY while a command on the handle
    // is in the kernel fails with EBUSY and the handle stays valid.
    // > 0: commands in progress; -1: being destroyed.
    std::atomic<int> users{0};
    bool hold_shared() noexcept {
        int n = users.load();
        while (n >= 0)
            if (users.compare_exchange_weak(n, n + 1)) return true;
        return false;
    }
    void release_shared() noexcept { users.fetch_sub(1); }
    bool hold_exclusive() noexcept {
        int idle = 0;
        return users.compare_exchange_strong(idle, -1);
    }
    void release_exclusive() noexcept { users.store(0); }
};
struct UmemHandle {
    mlx5dv_devx_umem pub;
    uint32_t magic;
    ContextImpl* ctx;
    uint64_t pages;  // backing pages pinned (the cost of releasing them)
};
struct UarHandle {
    mlx5dv_devx_uar pub;
    uint32_t magic;
    ContextImpl* ctx;
    uint32_t id;
    uint32_t page;
};
struct VarHandle {
    mlx5dv_var pub;
    uint32_t magic;
    ContextImpl* ctx;
    uint32_t id;
    uint32_t page;
};
struct QueueImpl {  // may outlive its context (closed first by the user)
    std::shared_ptr<FdQueue> q;
    std::shared_ptr<Device> dev;
};
struct CmdCompHandle {
    mlx5dv_devx_cmd_comp pub;
    uint32_t magic;
    QueueImpl* impl;
};
struct ChannelHandle {
    mlx5dv_devx_event_channel pub;
    uint32_t magic;
    QueueImpl* impl;
    bool omit_data;
};

template <typename H, typename P>
H* handle_cast(P* p, uint32_t magic) {
    if (!p) return nullptr;
    auto* h = reinterpret_cast<H*>(p);
    return h->magic == magic ? h : nullptr;
}

// Frees a handle and drops its hold on the context.
template <typename H>
void free_handle(H* h) {
    ContextImpl* c = h->ctx;
    h->magic = 0;
    delete h;
    ctx_release(c);
}

// Returns nullptr with errno = EINVAL when not ours.
ContextImpl* ctx_of(ibv_context* c);

// Sets errno and returns it (rdma-core's int-returning calls).
inline int fail_errno(int err) {
    errno = err;
    return err;
}

// Runs a resource command (PD, UAR, umem) whose semantics is `body` under
// the state lock; errno as mlx5_cmd_exec maps the status.
CmdOutcome run_resource(ContextImpl& c, const CmdDesc& d,
                        const std::function<Result<void>(DeviceState&)>& body);

// Runs one mailbox command now (on the calling or the firmware thread).
// Takes the device and context id, not the context: an async QUERY may
// complete after its context was closed (the device outlives its commands).
CmdOutcome run_mailbox(Device& dev, uint32_t ctx_id, std::span<const std::byte> in,
                       std::span<std::byte> out, bool aborted, const FaultDecision& dec,
                       uint32_t* created_id);

// Page allocator of the context memfd.
Result<uint32_t> alloc_page(ContextImpl& c);
void free_page(ContextImpl& c, uint32_t page);

// Registry (registry.cpp).
std::vector<std::shared_ptr<Device>> all_devices();
std::shared_ptr<Device> shared_device(ibv_device* d);

// DevxApi entries defined in api_*.cpp.
ibv_device** get_device_list(int* num);
void free_device_list(ibv_device** list);
const char* get_device_name(ibv_device* d);
bool is_supported(ibv_device* d);
ibv_context* open_device(ibv_device* d, mlx5dv_context_attr* attr);
int close_device(ibv_context* c);
ibv_pd* alloc_pd(ibv_context* c);
int dealloc_pd(ibv_pd* pd);
int init_obj(mlx5dv_obj* obj, uint64_t obj_type);
mlx5dv_devx_uar* alloc_uar(ibv_context* c, uint32_t flags);
void free_uar(mlx5dv_devx_uar* u);
mlx5dv_var* alloc_var(ibv_context* c, uint32_t flags);
void free_var(mlx5dv_var* v);
int general_cmd(ibv_context* c, const void* in, size_t inlen, void* out, size_t outlen);
mlx5dv_devx_obj* obj_create(ibv_context* c, const void* in, size_t inlen, void* out, size_t outlen);
int obj_query(mlx5dv_devx_obj* o, const void* in, size_t inlen, void* out, size_t outlen);
int obj_modify(mlx5dv_devx_obj* o, const void* in, size_t inlen, void* out, size_t outlen);
int obj_destroy(mlx5dv_devx_obj* o);
mlx5dv_devx_umem* umem_reg(ibv_context* c, void* addr, size_t size, uint32_t access);
int umem_dereg(mlx5dv_devx_umem* u);
mlx5dv_devx_cmd_comp* create_cmd_comp(ibv_context* c);
void destroy_cmd_comp(mlx5dv_devx_cmd_comp* cc);
int obj_query_async(mlx5dv_devx_obj* o, const void* in, size_t inlen, size_t outlen,
                    uint64_t wr_id, mlx5dv_devx_cmd_comp* cc);
int get_async_cmd_comp(mlx5dv_devx_cmd_comp* cc, mlx5dv_devx_async_cmd_hdr* resp, size_t len);
mlx5dv_devx_event_channel* create_event_channel(ibv_context* c,
                                                mlx5dv_devx_create_event_channel_flags flags);
void destroy_event_channel(mlx5dv_devx_event_channel* ch);
int subscribe_devx_event(mlx5dv_devx_event_channel* ch, mlx5dv_devx_obj* o, uint16_t events_sz,
                         uint16_t events_num[], uint64_t cookie);
ssize_t get_event(mlx5dv_devx_event_channel* ch, mlx5dv_devx_async_event_hdr* data, size_t len);
int query_eqn(ibv_context* c, uint32_t vector, uint32_t* eqn);

}  // namespace mlx5async::emu::detail
