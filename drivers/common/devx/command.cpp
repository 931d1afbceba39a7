#include "command.hpp"

#include <cassert>
#include <cerrno>

#include "common/prm/general_obj.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"

namespace mlx5async::devx {
namespace {

uint16_t op(prm::Opcode o) { return static_cast<uint16_t>(o); }

uint16_t opcode_of(const std::vector<std::byte>& in) {
    auto r = prm::read_opcode(in);
    return r ? *r : 0;
}

CmdVerb verb_of(CmdKind kind) noexcept {
    switch (kind) {
    case CmdKind::Create:
    case CmdKind::RegUmem: return CmdVerb::Create;
    case CmdKind::Modify: return CmdVerb::Modify;
    case CmdKind::Query: return CmdVerb::Query;
    case CmdKind::Destroy: return CmdVerb::Destroy;
    case CmdKind::General: return CmdVerb::General;
    }
    return CmdVerb::General;
}

// A general object's obj_type from its command's header (0 for other commands).
uint16_t obj_type_of(uint16_t opcode, const std::vector<std::byte>& in) {
    if (!prm::is_throttled_opcode(opcode)) return 0;
    auto h = prm::read_general_obj_in(in);
    return h ? h->obj_type : 0;
}

Command on_obj(CmdKind kind, const DevxObj& obj, std::vector<std::byte> in, size_t outlen,
               int queue) {
    Command c;
    c.kind = kind;
    c.opcode = opcode_of(in);
    c.type = classify_command(verb_of(kind), c.opcode, obj_type_of(c.opcode, in));
    c.obj_id = obj.obj_id();
    c.queue = queue;
    c.obj = obj.get();
    c.api = obj.api();
    c.in = std::move(in);
    c.outlen = outlen;
    return c;
}

Command on_ctx(CmdKind kind, const Context& ctx, std::vector<std::byte> in, size_t outlen,
               int queue) {
    Command c;
    c.kind = kind;
    c.opcode = opcode_of(in);
    c.type = classify_command(verb_of(kind), c.opcode, obj_type_of(c.opcode, in));
    c.queue = queue;
    c.ctx = ctx.get();
    c.api = ctx.api();
    c.in = std::move(in);
    c.outlen = outlen;
    return c;
}

}  // namespace

Result<Command> Command::create_virtq(const Context& ctx, const prm::VirtqAttr& attr, int queue) {
    std::vector<std::byte> in(prm::kVirtqCmdInBytes);
    MLX5A_CHECK(prm::encode_create_virtq(attr, in));
    Command c = on_ctx(CmdKind::Create, ctx, std::move(in), prm::kGeneralObjOutHdrBytes, queue);
    return c;
}

Result<Command> Command::modify_virtq(const DevxObj& obj, const prm::VirtqAttr& attr, int queue) {
    std::vector<std::byte> in(prm::kVirtqCmdInBytes);
    MLX5A_CHECK(prm::encode_modify_virtq(obj.obj_id(), attr, in));
    return on_obj(CmdKind::Modify, obj, std::move(in), prm::kGeneralObjOutHdrBytes, queue);
}

Command Command::modify_virtq_state(const DevxObj& obj, prm::VirtqState state, int queue) {
    prm::VirtqAttr a;
    a.modify_field_select = prm::modify_bits::STATE;
    a.state = state;
    std::vector<std::byte> in(prm::kVirtqCmdInBytes);
    [[maybe_unused]] auto r = prm::encode_modify_virtq(obj.obj_id(), a, in);
    assert(r);  // a state-only modify always fits its fields
    return on_obj(CmdKind::Modify, obj, std::move(in), prm::kGeneralObjOutHdrBytes, queue);
}

Command Command::query_virtq(const DevxObj& obj, int queue) {
    std::vector<std::byte> in(prm::kGeneralObjInHdrBytes);
    prm::encode_query_virtq(obj.obj_id(), in);
    Command c = on_obj(CmdKind::Query, obj, std::move(in), prm::kVirtqQueryOutBytes, queue);
    c.decode = Decode::Virtq;
    return c;
}

Command Command::create_obj(const Context& ctx, std::vector<std::byte> in, size_t outlen,
                            int queue) {
    return on_ctx(CmdKind::Create, ctx, std::move(in), outlen, queue);
}

Command Command::modify_obj(const DevxObj& obj, std::vector<std::byte> in, size_t outlen,
                            int queue) {
    return on_obj(CmdKind::Modify, obj, std::move(in), outlen, queue);
}

Command Command::query_obj(const DevxObj& obj, std::vector<std::byte> in, size_t outlen,
                           int queue) {
    return on_obj(CmdKind::Query, obj, std::move(in), outlen, queue);
}

Command Command::destroy(DevxObj&& obj, int queue) {
    Command c;
    c.kind = CmdKind::Destroy;
    c.opcode = op(prm::Opcode::DESTROY_GENERAL_OBJECT);
    c.type = classify_command(CmdVerb::Destroy, c.opcode, obj.obj_type());
    c.obj_id = obj.obj_id();
    c.queue = queue;
    c.obj = obj.get();
    c.api = obj.api();
    c.owned = std::move(obj);
    return c;
}

Command Command::general(const Context& ctx, std::vector<std::byte> in, size_t outlen,
                         int queue) {
    return on_ctx(CmdKind::General, ctx, std::move(in), outlen, queue);
}

Command Command::reg_umem(const Context& ctx, void* addr, size_t size, uint32_t access, int queue) {
    Command c = on_ctx(CmdKind::RegUmem, ctx, {}, 0, queue);
    c.opcode = op(prm::Opcode::CREATE_UMEM);
    c.type = classify_command(CmdVerb::Create, c.opcode, 0);
    c.umem_addr = addr;
    c.umem_size = size;
    c.umem_access = access;
    return c;
}

size_t Batch::add(Entry e) {
    entries_.push_back(std::move(e));
    return entries_.size() - 1;
}

size_t Batch::add(Command c) {
    Entry e;
    e.queue = c.queue;
    e.steps.push_back(std::move(c));
    return add(std::move(e));
}

size_t Batch::add_suspend(const DevxObj& vq, int queue) {
    Entry e;
    e.queue = queue;
    e.steps.reserve(2);
    e.steps.push_back(Command::modify_virtq_state(vq, prm::VirtqState::SUSPEND, queue));
    e.steps.push_back(Command::query_virtq(vq, queue));
    return add(std::move(e));
}

size_t Batch::add_resume(const DevxObj& vq, int queue) {
    return add(Command::modify_virtq_state(vq, prm::VirtqState::RDY, queue));
}

void Command::set_id(const prm::Field& f, uint32_t id) {
    assert(f.end() <= in.size() * 8);
    prm::set_bits(in, f.bit_offset, f.bit_width, id);
}

Command Command::modify_made(const Context& ctx, uint16_t step, std::vector<std::byte> in,
                             size_t outlen, int queue) {
    Command c = on_ctx(CmdKind::Modify, ctx, std::move(in), outlen, queue);
    c.ctx = nullptr;
    c.obj_from = step;
    return c;
}

Made StepResult::made() const noexcept {
    if (!ok()) return {};
    if (kind == CmdKind::RegUmem) return {obj_id, nullptr};
    if (kind == CmdKind::Create) return {obj_id, obj.get()};
    return {};
}

Error StepResult::error() const {
    Error e;
    e.opcode = opcode;
    e.obj_id = obj_id;
    e.queue = queue;
    e.sys_errno = sys_errno;
    switch (state) {
    case StepState::Done: e.code = Errc::Ok; break;
    case StepState::Failed:
        if (status != 0) {
            e = prm::firmware_error(status, syndrome, opcode, obj_id, queue);
            if (sys_errno) e.sys_errno = sys_errno;
        } else {
            e.code = Errc::System;
        }
        break;
    case StepState::TimedOut:
        e.code = Errc::Timeout;
        e.what = never_issued ? "not issued: no command slot came free before the deadline"
                              : "no answer before the deadline";
        break;
    case StepState::Cancelled: e.code = Errc::Cancelled; break;
    case StepState::Queued:
    case StepState::Issued: e.code = Errc::State; break;
    }
    return e;
}

bool EntryResult::ok() const noexcept {
    for (const auto& s : steps)
        if (!s.ok()) return false;
    return true;
}

void record_step(CommandStats& stats, const StepResult& r) {
    LatencyHistogram& h = stats.latency[r.type.index()];
    switch (r.state) {
    case StepState::Done: h.record(uint64_t(r.latency.count())); break;
    case StepState::Failed:
        // A step refused before it reached the device (a malformed entry) has no latency.
        if (r.issued_at != std::chrono::steady_clock::time_point{}) h.record(uint64_t(r.latency.count()));
        stats.count_error(r.type, r.status, r.status ? r.syndrome : uint32_t(r.sys_errno), 1);
        break;
    case StepState::TimedOut:
        if (!r.never_issued) ++h.timed_out;
        break;
    default: break;
    }
}

}  // namespace mlx5async::devx
