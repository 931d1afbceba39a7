#include "faults.hpp"

#include <algorithm>

namespace mlx5async::emu {
namespace {

bool matches(const FaultMatch& m, uint16_t opcode, uint16_t obj_type, uint32_t obj_id) {
    return (!m.opcode || *m.opcode == opcode) && (!m.obj_type || *m.obj_type == obj_type) &&
           (!m.obj_id || *m.obj_id == obj_id);
}

void apply(const FaultRule& r, FaultDecision& d) {
    switch (r.action) {
    case FaultAction::Fail:
        if (!d.fail) {
            d.fail = true;
            d.status = r.status;
            d.syndrome = r.syndrome;
        }
        break;
    case FaultAction::Hang: d.hang = true; break;
    case FaultAction::Busy: d.busy = true; break;
    case FaultAction::Delay: d.extra_ns += r.extra_ns; break;
    case FaultAction::AnswerLate: d.answer_late_ns += r.extra_ns; break;
    }
    ++d.rules_hit;
}

}  // namespace

uint32_t FaultPolicy::add(const FaultRule& r) {
    std::lock_guard lk(mu_);
    rules_.push_back({next_id_, r, 0});
    return next_id_++;
}

void FaultPolicy::remove(uint32_t id) {
    std::lock_guard lk(mu_);
    std::erase_if(rules_, [id](const Active& a) { return a.id == id; });
}

void FaultPolicy::clear() {
    std::lock_guard lk(mu_);
    rules_.clear();
}

FaultDecision FaultPolicy::decide(uint16_t opcode, uint16_t obj_type, uint32_t obj_id) {
    FaultDecision d;
    std::lock_guard lk(mu_);
    for (auto& a : rules_) {
        if (!matches(a.rule.match, opcode, obj_type, obj_id)) continue;
        ++a.seen;
        if (a.rule.match.nth == 0 || a.rule.match.nth == a.seen) apply(a.rule, d);
    }
    return d;
}

}  // namespace mlx5async::emu
