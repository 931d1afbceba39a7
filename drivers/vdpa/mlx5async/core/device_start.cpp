// dev_conf's start, tried again after a failure the firmware may not
// repeat; and its work before its rings start: a changed memory table and the
// virtq objects the started rings lack, in one batch. A virtq object needs
// no guest memory until it starts (its CREATE names umems, counters and an
// event QP; the MODIFY to RDY names the mkey), so the two run side by side
// where the firmware allows: the virtqs' umems (their event QPs' among
// them), counters and event QPs (a chain each: CQ, QPs, their connection)
// beside the chunks' umem registrations and direct mkeys (chains on half
// the command slots); each virtq CREATE as soon as its own ring's objects
// exist, the indirect mkey as soon as every chunk's does
// (devx::Entry::after), not in waves that each wait for the slowest entry
// of the one before.
// The rings then start in one batch (resume_rings), each naming the mkey.
#include <cerrno>
#include <optional>

#include "common/base/log_sink.hpp"
#include "common/prm/status.hpp"
#include "device_impl.hpp"

namespace mlx5async::core {

namespace {

// A start's failure that another attempt may not meet: the firmware
// refused a command, did not answer in time or was busy, or left a
// virtq's state unknown. Through the kernel (umem registration, a blocking
// command) a status arrives as mlx5_core maps it: EIO, ENOMEM, EAGAIN,
// EBUSY; its command timeout as ETIMEDOUT. EINVAL (a refused parameter), a
// refused ring or table fail every attempt.
bool worth_retrying(const Error& e) {
    if (e.code == Errc::System)
        return e.sys_errno == EIO || e.sys_errno == ENOMEM || e.sys_errno == EBUSY ||
               e.sys_errno == EAGAIN || e.sys_errno == ETIMEDOUT;
    return e.code == Errc::Firmware || e.code == Errc::Timeout || e.code == Errc::Busy ||
           e.code == Errc::State;
}

}  // namespace

// dev_conf's start, tried again after a failure the firmware may not
// repeat: nothing tells vhost or the frontend that a start failed once
// dev_conf returned, and a migration's source has already handed the VM
// over. A virtq this start left unsure has this start's own MODIFY or
// CREATE unanswered: it is learned before the next attempt without
// waiting for it (a late MODIFY to RDY meets a RDY ring, which the device
// refuses; a late CREATE's object is destroyed). One left unsure before
// the start stays as configure() treats it.
Result<void> Device::Impl::start(const GuestConfig& g, uint64_t seq) {
    std::vector<bool> unsure_before(vqs.size());
    for (const Vq& q : vqs) unsure_before[q.index] = q.unsure();
    Result<void> r = configure(g, seq);
    const uint32_t attempts = cfg.start_attempts;
    for (uint32_t attempt = 2; !r && attempt <= attempts; attempt++) {
        if (cmds->abandoned() || !worth_retrying(r.error())) break;
        logf(LogLevel::Warning, "%s: start attempt %u of %u failed (%s): trying again", name.c_str(),
             attempt - 1, attempts, prm::describe(r.error()).c_str());
        std::vector<uint16_t> own;
        for (const Vq& q : vqs)
            if (q.unsure() && !unsure_before[q.index]) own.push_back(q.index);
        learn(own);
        r = configure(g, seq);
        if (r) logf(LogLevel::Warning, "%s: started on attempt %u", name.c_str(), attempt);
    }
    return r;
}

Result<void> Device::Impl::prepare_start(const std::vector<MemRegion>& table, const RingGroups& groups,
                                         bool& memory_ok, uint64_t seq) {
    auto want = sorted_regions(table);
    memory_ok = same_table(mem->current().regions, want);  // unchanged: e.g. a migration resume
    std::optional<MemoryBuild> m;
    if (!memory_ok) {
        MLX5A_CHECK(validate_table(want));  // nothing made for a refused table
        if (want.empty()) {
            mem->commit({});
            memory_ok = true;
        } else {
            auto p = mem->plan(std::move(want), cmds->strategy() == Strategy::Sequential);
            MLX5A_CHECK(p);
            m = std::move(*p);
        }
    }
    if (memory_ok) ledger.mark_start(LedgerPhase::MemoryRegistered, seq);
    // A group whose old objects could not be destroyed is not created (the
    // error is returned); the memory goes on.
    Result<void> obj_err = {};
    std::vector<ObjectBuild> objs;
    for (const auto& [size, rings] : groups) {
        auto o = plan_objects(rings, size);
        if (!o) obj_err = first_error(obj_err, unexpected(o.error()));
        else if (!o->rings.empty()) objs.push_back(std::move(*o));
    }
    Result<void> mem_err = {};
    devx::BatchResult res;
    obj_err = first_error(obj_err, make_objects(objs, m ? &*m : nullptr, mem_err, res));
    if (m && mem_err) {
        auto reg = mem->take_indirect(*m, res);
        if (reg) {
            mem->commit(std::move(*reg));
            memory_ok = true;
            ledger.mark_start(LedgerPhase::MemoryRegistered, seq);
        } else {
            mem_err = unexpected(reg.error());
        }
    }
    // What a failed table made goes once no command names it (nothing
    // leaks); the virtqs made stay, in INIT, for the next start.
    if (m && !mem_err) release_failed(std::move(m->reg));
    return first_error(mem_err, obj_err);
}

// The virtqs' small umems go first, the event QPs' among them: the
// firmware writes translations in the order it takes the commands, so
// behind the chunks' they would wait for all of them. The chunks' chains
// follow, on half the command slots, ahead of the event QPs' other
// commands (each chain waits for its ring's umems: a worker each, with
// the chunks behind them). The CREATEs and the indirect mkey come last:
// each waits for what it names. The indirect mkey stays in `res` for the
// caller (GuestMemory::take_indirect).
Result<void> Device::Impl::make_objects(std::vector<ObjectBuild>& objs, MemoryBuild* m,
                                        Result<void>& mem_err, devx::BatchResult& res) {
    const BatchKind kind = m ? BatchKind::Memory : BatchKind::Setup;
    devx::Batch b;
    for (ObjectBuild& o : objs) {
        auto eqps = irqs.plan_event_qps(o.rings, o.size);
        if (!eqps) return mem_err = unexpected(eqps.error());  // nothing issued
        o.eqps = std::move(*eqps);
        if (auto r = add_virtq_resources(o, b); !r) return mem_err = r;  // nothing issued
    }
    if (m) mem_err = mem->add_chunks(*m, b);
    if (!mem_err) return mem_err;  // nothing issued
    for (ObjectBuild& o : objs)
        if (auto r = irqs.add_event_qps(o.eqps, ctx, transport.pdn(), b); !r) return mem_err = r;  // nothing issued
    for (ObjectBuild& o : objs)
        if (auto r = add_virtq_creates(o, b); !r) return mem_err = r;  // nothing issued
    if (m) mem_err = mem->add_indirect(*m, b);
    if (!mem_err || b.empty()) return mem_err;  // nothing issued
    res = cmds->run(std::move(b), kind, nullptr);
    if (m) mem_err = mem->take_chunks(*m, res);
    Result<void> obj_err = {};
    for (ObjectBuild& o : objs) {
        obj_err = first_error(obj_err, take_virtq_resources(o, res));
        obj_err = first_error(obj_err, take_virtq_creates(o, res));
    }
    return obj_err;
}

}  // namespace mlx5async::core
