// DevxApi entries: DevX commands (general_cmd, obj_*) and umem registration.
// Checks the Linux kernel makes before a command reaches the firmware
// (drivers/infiniband/hw/mlx5/devx.c) fail with an errno here; everything
// else goes to the emulated firmware and fails with EREMOTEIO + PRM status.
#include <cerrno>
#include <cstring>
#include <vector>

#include "api_internal.hpp"
#include "common/prm/field.hpp"
#include "common/prm/general_obj.hpp"
#include "common/prm/event_qp.hpp"
#include "common/prm/mkey.hpp"
#include "common/prm/transport.hpp"
#include "common/prm/mkey_layout.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/sq.hpp"
#include "common/prm/status.hpp"
#include "dispatch.hpp"

namespace mlx5async::emu::detail {
namespace {

using prm::Opcode;

constexpr size_t kHdr = 16;  // general_obj_in/out_cmd_hdr: uverbs minimum sizes

std::span<const std::byte> bytes(const void* p, size_t n) {
    return {static_cast<const std::byte*>(p), n};
}
std::span<std::byte> bytes(void* p, size_t n) { return {static_cast<std::byte*>(p), n}; }

uint16_t opcode_of(std::span<const std::byte> in) { return uint16_t(prm::get_bits(in, 0, 16)); }
uint16_t obj_type_of(std::span<const std::byte> in) { return uint16_t(prm::get_bits(in, 48, 16)); }
uint32_t obj_id_of(std::span<const std::byte> in) { return uint32_t(prm::get_bits(in, 64, 32)); }
bool tunnel_set(std::span<const std::byte> in) { return prm::get_bits(in, 32, 16) != 0; }

bool is_qp_transition(uint16_t op) {
    return op >= uint16_t(Opcode::RST2INIT_QP) && op <= uint16_t(Opcode::RTR2RTS_QP);
}

bool is_object_opcode(uint16_t op) {
    return (op >= uint16_t(Opcode::CREATE_GENERAL_OBJECT) &&
            op <= uint16_t(Opcode::DESTROY_GENERAL_OBJECT)) ||
           op == uint16_t(Opcode::CREATE_UMEM) || op == uint16_t(Opcode::DESTROY_UMEM) ||
           (op >= uint16_t(Opcode::CREATE_CQ) && op <= uint16_t(Opcode::DESTROY_CQ)) ||
           op == uint16_t(Opcode::CREATE_QP) || op == uint16_t(Opcode::DESTROY_QP) ||
           is_qp_transition(op) ||
           (op >= uint16_t(Opcode::CREATE_SQ) && op <= uint16_t(Opcode::DESTROY_SQ));
}

// devx_is_obj_create_cmd (subset the emulator knows of).
// devx_handle_mkey_create: the input must hold the mkc; a non-indirect mkey
// (not KLM/KSM) always gets mkey_umem_valid set by the kernel. Returns false
// for a short input; `fixed` holds the rewritten input when one was needed.
bool kernel_mkey_fixup(std::span<const std::byte>& in, std::vector<std::byte>& fixed) {
    namespace L = prm::layout::create_mkey_in;
    namespace M = prm::layout::mkc;
    if (in.size() * 8 < L::kMkc + prm::layout::kMkc.bits) return false;
    auto mode = prm::MkeyAccessMode(prm::get_bits(in, L::in_mkc(M::access_mode_1_0).bit_offset, 2) |
                                    prm::get_bits(in, L::in_mkc(M::access_mode_4_2).bit_offset, 3) << 2);
    if (mode == prm::MkeyAccessMode::KLM || mode == prm::MkeyAccessMode::KSM) return true;
    fixed.assign(in.begin(), in.end());
    prm::set<L::mkey_umem_valid>(fixed, 1);
    in = fixed;
    return true;
}

// mlx5_create_cq (devx_obj_create for CREATE_CQ) looks the EQ up first
// (mlx5_eqn2comp_eq): a c_eqn that is no completion EQ is ENOENT before
// the firmware sees the command.
int kernel_cq_eqn_check(std::span<const std::byte> in) {
    if (opcode_of(in) != uint16_t(Opcode::CREATE_CQ)) return 0;
    auto a = prm::decode_create_cq_in(in);
    if (!a) return 0;  // short or malformed: the firmware answers
    bool comp = a->c_eqn >= kFirstCompEqn && a->c_eqn < kFirstCompEqn + kCompVectors;
    return comp ? 0 : ENOENT;
}

// The KLM entries the firmware writes for an indirect mkey (a direct one
// maps through its umem's MTT, written at CREATE_UMEM).
uint64_t translation_entries(std::span<const std::byte> in) {
    if (opcode_of(in) != uint16_t(Opcode::CREATE_MKEY)) return 0;
    auto a = prm::decode_create_mkey_in(in);
    return a ? a->klm.size() : 0;
}

bool is_create_opcode(uint16_t op) {
    switch (Opcode(op)) {
    case Opcode::CREATE_GENERAL_OBJECT:
    case Opcode::CREATE_MKEY:
    case Opcode::CREATE_TIS:
    case Opcode::CREATE_CQ:
    case Opcode::CREATE_QP:
    case Opcode::CREATE_SQ:
    case Opcode::ALLOC_TRANSPORT_DOMAIN: return true;
    default: return false;
    }
}

// devx_is_obj_modify/query_cmd + devx_is_valid_obj_id: the command is one
// the kernel lets through for this handle, and names its object. A QP is
// modified with its RC transitions (qpn at 0x48, 24 bits), an SQ with
// MODIFY_SQ (sqn at 0x48); CQ/QP/SQ queries are not emulated.
bool kernel_accepts(const ObjHandle& h, Opcode expect, std::span<const std::byte> i) {
    uint16_t op = opcode_of(i);
    if (h.create_opcode == uint16_t(Opcode::CREATE_SQ))
        return expect == Opcode::MODIFY_GENERAL_OBJECT && op == uint16_t(Opcode::MODIFY_SQ) &&
               prm::get_bits(i, 0x48, 24) == h.obj_id;
    bool qp = h.create_opcode == uint16_t(Opcode::CREATE_QP);
    if (qp || h.create_opcode == uint16_t(Opcode::CREATE_CQ))
        return qp && expect == Opcode::MODIFY_GENERAL_OBJECT && is_qp_transition(op) &&
               prm::get_bits(i, 0x48, 24) == h.obj_id;
    return op == uint16_t(expect) && obj_type_of(i) == h.obj_type && obj_id_of(i) == h.obj_id;
}

// Blocking mailbox command on an object handle (modify/query).
int obj_cmd(mlx5dv_devx_obj* o, Opcode expect, const void* in, size_t inlen, void* out,
            size_t outlen) {
    auto* h = handle_cast<ObjHandle>(o, kObjMagic);
    if (!h || !in || !out || inlen < kHdr || outlen < kHdr) return fail_errno(EINVAL);
    if (ctx_closed(*h->ctx)) return fail_errno(EBADF);
    auto i = bytes(in, inlen);
    if (!kernel_accepts(*h, expect, i) || tunnel_set(i)) return fail_errno(EINVAL);
    auto ob = bytes(out, outlen);
    std::memset(out, 0, outlen);
    if (!h->hold_shared()) return fail_errno(EBUSY);  // being destroyed
    CmdDesc d{opcode_of(i), h->obj_type, h->obj_id};
    CmdOutcome r = h->ctx->dev->execute(d, [&](bool aborted, const FaultDecision& dec) {
        return run_mailbox(*h->ctx->dev, h->ctx->id, i, ob, aborted, dec, nullptr);
    });
    h->release_shared();
    return r.err ? fail_errno(r.err) : 0;
}

}  // namespace

int general_cmd(ibv_context* c, const void* in, size_t inlen, void* out, size_t outlen) {
    ContextImpl* ctx = ctx_of(c);
    if (!ctx) return EINVAL;
    if (!in || !out || inlen < kHdr || outlen < kHdr) return fail_errno(EINVAL);
    auto i = bytes(in, inlen);
    if (is_object_opcode(opcode_of(i))) return fail_errno(EINVAL);  // devx_is_general_cmd
    auto ob = bytes(out, outlen);
    std::memset(out, 0, outlen);
    CmdDesc d{opcode_of(i), 0, 0};
    CmdOutcome r = ctx->dev->execute(d, [&](bool aborted, const FaultDecision& dec) {
        return run_mailbox(*ctx->dev, ctx->id, i, ob, aborted, dec, nullptr);
    });
    return r.err ? fail_errno(r.err) : 0;
}

mlx5dv_devx_obj* obj_create(ibv_context* c, const void* in, size_t inlen, void* out,
                            size_t outlen) {
    ContextImpl* ctx = ctx_of(c);
    if (!ctx) return nullptr;
    auto i = bytes(in, inlen);
    if (!in || !out || inlen < kHdr || outlen < kHdr || !is_create_opcode(opcode_of(i)) ||
        tunnel_set(i)) {
        errno = EINVAL;
        return nullptr;
    }
    std::vector<std::byte> fixed;
    if (opcode_of(i) == uint16_t(Opcode::CREATE_MKEY) && !kernel_mkey_fixup(i, fixed)) {
        errno = EINVAL;
        return nullptr;
    }
    if (int e = kernel_cq_eqn_check(i)) {
        errno = e;
        return nullptr;
    }
    auto ob = bytes(out, outlen);
    std::memset(out, 0, outlen);
    uint16_t type = opcode_of(i) == uint16_t(Opcode::CREATE_GENERAL_OBJECT) ? obj_type_of(i) : 0;
    uint32_t id = 0;
    CmdOutcome r = ctx->dev->execute({opcode_of(i), type, 0, 0, translation_entries(i)},
                                     [&](bool aborted, const FaultDecision& dec) {
                                         return run_mailbox(*ctx->dev, ctx->id, i, ob, aborted, dec, &id);
                                     });
    if (r.err) {
        errno = r.err;
        return nullptr;
    }
    auto* h = new ObjHandle{kObjMagic, ctx, type, id, opcode_of(i)};
    ctx_hold(*ctx);
    return reinterpret_cast<mlx5dv_devx_obj*>(h);
}

int obj_query(mlx5dv_devx_obj* o, const void* in, size_t inlen, void* out, size_t outlen) {
    return obj_cmd(o, Opcode::QUERY_GENERAL_OBJECT, in, inlen, out, outlen);
}

int obj_modify(mlx5dv_devx_obj* o, const void* in, size_t inlen, void* out, size_t outlen) {
    return obj_cmd(o, Opcode::MODIFY_GENERAL_OBJECT, in, inlen, out, outlen);
}

// As the kernel: the destroy command is built from the create; a firmware
// failure maps to an errno (mlx5_cmd_exec) and the handle stays valid.
int obj_destroy(mlx5dv_devx_obj* o) {
    auto* h = handle_cast<ObjHandle>(o, kObjMagic);
    if (!h) return fail_errno(EINVAL);
    if (!h->hold_exclusive()) return fail_errno(EBUSY);  // a command on it is in the kernel
    if (ctx_gone(*h->ctx)) return free_handle(h), 0;
    std::byte in[kHdr]{};
    std::byte out[kHdr]{};
    CmdDesc d{uint16_t(Opcode::DESTROY_GENERAL_OBJECT), h->obj_type, h->obj_id};
    if (h->create_opcode == uint16_t(Opcode::CREATE_MKEY)) {
        prm::encode_destroy_mkey(h->obj_id, in);
        d = {uint16_t(Opcode::DESTROY_MKEY), 0, h->obj_id};
    } else if (h->create_opcode == uint16_t(Opcode::ALLOC_TRANSPORT_DOMAIN)) {
        prm::encode_dealloc_transport_domain(h->obj_id, in);
        d = {uint16_t(Opcode::DEALLOC_TRANSPORT_DOMAIN), 0, h->obj_id};
    } else if (h->create_opcode == uint16_t(Opcode::CREATE_TIS)) {
        prm::encode_destroy_tis(h->obj_id, in);
        d = {uint16_t(Opcode::DESTROY_TIS), 0, h->obj_id};
    } else if (h->create_opcode == uint16_t(Opcode::CREATE_CQ)) {
        prm::encode_destroy_cq(h->obj_id, in);
        d = {uint16_t(Opcode::DESTROY_CQ), 0, h->obj_id};
    } else if (h->create_opcode == uint16_t(Opcode::CREATE_QP)) {
        prm::encode_destroy_qp(h->obj_id, in);
        d = {uint16_t(Opcode::DESTROY_QP), 0, h->obj_id};
    } else if (h->create_opcode == uint16_t(Opcode::CREATE_SQ)) {
        prm::encode_destroy_sq(h->obj_id, in);
        d = {uint16_t(Opcode::DESTROY_SQ), 0, h->obj_id};
    } else {
        prm::encode_destroy_general_obj(h->obj_type, h->obj_id, in);
    }
    CmdOutcome r = h->ctx->dev->execute(d, [&](bool aborted, const FaultDecision& dec) {
        return run_mailbox(*h->ctx->dev, h->ctx->id, in, out, aborted, dec, nullptr);
    });
    if (r.err && r.err != EREMOTEIO) return h->release_exclusive(), fail_errno(r.err);  // ENXIO, EBUSY
    if (r.status) return h->release_exclusive(), fail_errno(prm::status_to_errno(r.status));
    free_handle(h);
    return 0;
}

mlx5dv_devx_umem* umem_reg(ibv_context* c, void* addr, size_t size, uint32_t access) {
    ContextImpl* ctx = ctx_of(c);
    if (!ctx) return nullptr;
    if (!addr || size == 0) {  // ib_umem_get refuses
        errno = EINVAL;
        return nullptr;
    }
    // The kernel pins the pages before it issues the command (ib_umem_get):
    // the model's pinning runs from here.
    const int64_t called = ctx->dev->now_ns();
    auto pin = HostPin::pin(uint64_t(uintptr_t(addr)), size, access & IBV_ACCESS_LOCAL_WRITE,
                            uint64_t(ctx->dev->profile().shared_page_kib) * 1024);
    if (!pin) {
        errno = pin.error().sys_errno;
        return nullptr;
    }
    uint32_t id = 0;
    const uint64_t pages = pin->pages();  // pinned, and listed in the umem's MTT
    CmdOutcome r = run_resource(*ctx, {uint16_t(Opcode::CREATE_UMEM), 0, 0, pages, pages, called}, [&](DeviceState& st) {
        auto u = st.umems.insert(UmemObj{ctx->id, uint64_t(uintptr_t(addr)), size, access, 0,
                                         std::move(*pin)});
        if (!u) return Result<void>(unexpected(u.error()));
        id = *u;
        return Result<void>();
    });
    if (r.err) {
        errno = r.err;
        return nullptr;
    }
    auto* h = new UmemHandle{};
    h->pub.umem_id = id;
    h->magic = kUmemMagic;
    h->ctx = ctx;
    h->pages = pages;
    ctx_hold(*ctx);
    return &h->pub;
}

int umem_dereg(mlx5dv_devx_umem* u) {
    auto* h = handle_cast<UmemHandle>(u, kUmemMagic);
    if (!h) return fail_errno(EINVAL);
    if (ctx_gone(*h->ctx)) return free_handle(h), 0;
    uint32_t id = h->pub.umem_id;
    CmdOutcome r = run_resource(*h->ctx, {uint16_t(Opcode::DESTROY_UMEM), 0, id, h->pages, 0},
                                [&](DeviceState& st) {
        auto um = st.umems.find(id);
        if (!um) return Result<void>(unexpected(um.error()));
        if (um->refs)
            return Result<void>(fw_fail(prm::Status::RES_BUSY, syndrome::kObjectInUse, "umem in use"));
        st.umems.erase(id);
        return Result<void>();
    });
    if (r.err) return fail_errno(r.err);
    free_handle(h);
    return 0;
}

}  // namespace mlx5async::emu::detail
