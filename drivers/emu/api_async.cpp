// DevxApi entries: async QUERY completions, DevX event channels; the table.
#include <cerrno>
#include <cstring>

#include "api_internal.hpp"
#include "common/prm/event_qp.hpp"
#include "common/prm/field.hpp"
#include "common/prm/opcodes.hpp"
#include "emu.hpp"

namespace mlx5async::emu::detail {
namespace {

using prm::Opcode;
constexpr size_t kHdr = 16;
constexpr size_t kMaxEvents = 16;  // devx.c MAX_NUM_EVENTS

}  // namespace

mlx5dv_devx_cmd_comp* create_cmd_comp(ibv_context* c) {
    ContextImpl* ctx = ctx_of(c);
    if (!ctx) return nullptr;
    auto q = FdQueue::create();
    if (!q) {
        errno = q.error().sys_errno;
        return nullptr;
    }
    auto* h = new CmdCompHandle{};
    h->pub.fd = (*q)->fd();
    h->magic = kCompMagic;
    h->impl = new QueueImpl{std::move(*q), ctx->dev};
    return &h->pub;
}

void destroy_cmd_comp(mlx5dv_devx_cmd_comp* cc) {
    auto* h = handle_cast<CmdCompHandle>(cc, kCompMagic);
    if (!h) return;
    h->impl->q->close();  // completions still in flight are dropped
    h->magic = 0;
    delete h->impl;
    delete h;
}

int obj_query_async(mlx5dv_devx_obj* o, const void* in, size_t inlen, size_t outlen,
                    uint64_t wr_id, mlx5dv_devx_cmd_comp* cc) {
    auto* h = handle_cast<ObjHandle>(o, kObjMagic);
    auto* comp = handle_cast<CmdCompHandle>(cc, kCompMagic);
    if (!h || !comp || !in || inlen < kHdr || outlen < kHdr || outlen > 0xffff)
        return fail_errno(EINVAL);
    if (ctx_closed(*h->ctx)) return fail_errno(EBADF);
    auto i = std::span(static_cast<const std::byte*>(in), inlen);
    // devx.c ASYNC_QUERY: vhca_tunnel_id 0, a query opcode, the handle's object.
    if (prm::get_bits(i, 32, 16) || prm::get_bits(i, 0, 16) != uint16_t(Opcode::QUERY_GENERAL_OBJECT) ||
        prm::get_bits(i, 48, 16) != h->obj_type || prm::get_bits(i, 64, 32) != h->obj_id)
        return fail_errno(EINVAL);
    Device* dev = h->ctx->dev.get();  // outlives the command (close flushes)
    uint32_t ctx_id = h->ctx->id;
    std::vector<std::byte> inbuf(i.begin(), i.end());  // the kernel copies the input
    auto q = comp->impl->q;
    CmdDesc d{uint16_t(Opcode::QUERY_GENERAL_OBJECT), h->obj_type, h->obj_id};
    int rc = dev->execute_async(
        d, [dev, ctx_id, q, wr_id, outlen, inbuf = std::move(inbuf)](bool aborted,
                                                                    const FaultDecision& dec) {
            // struct mlx5dv_devx_async_cmd_hdr: wr_id, then the PRM output.
            std::vector<std::byte> rec(sizeof(uint64_t) + outlen);
            std::memcpy(rec.data(), &wr_id, sizeof wr_id);
            auto out = std::span(rec).subspan(sizeof(uint64_t));
            CmdOutcome r = run_mailbox(*dev, ctx_id, inbuf, out, aborted, dec, nullptr);
            q->push(std::move(rec));
            return r;
        });
    return rc ? fail_errno(rc) : 0;
}

int get_async_cmd_comp(mlx5dv_devx_cmd_comp* cc, mlx5dv_devx_async_cmd_hdr* resp, size_t len) {
    auto* h = handle_cast<CmdCompHandle>(cc, kCompMagic);
    if (!h || !resp) return fail_errno(EINVAL);
    ssize_t n = h->impl->q->pop(resp, len);
    if (n < 0) return fail_errno(int(-n));
    if (size_t(n) < sizeof(*resp)) return fail_errno(EINVAL);
    return 0;
}

mlx5dv_devx_event_channel* create_event_channel(ibv_context* c,
                                                mlx5dv_devx_create_event_channel_flags flags) {
    ContextImpl* ctx = ctx_of(c);
    if (!ctx) return nullptr;
    if (flags & ~MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA) {
        errno = EINVAL;
        return nullptr;
    }
    auto q = FdQueue::create();
    if (!q) {
        errno = q.error().sys_errno;
        return nullptr;
    }
    auto* h = new ChannelHandle{};
    h->pub.fd = (*q)->fd();
    h->magic = kChanMagic;
    h->impl = new QueueImpl{std::move(*q), ctx->dev};
    h->omit_data = flags & MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA;
    return &h->pub;
}

void destroy_event_channel(mlx5dv_devx_event_channel* ch) {
    auto* h = handle_cast<ChannelHandle>(ch, kChanMagic);
    if (!h) return;
    h->impl->dev->state().events.drop_channel(h->impl->q.get());
    h->impl->q->close();
    h->magic = 0;
    delete h->impl;
    delete h;
}

// Supported: completion events (0) of a CQ (Linux devx_cq_comp), and
// OBJECT_CHANGE of other objects. Unaffiliated events (obj NULL) and other
// numbers fail with EINVAL, as the kernel's is_valid_events() for a device
// whose event caps do not list them.
int subscribe_devx_event(mlx5dv_devx_event_channel* ch, mlx5dv_devx_obj* o, uint16_t events_sz,
                         uint16_t events_num[], uint64_t cookie) {
    auto* h = handle_cast<ChannelHandle>(ch, kChanMagic);
    auto* obj = handle_cast<ObjHandle>(o, kObjMagic);
    size_t n = events_sz / sizeof(uint16_t);
    if (!h || !obj || !events_num || n == 0 || n > kMaxEvents) return fail_errno(EINVAL);
    if (ctx_closed(*obj->ctx)) return fail_errno(EBADF);
    bool cq = obj->create_opcode == uint16_t(Opcode::CREATE_CQ);
    uint16_t allowed = cq ? prm::kEventCompletion : prm::kEventObjectChange;
    for (size_t k = 0; k < n; ++k)
        if (events_num[k] != allowed) return fail_errno(EINVAL);
    uint16_t type = cq ? kCqEventObjType : obj->obj_type;
    for (size_t k = 0; k < n; ++k)
        h->impl->dev->state().events.subscribe(
            {h->impl->q, h->omit_data, type, obj->obj_id, events_num[k], cookie});
    return 0;
}

ssize_t get_event(mlx5dv_devx_event_channel* ch, mlx5dv_devx_async_event_hdr* data, size_t len) {
    auto* h = handle_cast<ChannelHandle>(ch, kChanMagic);
    if (!h || !data) {
        errno = EINVAL;
        return -1;
    }
    ssize_t n = h->impl->q->pop(data, len);
    if (n < 0) {
        errno = int(-n);
        return -1;
    }
    return n;
}

// Linux MLX5_IB_METHOD_DEVX_QUERY_EQN (mlx5_comp_eqn_get): no firmware
// command; each device has kCompVectors completion EQs.
int query_eqn(ibv_context* c, uint32_t vector, uint32_t* eqn) {
    ContextImpl* ctx = ctx_of(c);
    if (!ctx || !eqn || vector >= kCompVectors) return fail_errno(EINVAL);
    if (ctx_gone(*ctx)) return fail_errno(ENXIO);
    *eqn = kFirstCompEqn + vector;
    return 0;
}

}  // namespace mlx5async::emu::detail

namespace mlx5async::emu {

const devx::DevxApi& api() {
    using namespace detail;
    static const devx::DevxApi table{
        "mlx5emu",
        get_device_list, free_device_list, get_device_name, is_supported, open_device, close_device,
        alloc_pd, dealloc_pd, init_obj,
        general_cmd, obj_create, obj_query, obj_modify, obj_destroy,
        umem_reg, umem_dereg,
        alloc_uar, free_uar, alloc_var, free_var,
        create_cmd_comp, destroy_cmd_comp, obj_query_async, get_async_cmd_comp,
        create_event_channel, destroy_event_channel, subscribe_devx_event, get_event,
        query_eqn,
    };
    return table;
}

}  // namespace mlx5async::emu
