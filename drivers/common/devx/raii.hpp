// RAII owners of the DevX resources, destroying through the DevxApi table.
// Move-only, noexcept destructors; a failed destroy is logged, never thrown
// (Seastar file_desc / mmap_area shape: one named factory per resource).
//
// Destruction order is the caller's: objects before umems before the PD and
// UAR, all before the Context (declare them in that reverse order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base/result.hpp"
#include "devx_api.hpp"

namespace mlx5async::devx {

// An opened mlx5 device (ibv_context with DevX enabled).
class Context {
public:
    Context() = default;
    Context(const DevxApi* api, ibv_context* ctx) noexcept : api_(api), ctx_(ctx) {}
    Context(Context&& o) noexcept : api_(o.api_), ctx_(std::exchange(o.ctx_, nullptr)) {}
    Context& operator=(Context&& o) noexcept;
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;
    ~Context() { reset(); }

    // By ibv device name ("mlx5_0", or the emulator's device name).
    static Result<Context> open(const DevxApi& api, std::string_view name);
    // By PCI address "0000:08:00.2": the device whose sysfs ibdev_path/device
    // resolves to that BDF.
    static Result<Context> open_pci(const DevxApi& api, std::string_view bdf);

    ibv_context* get() const noexcept { return ctx_; }
    const DevxApi* api() const noexcept { return api_; }
    explicit operator bool() const noexcept { return ctx_ != nullptr; }
    void reset() noexcept;

private:
    const DevxApi* api_ = nullptr;
    ibv_context* ctx_ = nullptr;
};

// Protection domain, with its PRM pdn from mlx5dv_init_obj(MLX5DV_OBJ_PD).
class Pd {
public:
    Pd() = default;
    Pd(Pd&& o) noexcept : api_(o.api_), pd_(std::exchange(o.pd_, nullptr)), pdn_(o.pdn_) {}
    Pd& operator=(Pd&& o) noexcept;
    Pd(const Pd&) = delete;
    Pd& operator=(const Pd&) = delete;
    ~Pd() { reset(); }

    static Result<Pd> alloc(const Context& ctx);

    ibv_pd* get() const noexcept { return pd_; }
    uint32_t pdn() const noexcept { return pdn_; }
    void reset() noexcept;

private:
    const DevxApi* api_ = nullptr;
    ibv_pd* pd_ = nullptr;
    uint32_t pdn_ = 0;
};

// UAR page (doorbells).
class Uar {
public:
    Uar() = default;
    Uar(Uar&& o) noexcept : api_(o.api_), uar_(std::exchange(o.uar_, nullptr)) {}
    Uar& operator=(Uar&& o) noexcept;
    Uar(const Uar&) = delete;
    Uar& operator=(const Uar&) = delete;
    ~Uar() { reset(); }

    static Result<Uar> alloc(const Context& ctx, uint32_t flags = MLX5DV_UAR_ALLOC_TYPE_NC);

    mlx5dv_devx_uar* get() const noexcept { return uar_; }
    uint32_t page_id() const noexcept { return uar_ ? uar_->page_id : 0; }
    void reset() noexcept;

private:
    const DevxApi* api_ = nullptr;
    mlx5dv_devx_uar* uar_ = nullptr;
};

// Zeroed, page-aligned memory (at least one page) the driver owns for a
// umem: Umem::reg's buffer, or a virtq's buffer registered through the
// engine's RegUmem step. It must outlive the registration over it.
class PageBuffer {
public:
    PageBuffer() = default;
    static Result<PageBuffer> alloc(size_t bytes);
    // One buffer per size, carved from one mapping: a start's dozens of
    // buffers cost one mmap, not one each. Each still unmaps only its own
    // pages when it goes.
    static Result<std::vector<PageBuffer>> alloc_many(std::span<const size_t> bytes);
    std::byte* data() const noexcept { return mem_.get(); }
    explicit operator bool() const noexcept { return mem_ != nullptr; }

private:
    struct Free {
        size_t bytes;  // the mapping's length; no initializer (GCC PR96645)
        void operator()(std::byte* p) const noexcept;
    };
    std::unique_ptr<std::byte, Free> mem_;
};

// Registered host memory. reg() owns the page-aligned buffer it registered;
// reg_existing() registers memory someone else owns (guest memory mapped by
// vhost) and never frees it.
class Umem {
public:
    Umem() = default;
    Umem(Umem&& o) noexcept
        : api_(o.api_), umem_(std::exchange(o.umem_, nullptr)), mem_(std::move(o.mem_)),
          ext_(std::exchange(o.ext_, nullptr)), size_(std::exchange(o.size_, 0)) {}
    Umem& operator=(Umem&& o) noexcept;
    Umem(const Umem&) = delete;
    Umem& operator=(const Umem&) = delete;
    ~Umem() { reset(); }

    // Allocates `size` zeroed bytes (page aligned, at least one page) and registers them.
    static Result<Umem> reg(const Context& ctx, size_t size,
                            uint32_t access = IBV_ACCESS_LOCAL_WRITE);
    // Registers [addr, addr + size) as it is (DPDK mlx5_vdpa_mem.c: one umem
    // per vhost region over host_user_addr); the memory must outlive the Umem.
    static Result<Umem> reg_existing(const Context& ctx, void* addr, size_t size,
                                     uint32_t access = IBV_ACCESS_LOCAL_WRITE);
    // Takes a umem registered over [addr, addr + size) elsewhere (the engine's
    // RegUmem step).
    static Umem adopt(const DevxApi* api, mlx5dv_devx_umem* umem, void* addr, size_t size) noexcept;
    // Takes the buffer this umem was registered over (it is freed after the
    // deregistration); false, and nothing taken, for another buffer.
    bool own(PageBuffer& mem) noexcept;

    mlx5dv_devx_umem* get() const noexcept { return umem_; }
    uint32_t id() const noexcept { return umem_ ? umem_->umem_id : 0; }
    std::byte* data() const noexcept { return mem_ ? mem_.data() : ext_; }
    size_t size() const noexcept { return size_; }
    explicit operator bool() const noexcept { return umem_ != nullptr; }
    // Deregisters now; on failure keeps the umem (and its buffer) so that it
    // can be tried again. Returns the errno, 0 on success.
    int try_dereg() noexcept;
    void reset() noexcept;

private:
    const DevxApi* api_ = nullptr;
    mlx5dv_devx_umem* umem_ = nullptr;
    PageBuffer mem_;  // reg: owned
    std::byte* ext_ = nullptr;  // reg_existing: not owned
    size_t size_ = 0;
};

// A DevX (general) object: PRM obj_id and obj_type kept next to the handle.
class DevxObj {
public:
    DevxObj() = default;
    DevxObj(const DevxApi* api, mlx5dv_devx_obj* obj, uint32_t obj_id, uint16_t obj_type) noexcept
        : api_(api), obj_(obj), obj_id_(obj_id), obj_type_(obj_type) {}
    DevxObj(DevxObj&& o) noexcept
        : api_(o.api_), obj_(std::exchange(o.obj_, nullptr)), obj_id_(o.obj_id_),
          obj_type_(o.obj_type_) {}
    DevxObj& operator=(DevxObj&& o) noexcept;
    DevxObj(const DevxObj&) = delete;
    DevxObj& operator=(const DevxObj&) = delete;
    ~DevxObj() { reset(); }

    // Blocking CREATE through obj_create; checks the PRM status in `out`
    // (firmware error with status/syndrome) and reads obj_id from it.
    static Result<DevxObj> create(const Context& ctx, std::span<const std::byte> in,
                                  std::span<std::byte> out);

    mlx5dv_devx_obj* get() const noexcept { return obj_; }
    uint32_t obj_id() const noexcept { return obj_id_; }
    uint16_t obj_type() const noexcept { return obj_type_; }
    const DevxApi* api() const noexcept { return api_; }
    explicit operator bool() const noexcept { return obj_ != nullptr; }
    mlx5dv_devx_obj* release() noexcept { return std::exchange(obj_, nullptr); }
    // Destroys now; returns the destroy errno (0 on success), logged on failure.
    int destroy() noexcept;
    // Destroys now; on failure keeps the handle (DevX frees it only on
    // success) so that the destroy can be tried again.
    int try_destroy() noexcept;
    void reset() noexcept { (void)destroy(); }

private:
    const DevxApi* api_ = nullptr;
    mlx5dv_devx_obj* obj_ = nullptr;
    uint32_t obj_id_ = 0;
    uint16_t obj_type_ = 0;
};

// Completion channel for asynchronous QUERY (mlx5dv_devx_create_cmd_comp).
// Its fd is switched to non-blocking so a drain loop stops at EAGAIN.
class CmdComp {
public:
    CmdComp() = default;
    CmdComp(CmdComp&& o) noexcept : api_(o.api_), comp_(std::exchange(o.comp_, nullptr)) {}
    CmdComp& operator=(CmdComp&& o) noexcept;
    CmdComp(const CmdComp&) = delete;
    CmdComp& operator=(const CmdComp&) = delete;
    ~CmdComp() { reset(); }

    static Result<CmdComp> create(const DevxApi& api, ibv_context* ctx);
    static Result<CmdComp> create(const Context& ctx) { return create(*ctx.api(), ctx.get()); }

    mlx5dv_devx_cmd_comp* get() const noexcept { return comp_; }
    int fd() const noexcept { return comp_ ? comp_->fd : -1; }
    void reset() noexcept;

private:
    const DevxApi* api_ = nullptr;
    mlx5dv_devx_cmd_comp* comp_ = nullptr;
};

// DevX event channel (OBJECT_CHANGE on virtq error).
class EventChannel {
public:
    EventChannel() = default;
    EventChannel(EventChannel&& o) noexcept : api_(o.api_), ch_(std::exchange(o.ch_, nullptr)) {}
    EventChannel& operator=(EventChannel&& o) noexcept;
    EventChannel(const EventChannel&) = delete;
    EventChannel& operator=(const EventChannel&) = delete;
    ~EventChannel() { reset(); }

    static Result<EventChannel> create(
        const Context& ctx,
        mlx5dv_devx_create_event_channel_flags flags =
            MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA);

    // Subscribes `obj` to the given event numbers; `cookie` comes back with each event.
    Result<void> subscribe(const DevxObj& obj, std::span<const uint16_t> events, uint64_t cookie);

    mlx5dv_devx_event_channel* get() const noexcept { return ch_; }
    int fd() const noexcept { return ch_ ? ch_->fd : -1; }
    void reset() noexcept;

private:
    const DevxApi* api_ = nullptr;
    mlx5dv_devx_event_channel* ch_ = nullptr;
};

}  // namespace mlx5async::devx
