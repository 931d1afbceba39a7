#include "job.hpp"

#include <cerrno>

#include "common/base/log_sink.hpp"
#include "common/prm/general_obj.hpp"
#include "common/prm/status.hpp"

namespace mlx5async::devx {
namespace {

int pos_errno(int r) noexcept { return r < 0 ? -r : r; }

// Every PRM output starts with status(8) reserved(24) syndrome(32).
bool has_status(const Command& c, const Outcome& o) noexcept {
    return c.kind != CmdKind::Destroy && c.kind != CmdKind::RegUmem && o.out.size() >= 8;
}

}  // namespace

void execute_blocking(Command& c, Outcome& o) noexcept {
    const DevxApi& api = *c.api;
    o.ran = true;
    o.out.assign(c.outlen, std::byte{0});
    o.issued = Clock::now();
    errno = 0;
    switch (c.kind) {
    case CmdKind::Create:
        o.created = api.obj_create(c.ctx, c.in.data(), c.in.size(), o.out.data(), o.out.size());
        o.ret = o.created ? 0 : (errno ? errno : EIO);
        break;
    case CmdKind::Modify:
        o.ret = pos_errno(api.obj_modify(c.obj, c.in.data(), c.in.size(), o.out.data(), o.out.size()));
        break;
    case CmdKind::Query:
        o.ret = pos_errno(api.obj_query(c.obj, c.in.data(), c.in.size(), o.out.data(), o.out.size()));
        break;
    case CmdKind::Destroy:
        o.ret = pos_errno(api.obj_destroy(c.obj));
        break;
    case CmdKind::General:
        o.ret = pos_errno(api.general_cmd(c.ctx, c.in.data(), c.in.size(), o.out.data(), o.out.size()));
        break;
    case CmdKind::RegUmem:
        o.umem = api.umem_reg(c.ctx, c.umem_addr, c.umem_size, c.umem_access);
        o.ret = o.umem ? 0 : (errno ? errno : EIO);
        break;
    }
    o.completed = Clock::now();
}

uint8_t outcome_status(const Command& c, const Outcome& o) noexcept {
    return has_status(c, o) ? static_cast<uint8_t>(o.out[0]) : 0;
}

bool outcome_busy_query(const Command& c, const Outcome& o) noexcept {
    return c.kind == CmdKind::Query && (o.ret == EBUSY || o.ret == EAGAIN) &&
           outcome_status(c, o) == 0;
}

bool outcome_ok(const Command& c, const Outcome& o) noexcept {
    if (has_status(c, o) && o.out[0] != std::byte{0}) return false;
    return o.ret == 0;
}

Made outcome_made(const Command& c, const Outcome& o) noexcept {
    if (!outcome_ok(c, o)) return {};
    if (c.kind == CmdKind::RegUmem) return {o.umem ? o.umem->umem_id : 0, nullptr};
    if (c.kind != CmdKind::Create) return {};
    auto hdr = prm::read_general_obj_out(o.out);  // obj_id, cqn, qpn, mkey_index: dword 2
    return {hdr ? hdr->obj_id : 0, o.created};
}

StepResult unfinished_step(Command&& c, StepState state) {
    StepResult r;
    r.state = state;
    r.kind = c.kind;
    r.opcode = c.opcode;
    r.type = c.type;
    r.obj_id = c.obj_id;
    r.queue = c.queue;
    if (c.kind == CmdKind::Destroy) r.obj = std::move(c.owned);
    return r;
}

StepResult finish_step(Command&& c, Outcome&& o) {
    StepResult r = unfinished_step(std::move(c), StepState::Done);
    r.latency = o.completed - o.issued;
    r.issued_at = o.issued;
    r.sys_errno = o.ret;
    if (has_status(c, o)) {
        if (auto st = prm::check_out(o.out, c.opcode, c.obj_id, c.queue); !st) {
            r.status = st.error().fw_status;
            r.syndrome = st.error().syndrome;
        }
    }
    r.status_name = prm::status_name(r.status);
    bool ok = r.status == 0 && o.ret == 0;
    if (ok && c.kind == CmdKind::Create) {
        auto hdr = prm::read_general_obj_out(o.out);
        auto in_hdr = prm::read_general_obj_in(c.in);
        r.obj = DevxObj(c.api, o.created, hdr ? hdr->obj_id : 0, in_hdr ? in_hdr->obj_type : 0);
        r.obj_id = r.obj.obj_id();
        o.created = nullptr;
    }
    if (ok && c.kind == CmdKind::Destroy) (void)r.obj.release();  // gone in the device
    if (ok && c.kind == CmdKind::RegUmem) {
        r.umem = Umem::adopt(c.api, o.umem, c.umem_addr, c.umem_size);
        r.obj_id = o.umem->umem_id;
        o.umem = nullptr;
    }
    if (ok && c.decode == Decode::Virtq) {
        auto a = prm::decode_query_virtq_out(o.out, c.obj_id, c.queue);
        if (a) {
            r.virtq = std::make_unique<prm::VirtqAttr>(*a);
        } else {
            ok = false;
            r.sys_errno = a.error().sys_errno ? a.error().sys_errno : EPROTO;
        }
    }
    if (!ok) {
        r.state = StepState::Failed;
        discard_outcome(c, o);
    }
    r.out = std::move(o.out);
    return r;
}

void discard_outcome(const Command& c, Outcome& o) noexcept {
    if (o.umem) {  // registered after its batch gave up: released, not leaked
        if (int e = pos_errno(c.api->umem_dereg(o.umem)); e != 0)
            logf(LogLevel::Error, "devx: deregistering a late umem failed: errno %d", e);
        o.umem = nullptr;
    }
    if (!o.created) return;
    // A create that completed after its batch gave up (or reported a failure
    // status with an object anyway): destroy it rather than leak it.
    if (int e = pos_errno(c.api->obj_destroy(o.created)); e != 0)
        logf(LogLevel::Error, "devx: destroying a late-created object (queue %d) failed: errno %d",
             c.queue, e);
    o.created = nullptr;
}

}  // namespace mlx5async::devx
