#include "raii.hpp"

#include <sys/mman.h>

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/base/log_sink.hpp"
#include "common/base/unique_fd.hpp"
#include "common/prm/general_obj.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"

namespace mlx5async::devx {
namespace {

constexpr size_t kPage = 4096;

// Name of a PCI device behind an ibv device: basename of the resolved
// <ibdev_path>/device symlink (sysfs: /sys/class/infiniband/mlx5_0/device ->
// ../../../0000:08:00.2).
std::string pci_of(const ibv_device* dev) {
    std::string link = std::string(dev->ibdev_path) + "/device";
    char resolved[PATH_MAX];
    if (!::realpath(link.c_str(), resolved)) return {};
    std::string s(resolved);
    auto slash = s.rfind('/');
    return slash == std::string::npos ? s : s.substr(slash + 1);
}

template <typename Match>
Result<Context> open_matching(const DevxApi& api, Match match, std::string_view what) {
    int n = 0;
    ibv_device** list = api.get_device_list(&n);
    if (!list || n == 0) {
        int err = list ? 0 : errno;
        if (list) api.free_device_list(list);
        return fail(Errc::NotFound,
                    "no RDMA device on this machine to find " + std::string(what) + " among" +
                        (err ? std::string(" (ibv_get_device_list: ") + std::strerror(err) + ")" : "") +
                        ": is the ConnectX's mlx5_core/mlx5_ib driver loaded? (emu=<profile> needs none)");
    }
    ibv_device* found = nullptr;
    std::string seen;
    for (int i = 0; i < n; ++i) {
        if (!found && match(list[i])) found = list[i];
        seen += (seen.empty() ? "" : ", ") + std::string(api.get_device_name(list[i])) + " (" +
                pci_of(list[i]) + ")";
    }
    if (!found) {
        api.free_device_list(list);
        return fail(Errc::NotFound, "no RDMA device " + std::string(what) + "; the machine has " + seen);
    }
    if (!api.is_supported(found)) {
        api.free_device_list(list);
        return fail(Errc::NotSupported, std::string(what) + " is not an mlx5 device");
    }
    mlx5dv_context_attr attr{};
    attr.flags = MLX5DV_CONTEXT_FLAGS_DEVX;
    ibv_context* ctx = api.open_device(found, &attr);
    int err = errno;
    api.free_device_list(list);
    if (!ctx) return unexpected(Error::sys(err, "mlx5dv_open_device " + std::string(what)));
    return Context(&api, ctx);
}

}  // namespace

// ---- Context ----
Context& Context::operator=(Context&& o) noexcept {
    if (this != &o) {
        reset();
        api_ = o.api_;
        ctx_ = std::exchange(o.ctx_, nullptr);
    }
    return *this;
}

Result<Context> Context::open(const DevxApi& api, std::string_view name) {
    return open_matching(
        api, [&](ibv_device* d) { return name == api.get_device_name(d); }, name);
}

Result<Context> Context::open_pci(const DevxApi& api, std::string_view bdf) {
    // sysfs names carry the PCI domain: bb:dd.f is 0000:bb:dd.f.
    std::string full = bdf.size() == 7 ? "0000:" + std::string(bdf) : std::string(bdf);
    return open_matching(api, [&](ibv_device* d) { return pci_of(d) == full; }, bdf);
}

void Context::reset() noexcept {
    if (!ctx_) return;
    if (int r = api_->close_device(ctx_); r != 0)
        logf(LogLevel::Error, "devx: ibv_close_device failed: %s", std::strerror(r < 0 ? -r : r));
    ctx_ = nullptr;
}

// ---- Pd ----
Pd& Pd::operator=(Pd&& o) noexcept {
    if (this != &o) {
        reset();
        api_ = o.api_;
        pd_ = std::exchange(o.pd_, nullptr);
        pdn_ = o.pdn_;
    }
    return *this;
}

Result<Pd> Pd::alloc(const Context& ctx) {
    const DevxApi& api = *ctx.api();
    ibv_pd* pd = api.alloc_pd(ctx.get());
    if (!pd) return unexpected(Error::sys(errno, "ibv_alloc_pd"));
    Pd out;
    out.api_ = &api;
    out.pd_ = pd;
    mlx5dv_pd dv_pd{};
    mlx5dv_obj obj{};
    obj.pd.in = pd;
    obj.pd.out = &dv_pd;
    if (int r = api.init_obj(&obj, MLX5DV_OBJ_PD); r != 0)
        return unexpected(Error::sys(r < 0 ? -r : r, "mlx5dv_init_obj(PD)"));
    out.pdn_ = dv_pd.pdn;
    return out;
}

void Pd::reset() noexcept {
    if (!pd_) return;
    if (int r = api_->dealloc_pd(pd_); r != 0)
        logf(LogLevel::Error, "devx: ibv_dealloc_pd pdn 0x%x failed: %s", pdn_,
             std::strerror(r < 0 ? -r : r));
    pd_ = nullptr;
}

// ---- Uar ----
Uar& Uar::operator=(Uar&& o) noexcept {
    if (this != &o) {
        reset();
        api_ = o.api_;
        uar_ = std::exchange(o.uar_, nullptr);
    }
    return *this;
}

Result<Uar> Uar::alloc(const Context& ctx, uint32_t flags) {
    mlx5dv_devx_uar* u = ctx.api()->alloc_uar(ctx.get(), flags);
    if (!u) return unexpected(Error::sys(errno, "mlx5dv_devx_alloc_uar"));
    Uar out;
    out.api_ = ctx.api();
    out.uar_ = u;
    return out;
}

void Uar::reset() noexcept {
    if (!uar_) return;
    api_->free_uar(uar_);  // void in rdma-core: nothing to report
    uar_ = nullptr;
}

// ---- Umem ----
Umem& Umem::operator=(Umem&& o) noexcept {
    if (this != &o) {
        reset();
        api_ = o.api_;
        umem_ = std::exchange(o.umem_, nullptr);
        mem_ = std::move(o.mem_);
        ext_ = std::exchange(o.ext_, nullptr);
        size_ = std::exchange(o.size_, 0);
    }
    return *this;
}

Result<Umem> Umem::reg(const Context& ctx, size_t size, uint32_t access) {
    auto mem = PageBuffer::alloc(size);
    MLX5A_CHECK(mem);
    auto out = reg_existing(ctx, mem->data(), size, access);
    MLX5A_CHECK(out);
    out->mem_ = std::move(*mem);
    out->ext_ = nullptr;
    return out;
}

Result<Umem> Umem::reg_existing(const Context& ctx, void* addr, size_t size, uint32_t access) {
    Umem out;
    out.api_ = ctx.api();
    out.ext_ = static_cast<std::byte*>(addr);
    out.size_ = size;
    out.umem_ = ctx.api()->umem_reg(ctx.get(), addr, size, access);
    if (!out.umem_) return unexpected(Error::sys(errno, "mlx5dv_devx_umem_reg"));
    return out;
}

void PageBuffer::Free::operator()(std::byte* p) const noexcept { ::munmap(p, bytes); }

Result<PageBuffer> PageBuffer::alloc(size_t bytes) {
    auto v = alloc_many(std::span<const size_t>(&bytes, 1));
    MLX5A_CHECK(v);
    return std::move(v->front());
}

// Fresh anonymous pages: zero without a memset, and faulted in where they
// are first touched (the kernel's pinning, on hardware; the device's first
// write, under the emulator), not by the caller that builds the batch.
Result<std::vector<PageBuffer>> PageBuffer::alloc_many(std::span<const size_t> bytes) {
    auto pages = [](size_t b) { return b < kPage ? kPage : (b + kPage - 1) / kPage * kPage; };
    size_t total = 0;
    for (size_t b : bytes) total += pages(b);
    std::vector<PageBuffer> out(bytes.size());
    if (total == 0) return out;
    void* p = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return unexpected(Error::sys(errno, "umem buffer"));
    auto* at = static_cast<std::byte*>(p);
    for (size_t i = 0; i < bytes.size(); i++) {
        const size_t n = pages(bytes[i]);
        out[i].mem_ = std::unique_ptr<std::byte, Free>(at, Free{n});
        at += n;
    }
    return out;
}

Umem Umem::adopt(const DevxApi* api, mlx5dv_devx_umem* umem, void* addr, size_t size) noexcept {
    Umem out;
    out.api_ = api;
    out.umem_ = umem;
    out.ext_ = static_cast<std::byte*>(addr);
    out.size_ = size;
    return out;
}

bool Umem::own(PageBuffer& mem) noexcept {
    if (!mem || mem.data() != ext_) return false;
    mem_ = std::move(mem);
    ext_ = nullptr;
    return true;
}

int Umem::try_dereg() noexcept {
    if (!umem_) return 0;
    if (int r = api_->umem_dereg(umem_); r != 0) {
        r = r < 0 ? -r : r;
        logf(LogLevel::Error, "devx: umem_dereg id 0x%x failed: %s", umem_->umem_id, std::strerror(r));
        return r;
    }
    umem_ = nullptr;
    mem_ = {};  // after the deregistration
    ext_ = nullptr;
    size_ = 0;
    return 0;
}

void Umem::reset() noexcept {
    if (try_dereg() != 0) umem_ = nullptr;  // given up: the context's close frees it
    mem_ = {};
    ext_ = nullptr;
    size_ = 0;
}

// ---- DevxObj ----
DevxObj& DevxObj::operator=(DevxObj&& o) noexcept {
    if (this != &o) {
        reset();
        api_ = o.api_;
        obj_ = std::exchange(o.obj_, nullptr);
        obj_id_ = o.obj_id_;
        obj_type_ = o.obj_type_;
    }
    return *this;
}

Result<DevxObj> DevxObj::create(const Context& ctx, std::span<const std::byte> in,
                                std::span<std::byte> out) {
    auto opcode = prm::read_opcode(in);
    uint16_t op = opcode ? *opcode : 0;
    uint16_t obj_type = 0;
    if (auto hdr = prm::read_general_obj_in(in)) obj_type = hdr->obj_type;
    errno = 0;
    mlx5dv_devx_obj* obj = ctx.api()->obj_create(ctx.get(), in.data(), in.size(), out.data(),
                                                 out.size());
    int err = errno;
    // DevX copies the output back on a firmware error: status first.
    if (auto st = prm::check_out(out, op, 0); !st) {
        if (obj) ctx.api()->obj_destroy(obj);
        return unexpected(st.error());
    }
    if (!obj) {
        Error e = Error::sys(err ? err : EIO, "mlx5dv_devx_obj_create");
        e.opcode = op;
        return unexpected(std::move(e));
    }
    auto hdr = prm::read_general_obj_out(out);
    return DevxObj(ctx.api(), obj, hdr ? hdr->obj_id : 0, obj_type);
}

int DevxObj::try_destroy() noexcept {
    if (!obj_) return 0;
    int r = api_->obj_destroy(obj_);
    if (r == 0) {
        obj_ = nullptr;
        return 0;
    }
    r = r < 0 ? -r : r;
    logf(LogLevel::Error, "devx: DESTROY %s obj 0x%x failed: %s", prm::obj_type_name(obj_type_),
         obj_id_, std::strerror(r));
    return r;
}

int DevxObj::destroy() noexcept {
    const int r = try_destroy();
    obj_ = nullptr;  // given up: the context's close frees it
    return r;
}

// ---- CmdComp ----
CmdComp& CmdComp::operator=(CmdComp&& o) noexcept {
    if (this != &o) {
        reset();
        api_ = o.api_;
        comp_ = std::exchange(o.comp_, nullptr);
    }
    return *this;
}

Result<CmdComp> CmdComp::create(const DevxApi& api, ibv_context* ctx) {
    mlx5dv_devx_cmd_comp* c = api.create_cmd_comp(ctx);
    if (!c) return unexpected(Error::sys(errno, "mlx5dv_devx_create_cmd_comp"));
    CmdComp out;
    out.api_ = &api;
    out.comp_ = c;
    // rdma-core: the read blocks unless the fd is non-blocking (DPDK sets it too).
    MLX5A_CHECK(set_nonblocking(c->fd, "cmd_comp fd"));
    return out;
}

void CmdComp::reset() noexcept {
    if (!comp_) return;
    api_->destroy_cmd_comp(comp_);
    comp_ = nullptr;
}

// ---- EventChannel ----
EventChannel& EventChannel::operator=(EventChannel&& o) noexcept {
    if (this != &o) {
        reset();
        api_ = o.api_;
        ch_ = std::exchange(o.ch_, nullptr);
    }
    return *this;
}

Result<EventChannel> EventChannel::create(const Context& ctx,
                                          mlx5dv_devx_create_event_channel_flags flags) {
    mlx5dv_devx_event_channel* ch = ctx.api()->create_event_channel(ctx.get(), flags);
    if (!ch) return unexpected(Error::sys(errno, "mlx5dv_devx_create_event_channel"));
    EventChannel out;
    out.api_ = ctx.api();
    out.ch_ = ch;
    return out;
}

Result<void> EventChannel::subscribe(const DevxObj& obj, std::span<const uint16_t> events,
                                     uint64_t cookie) {
    std::vector<uint16_t> ev(events.begin(), events.end());
    int r = api_->subscribe_devx_event(ch_, obj.get(), static_cast<uint16_t>(ev.size() * 2),
                                       ev.data(), cookie);
    if (r != 0) return unexpected(Error::sys(r < 0 ? -r : r, "mlx5dv_devx_subscribe_devx_event"));
    return {};
}

void EventChannel::reset() noexcept {
    if (!ch_) return;
    api_->destroy_event_channel(ch_);
    ch_ = nullptr;
}

}  // namespace mlx5async::devx
