#include "fake_devx_api.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <span>

#include "common/prm/general_obj.hpp"
#include "common/prm/opcodes.hpp"

namespace mlx5async::testing {
namespace {

FakeDevx* g_fake = nullptr;  // the live instance (one at a time)

std::span<const std::byte> bytes(const void* p, size_t n) {
    return {static_cast<const std::byte*>(p), n};
}

uint16_t opcode_of(const void* in, size_t inlen) {
    auto r = prm::read_opcode(bytes(in, inlen));
    return r ? *r : 0;
}

// A handle is a pointer to the object's id, owned by the fake's object table.
uint32_t id_of(mlx5dv_devx_obj* o) { return *reinterpret_cast<uint32_t*>(o); }

}  // namespace

struct FakeDevx::Hooks {
    static FakeDevx& f() { return *g_fake; }

    static int blocking(FakeOp op, mlx5dv_devx_obj* o, const void* in, size_t inlen, void* out,
                        size_t outlen) {
        FakeDevx& d = f();
        uint32_t id = o ? id_of(o) : 0;
        std::unique_lock lk(d.mu_);
        FakeReply r = d.decide({op, id, opcode_of(in, inlen), {}});
        d.begin(op, id);
        d.wait_if_held(r, lk);
        int err = r.call_errno;
        if (!err) err = d.execute(op, d.objs_.count(id) ? d.objs_[id].get() : nullptr, in, inlen,
                                  out, outlen);
        if (r.status && outlen >= 16)
            prm::write_general_obj_out({r.status, r.syndrome, id}, bytes_mut(out, outlen));
        d.end(op, id);
        return err ? err : (r.status ? EREMOTEIO : 0);
    }
    static std::span<std::byte> bytes_mut(void* p, size_t n) { return {static_cast<std::byte*>(p), n}; }

    static mlx5dv_devx_obj* obj_create(ibv_context*, const void* in, size_t inlen, void* out,
                                       size_t outlen) {
        FakeDevx& d = f();
        uint32_t id;
        {
            std::lock_guard lk(d.mu_);
            id = d.next_id_++;
        }
        {
            std::unique_lock lk(d.mu_);
            const auto* b = static_cast<const std::byte*>(in);
            FakeReply r = d.decide({FakeOp::Create, 0, opcode_of(in, inlen), {b, b + inlen}});
            d.begin(FakeOp::Create, id);
            d.wait_if_held(r, lk);
            if (r.status && outlen >= 16)
                prm::write_general_obj_out({r.status, r.syndrome, 0}, bytes_mut(out, outlen));
            if (r.status || r.call_errno) {
                d.end(FakeOp::Create, id);
                errno = r.call_errno ? r.call_errno : EREMOTEIO;
                return nullptr;
            }
            auto obj = std::make_unique<Obj>();
            obj->id = id;
            mlx5dv_devx_obj* h = d.add_obj(std::move(obj));
            if (outlen >= 16) prm::write_general_obj_out({0, 0, id}, bytes_mut(out, outlen));
            d.end(FakeOp::Create, id);
            return h;
        }
    }
    static int obj_modify(mlx5dv_devx_obj* o, const void* in, size_t inlen, void* out, size_t outlen) {
        return blocking(FakeOp::Modify, o, in, inlen, out, outlen);
    }
    static int obj_query(mlx5dv_devx_obj* o, const void* in, size_t inlen, void* out, size_t outlen) {
        return blocking(FakeOp::Query, o, in, inlen, out, outlen);
    }
    static int general_cmd(ibv_context*, const void* in, size_t inlen, void* out, size_t outlen) {
        return blocking(FakeOp::General, nullptr, in, inlen, out, outlen);
    }
    static int obj_destroy(mlx5dv_devx_obj* o) {
        int r = blocking(FakeOp::Destroy, o, nullptr, 0, nullptr, 0);
        if (r == 0) {
            std::lock_guard lk(f().mu_);
            f().objs_.erase(id_of(o));  // frees the handle too
        }
        return r;
    }
    static int obj_query_async(mlx5dv_devx_obj* o, const void* in, size_t inlen, size_t outlen,
                               uint64_t wr_id, mlx5dv_devx_cmd_comp*) {
        FakeDevx& d = f();
        uint32_t id = id_of(o);
        std::unique_lock lk(d.mu_);
        if (d.busy_left_ > 0) {
            --d.busy_left_;
            return EBUSY;
        }
        FakeReply r = d.decide({FakeOp::QueryAsync, id, opcode_of(in, inlen), {}});
        if (r.call_errno) return r.call_errno;
        ++d.async_issued_;
        d.begin(FakeOp::QueryAsync, id);
        Completion c{wr_id, std::vector<std::byte>(outlen)};
        d.execute(FakeOp::Query, d.objs_.count(id) ? d.objs_[id].get() : nullptr, in, inlen,
                  c.out.data(), outlen);
        if (r.status) prm::write_general_obj_out({r.status, r.syndrome, id}, c.out);
        if (r.hold) {
            d.held_.push_back({d.next_ticket_++, true, std::move(c)});
            d.cv_.notify_all();
        } else {
            d.push_completion(std::move(c));
        }
        return 0;
    }
    // Resources: one static instance each, counted so leaks show.
    static void add(int n) {
        std::lock_guard lk(f().mu_);
        f().live_resources_ += n;
    }
    static ibv_device** get_device_list(int* n) {
        *n = 1;
        return f().dev_list_;
    }
    static void free_device_list(ibv_device**) {}
    static const char* get_device_name(ibv_device* d) { return d->name; }
    static bool is_supported(ibv_device*) { return true; }
    static ibv_context* open_device(ibv_device*, mlx5dv_context_attr*) {
        add(1);
        return &f().ctx_;
    }
    static int close_device(ibv_context*) {
        add(-1);
        return 0;
    }
    static ibv_pd* alloc_pd(ibv_context*) {
        add(1);
        return &f().pd_;
    }
    static int dealloc_pd(ibv_pd*) {
        add(-1);
        return 0;
    }
    static int init_obj(mlx5dv_obj* o, uint64_t type) {
        if (type != MLX5DV_OBJ_PD) return EINVAL;
        o->pd.out->pdn = 0x42;
        return 0;
    }
    static mlx5dv_devx_umem* umem_reg(ibv_context*, void* addr, size_t size, uint32_t) {
        if (!addr || size == 0) {
            errno = EINVAL;
            return nullptr;
        }
        add(1);
        f().umem_.umem_id = 0x77;
        return &f().umem_;
    }
    static int umem_dereg(mlx5dv_devx_umem*) {
        add(-1);
        return 0;
    }
    static mlx5dv_devx_uar* alloc_uar(ibv_context*, uint32_t) {
        add(1);
        f().uar_.page_id = 0x5;
        return &f().uar_;
    }
    static void free_uar(mlx5dv_devx_uar*) { add(-1); }
    static mlx5dv_devx_event_channel* create_event_channel(ibv_context*,
                                                           mlx5dv_devx_create_event_channel_flags) {
        add(1);
        f().ev_ch_.fd = f().pipe_[1];
        return &f().ev_ch_;
    }
    static void destroy_event_channel(mlx5dv_devx_event_channel*) { add(-1); }
    static int subscribe(mlx5dv_devx_event_channel*, mlx5dv_devx_obj* o, uint16_t sz, uint16_t ev[],
                         uint64_t) {
        return (o && sz == 2 && ev[0] == prm::kEventObjectChange) ? 0 : EINVAL;
    }

    static mlx5dv_devx_cmd_comp* create_cmd_comp(ibv_context*) { return &f().comp_; }
    static void destroy_cmd_comp(mlx5dv_devx_cmd_comp*) {}
    static int get_async_cmd_comp(mlx5dv_devx_cmd_comp*, mlx5dv_devx_async_cmd_hdr* resp,
                                  size_t len) {
        FakeDevx& d = f();
        char b;
        if (::read(d.pipe_[0], &b, 1) != 1) return errno;
        std::lock_guard lk(d.mu_);
        Completion c = std::move(d.completions_.front());
        d.completions_.pop_front();
        if (len < sizeof(*resp) + c.out.size()) return ENOSPC;
        resp->wr_id = c.wr_id;
        std::memcpy(resp->out_data, c.out.data(), c.out.size());
        d.end(FakeOp::QueryAsync, 0);
        return 0;
    }
};

FakeDevx::FakeDevx() {
    g_fake = this;
    if (::pipe2(pipe_, O_NONBLOCK | O_CLOEXEC) != 0) std::abort();
    comp_.fd = pipe_[0];
    std::strcpy(dev_.name, "fake0");
    std::strcpy(dev_.ibdev_path, "/nonexistent/fake0");
}

FakeDevx::~FakeDevx() {
    ::close(pipe_[0]);
    ::close(pipe_[1]);
    g_fake = nullptr;
}

const devx::DevxApi& FakeDevx::api() {
    static const devx::DevxApi kApi = {
        .name = "fake",
        .get_device_list = &Hooks::get_device_list,
        .free_device_list = &Hooks::free_device_list,
        .get_device_name = &Hooks::get_device_name,
        .is_supported = &Hooks::is_supported,
        .open_device = &Hooks::open_device,
        .close_device = &Hooks::close_device,
        .alloc_pd = &Hooks::alloc_pd,
        .dealloc_pd = &Hooks::dealloc_pd,
        .init_obj = &Hooks::init_obj,
        .general_cmd = &Hooks::general_cmd,
        .obj_create = &Hooks::obj_create,
        .obj_query = &Hooks::obj_query,
        .obj_modify = &Hooks::obj_modify,
        .obj_destroy = &Hooks::obj_destroy,
        .umem_reg = &Hooks::umem_reg,
        .umem_dereg = &Hooks::umem_dereg,
        .alloc_uar = &Hooks::alloc_uar,
        .free_uar = &Hooks::free_uar,
        .create_cmd_comp = &Hooks::create_cmd_comp,
        .destroy_cmd_comp = &Hooks::destroy_cmd_comp,
        .obj_query_async = &Hooks::obj_query_async,
        .get_async_cmd_comp = &Hooks::get_async_cmd_comp,
        .create_event_channel = &Hooks::create_event_channel,
        .destroy_event_channel = &Hooks::destroy_event_channel,
        .subscribe_devx_event = &Hooks::subscribe,
    };
    return kApi;
}

devx::DevxObj FakeDevx::make_obj(prm::VirtqState state) {
    std::lock_guard lk(mu_);
    auto obj = std::make_unique<Obj>();
    obj->id = next_id_++;
    obj->attr.state = state;
    obj->attr.hw_available_index = static_cast<uint16_t>(1000 + obj->id);
    obj->attr.hw_used_index = static_cast<uint16_t>(2000 + obj->id);
    uint32_t id = obj->id;
    return devx::DevxObj(&api(), add_obj(std::move(obj)), id,
                         static_cast<uint16_t>(prm::ObjType::VIRTIO_NET_Q));
}

mlx5dv_devx_obj* FakeDevx::add_obj(std::unique_ptr<Obj> obj) {
    obj->handle = std::make_unique<uint32_t>(obj->id);
    auto* h = reinterpret_cast<mlx5dv_devx_obj*>(obj->handle.get());
    objs_[obj->id] = std::move(obj);
    return h;
}

FakeReply FakeDevx::decide(const FakeCall& call) { return script_ ? script_(call) : FakeReply{}; }

void FakeDevx::begin(FakeOp op, uint32_t id) {
    trace_.push_back({FakeEvent::Issue, op, id});
    if (++in_flight_ > peak_) peak_ = in_flight_;
}

void FakeDevx::end(FakeOp op, uint32_t id) {
    if (op != FakeOp::QueryAsync) trace_.push_back({FakeEvent::Complete, op, id});
    if (--in_flight_ == 0) cv_.notify_all();
}

bool FakeDevx::wait_idle(std::chrono::milliseconds timeout) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, timeout, [&] { return in_flight_ == 0; });
}

int FakeDevx::live_resources() const {
    std::lock_guard lk(mu_);
    return live_resources_;
}

void FakeDevx::wait_if_held(const FakeReply& r, std::unique_lock<std::mutex>& lk) {
    if (!r.hold) return;
    uint64_t t = next_ticket_++;
    held_.push_back({t, false, {}});
    cv_.notify_all();
    cv_.wait(lk, [&] {
        for (uint64_t x : released_)
            if (x == t) return true;
        return false;
    });
}

int FakeDevx::execute(FakeOp op, Obj* obj, const void* in, size_t inlen, void* out,
                      size_t outlen) {
    if ((op == FakeOp::Modify || op == FakeOp::Query || op == FakeOp::Destroy) && !obj)
        return EINVAL;
    auto o = Hooks::bytes_mut(out, outlen);
    if (outlen >= 16) prm::write_general_obj_out({0, 0, obj ? obj->id : 0}, o);
    if (op == FakeOp::Modify && inlen >= prm::kVirtqCmdInBytes) {
        auto a = prm::read_virtq_object(bytes(in, inlen).subspan(prm::kGeneralObjInHdrBytes));
        if (a && (a->modify_field_select & prm::modify_bits::STATE)) obj->attr.state = a->state;
    }
    if (op == FakeOp::Query && outlen >= prm::kVirtqQueryOutBytes)
        (void)prm::write_virtq_object(obj->attr, o.subspan(prm::kGeneralObjOutHdrBytes));
    return 0;
}

void FakeDevx::push_completion(Completion c) {
    completions_.push_back(std::move(c));
    trace_.push_back({FakeEvent::Complete, FakeOp::QueryAsync,
                      0});  // completion order only; the engine maps wr_id
    char b = 1;
    (void)!::write(pipe_[1], &b, 1);
}

void FakeDevx::set_script(Script s) {
    std::lock_guard lk(mu_);
    script_ = std::move(s);
}

void FakeDevx::busy_next_async(unsigned n) {
    std::lock_guard lk(mu_);
    busy_left_ = n;
}

bool FakeDevx::wait_held(size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, timeout, [&] { return held_.size() >= n; });
}

void FakeDevx::release_all() {
    std::lock_guard lk(mu_);
    for (auto& h : held_) {
        if (h.async)
            push_completion(std::move(h.comp));
        else
            released_.push_back(h.ticket);
    }
    held_.clear();
    cv_.notify_all();
}

std::vector<FakeEvent> FakeDevx::trace() const {
    std::lock_guard lk(mu_);
    return trace_;
}

unsigned FakeDevx::peak_in_flight() const {
    std::lock_guard lk(mu_);
    return peak_;
}

unsigned FakeDevx::in_flight() const {
    std::lock_guard lk(mu_);
    return in_flight_;
}

unsigned FakeDevx::live_objects() const {
    std::lock_guard lk(mu_);
    return static_cast<unsigned>(objs_.size());
}

prm::VirtqState FakeDevx::state_of(uint32_t obj_id) const {
    std::lock_guard lk(mu_);
    auto it = objs_.find(obj_id);
    return it == objs_.end() ? prm::VirtqState::ERR : it->second->attr.state;
}

uint64_t FakeDevx::async_issued() const {
    std::lock_guard lk(mu_);
    return async_issued_;
}

}  // namespace mlx5async::testing
