// DevxApi entries: device list, open/close, PD, UAR, VAR.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "api_internal.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"
#include "dispatch.hpp"
#include "emu.hpp"

namespace mlx5async::emu::detail {

using prm::Opcode;

ContextImpl* ctx_of(ibv_context* c) {
    auto* h = handle_cast<ContextHandle>(c, kCtxMagic);
    if (!h) errno = EINVAL;
    return h ? h->impl : nullptr;
}

CmdOutcome run_resource(ContextImpl& c, const CmdDesc& d,
                        const std::function<Result<void>(DeviceState&)>& body) {
    return c.dev->execute(d, [&](bool aborted, const FaultDecision& dec) -> CmdOutcome {
        if (aborted) return {ENXIO, 0, 0};
        if (dec.fail) return {prm::status_to_errno(dec.status), dec.status, dec.syndrome};
        DeviceState& st = c.dev->state();
        std::lock_guard lk(st.mu);
        Result<void> r = body(st);
        if (r) return {};
        uint8_t s = r.error().fw_status;
        return {prm::status_to_errno(s), s, r.error().syndrome};
    });
}

CmdOutcome run_mailbox(Device& dev, uint32_t ctx_id, std::span<const std::byte> in,
                       std::span<std::byte> out, bool aborted, const FaultDecision& dec,
                       uint32_t* created_id) {
    if (aborted) {
        uint8_t s = uint8_t(prm::Status::INT_ERR);
        write_failure(out, s, syndrome::kFlushed);
        return {ENXIO, s, syndrome::kFlushed};
    }
    if (dec.fail) {
        write_failure(out, dec.status, dec.syndrome);
        return {EREMOTEIO, dec.status, dec.syndrome};
    }
    Mailbox m{in, out, ctx_id, 0};
    DispatchResult r = dispatch(dev.state(), m);
    if (created_id) *created_id = m.created_id;
    return {r.status ? EREMOTEIO : 0, r.status, r.syndrome};
}

void ctx_hold(ContextImpl& c) {
    std::lock_guard lk(c.mu);
    ++c.handles;
}

void ctx_release(ContextImpl* c) {
    bool last;
    {
        std::lock_guard lk(c->mu);
        last = --c->handles == 0 && c->closed;
    }
    if (last) delete c;
}

bool ctx_closed(ContextImpl& c) {
    std::lock_guard lk(c.mu);
    return c.closed;
}

bool ctx_gone(ContextImpl& c) { return ctx_closed(c) || c.dev->closed(); }

Result<uint32_t> alloc_page(ContextImpl& c) {
    std::lock_guard lk(c.mu);
    for (uint32_t i = 0; i < c.pages.size(); ++i)
        if (!c.pages[i]) {
            c.pages[i] = true;
            return i;
        }
    return fail(Errc::NotFound, "no free doorbell page");
}

void free_page(ContextImpl& c, uint32_t page) {
    std::lock_guard lk(c.mu);
    if (page < c.pages.size()) c.pages[page] = false;
}

ibv_device** get_device_list(int* num) {
    if (auto r = ensure_default_device(); !r) {
        errno = ENOMEM;
        return nullptr;
    }
    auto devs = all_devices();
    auto** list = static_cast<ibv_device**>(std::calloc(devs.size() + 1, sizeof(ibv_device*)));
    if (!list) {
        errno = ENOMEM;
        return nullptr;
    }
    for (size_t i = 0; i < devs.size(); ++i) list[i] = devs[i]->ibv();
    if (num) *num = int(devs.size());
    return list;
}

void free_device_list(ibv_device** list) { std::free(list); }

const char* get_device_name(ibv_device* d) { return d ? d->name : nullptr; }

bool is_supported(ibv_device* d) { return device_of(d) != nullptr; }

ibv_context* open_device(ibv_device* d, mlx5dv_context_attr* attr) {
    auto dev = shared_device(d);
    if (!dev || (attr && (attr->flags & ~uint32_t(MLX5DV_CONTEXT_FLAGS_DEVX)))) {
        errno = EOPNOTSUPP;  // rdma-core: not an mlx5 device / unknown flags
        return nullptr;
    }
    if (dev->closed()) {
        errno = ENODEV;
        return nullptr;
    }
    auto impl = std::make_unique<ContextImpl>();
    int fd = memfd_create("mlx5emu-ctx", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, off_t(kCtxPages * kPageSize)) != 0) {
        int e = errno;
        if (fd >= 0) ::close(fd);
        errno = e;
        return nullptr;
    }
    impl->memfd = UniqueFd(fd);
    impl->pages.assign(kCtxPages, false);
    impl->dev = std::move(dev);
    impl->id = impl->dev->new_context_id();
    auto* h = new ContextHandle{};
    h->pub.device = d;
    h->pub.cmd_fd = fd;
    h->pub.async_fd = -1;
    pthread_mutex_init(&h->pub.mutex, nullptr);
    h->magic = kCtxMagic;
    h->impl = impl.release();
    return &h->pub;
}

int close_device(ibv_context* c) {
    auto* h = handle_cast<ContextHandle>(c, kCtxMagic);
    if (!h) return fail_errno(EINVAL);
    // As uverbs on close: every object of the context goes.
    ContextImpl* impl = h->impl;
    impl->dev->drop_context_objects(impl->id);
    pthread_mutex_destroy(&h->pub.mutex);
    h->magic = 0;
    delete h;
    bool last;
    {
        std::lock_guard lk(impl->mu);
        impl->closed = true;
        impl->memfd.reset();  // existing mappings stay valid
        last = impl->handles == 0;
    }
    if (last) delete impl;
    return 0;
}

ibv_pd* alloc_pd(ibv_context* c) {
    ContextImpl* ctx = ctx_of(c);
    if (!ctx) return nullptr;
    uint32_t pdn = 0;
    CmdOutcome o = run_resource(*ctx, {uint16_t(Opcode::ALLOC_PD), 0, 0}, [&](DeviceState& st) {
        auto id = st.pds.insert(PdObj{ctx->id, 0});
        if (!id) return Result<void>(unexpected(id.error()));
        pdn = *id;
        return Result<void>();
    });
    if (o.err) {
        errno = o.err;
        return nullptr;
    }
    auto* h = new PdHandle{};
    h->pub.context = c;
    h->pub.handle = pdn;
    h->magic = kPdMagic;
    h->ctx = ctx;
    ctx_hold(*ctx);
    return &h->pub;
}

int dealloc_pd(ibv_pd* pd) {
    auto* h = handle_cast<PdHandle>(pd, kPdMagic);
    if (!h) return fail_errno(EINVAL);
    uint32_t pdn = h->pub.handle;
    if (ctx_gone(*h->ctx)) return free_handle(h), 0;
    CmdOutcome o = run_resource(*h->ctx, {uint16_t(Opcode::DEALLOC_PD), 0, pdn}, [&](DeviceState& st) {
        auto p = st.pds.find(pdn);
        if (!p) return Result<void>(unexpected(p.error()));
        if (p->refs) return Result<void>(fw_fail(prm::Status::RES_BUSY, syndrome::kObjectInUse, "pd in use"));
        st.pds.erase(pdn);
        return Result<void>();
    });
    if (o.err) return fail_errno(o.err);
    free_handle(h);
    return 0;
}

int init_obj(mlx5dv_obj* obj, uint64_t obj_type) {
    if (!obj || obj_type != MLX5DV_OBJ_PD) return fail_errno(EOPNOTSUPP);
    auto* h = handle_cast<PdHandle>(obj->pd.in, kPdMagic);
    if (!h || !obj->pd.out) return fail_errno(EINVAL);
    obj->pd.out->pdn = h->pub.handle;
    obj->pd.out->comp_mask = 0;
    return 0;
}

mlx5dv_devx_uar* alloc_uar(ibv_context* c, uint32_t flags) {
    ContextImpl* ctx = ctx_of(c);
    if (!ctx) return nullptr;
    if (flags != MLX5DV_UAR_ALLOC_TYPE_BF && flags != MLX5DV_UAR_ALLOC_TYPE_NC) {
        errno = EINVAL;
        return nullptr;
    }
    auto page = alloc_page(*ctx);
    if (!page) {
        errno = ENOMEM;
        return nullptr;
    }
    off_t off = off_t(*page) * off_t(kPageSize);
    void* base = mmap(nullptr, kPageSize, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->memfd.get(), off);
    if (base == MAP_FAILED) {
        free_page(*ctx, *page);
        return nullptr;
    }
    uint32_t id = 0;
    CmdOutcome o = run_resource(*ctx, {uint16_t(Opcode::ALLOC_UAR), 0, 0}, [&](DeviceState& st) {
        auto r = st.uars.insert(PageObj{ctx->id, *page});
        if (!r) return Result<void>(unexpected(r.error()));
        id = *r;
        return Result<void>();
    });
    if (o.err) {
        munmap(base, kPageSize);
        free_page(*ctx, *page);
        errno = o.err;
        return nullptr;
    }
    // The datapath watches the CQ doorbell register of the page (arming).
    ctx->dev->datapath().add_uar(id, ctx->id, ctx->memfd.get(), off);
    auto* h = new UarHandle{};
    h->pub.base_addr = base;
    h->pub.reg_addr = static_cast<char*>(base) + 0x800;  // mlx5 UAR doorbell register
    h->pub.page_id = id;
    h->pub.mmap_off = off;
    h->magic = kPageMagic;
    h->ctx = ctx;
    h->id = id;
    h->page = *page;
    ctx_hold(*ctx);
    return &h->pub;
}

void free_uar(mlx5dv_devx_uar* u) {
    auto* h = handle_cast<UarHandle>(u, kPageMagic);
    if (!h) return;
    // A UAR a CQ or QP names stays (RES_BUSY; rdma-core's free is void and
    // frees the handle anyway) until the context closes.
    if (!ctx_gone(*h->ctx)) {
        bool freed = false;
        run_resource(*h->ctx, {uint16_t(Opcode::DEALLOC_UAR), 0, h->id}, [&](DeviceState& st) {
            auto p = st.uars.find(h->id);
            if (p && p->refs)
                return Result<void>(fw_fail(prm::Status::RES_BUSY, syndrome::kObjectInUse, "UAR in use"));
            st.uars.erase(h->id);
            freed = true;
            return Result<void>();
        });
        if (freed) {
            h->ctx->dev->datapath().remove_uar(h->id);
            free_page(*h->ctx, h->page);
        }
    }
    munmap(h->pub.base_addr, kPageSize);
    free_handle(h);
}

// VAR pages are kernel-managed (no firmware command): one page of the
// context memfd, mapped by the client with mmap(ctx->cmd_fd, mmap_off).
mlx5dv_var* alloc_var(ibv_context* c, uint32_t flags) {
    ContextImpl* ctx = ctx_of(c);
    if (!ctx) return nullptr;
    if (flags) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    auto page = alloc_page(*ctx);
    if (!page) {
        errno = ENOMEM;
        return nullptr;
    }
    uint32_t id = 0;
    {
        DeviceState& st = ctx->dev->state();
        std::lock_guard lk(st.mu);
        auto r = st.vars.insert(PageObj{ctx->id, *page});
        if (!r) {
            free_page(*ctx, *page);
            errno = ENOMEM;
            return nullptr;
        }
        id = *r;
    }
    ctx->dev->datapath().add_doorbell(id, ctx->id, ctx->memfd.get(), off_t(*page) * off_t(kPageSize));
    auto* h = new VarHandle{};
    h->pub.page_id = id;
    h->pub.length = uint32_t(kPageSize);
    h->pub.mmap_off = off_t(*page) * off_t(kPageSize);
    h->magic = kPageMagic + 1;
    h->ctx = ctx;
    h->id = id;
    h->page = *page;
    ctx_hold(*ctx);
    return &h->pub;
}

void free_var(mlx5dv_var* v) {
    auto* h = handle_cast<VarHandle>(v, kPageMagic + 1);
    if (!h) return;
    if (!ctx_gone(*h->ctx)) {
        DeviceState& st = h->ctx->dev->state();
        std::lock_guard lk(st.mu);
        st.vars.erase(h->id);
    }
    h->ctx->dev->datapath().remove_doorbell(h->id);
    free_page(*h->ctx, h->page);
    free_handle(h);
}

}  // namespace mlx5async::emu::detail
