#include "dependencies.hpp"

#include <algorithm>
#include <cerrno>
#include <string>

#include "common/base/log_sink.hpp"
#include "engine_impl.hpp"

namespace mlx5async::devx {
namespace {

// What entry e waits for: `after` and the entries its ids_from name, each once.
std::vector<uint32_t> dependencies_of(const Entry& en) {
    std::vector<uint32_t> d = en.after;
    for (const Command& c : en.steps)
        for (const Command::IdFrom& f : c.ids_from)
            if (f.entry >= 0) d.push_back(uint32_t(f.entry));
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
    return d;
}

// A dependency the engine cannot honour: itself or a later entry (it would
// never run), or a step that entry does not have.
bool bad_dependency(const Batch& b, uint32_t e, uint32_t d) {
    if (d >= e) return true;
    for (const Command& c : b.entries()[e].steps)
        for (const Command::IdFrom& f : c.ids_from)
            if (f.entry == int32_t(d) && f.step >= b.entries()[d].steps.size()) return true;
    return false;
}

}  // namespace

Dependencies::Dependencies(Batch& b, BatchResult& r)
    : b_(b), r_(r), waiting_(b.size(), 0), dependents_(b.size()), settled_(b.size(), false) {
    std::vector<uint32_t> bad;
    for (uint32_t e = 0; e < b.size(); ++e) {
        for (uint32_t d : dependencies_of(b.entries()[e])) {
            if (bad_dependency(b, e, d)) {
                logf(LogLevel::Error, "devx: batch entry %u waits for entry %u, which is not an earlier "
                     "entry of its batch (or lacks the step it names): not issued", e, d);
                bad.push_back(e);
                break;
            }
            ++waiting_[e];
            dependents_[d].push_back(e);
        }
    }
    std::vector<uint32_t> released, cancelled;
    for (uint32_t e : bad) {
        if (settled_[e]) continue;
        auto& results = r.entries[e].steps;
        if (!results.empty()) {
            close_chain(b.entries()[e].steps, results, 0, StepState::Failed);
            results[0].sys_errno = EINVAL;
            results[0].never_issued = true;
        }
        end_unrun(e, false, released, cancelled);
    }
    // An entry without steps has nothing to fail: it ends at once.
    for (uint32_t e = 0; e < b.size(); ++e)
        if (b.entries()[e].steps.empty() && !settled_[e] && !waits(e)) end_unrun(e, true, released, cancelled);
}

void Dependencies::end_unrun(uint32_t e, bool ok, std::vector<uint32_t>& released,
                             std::vector<uint32_t>& cancelled) {
    settled_[e] = true;
    ended(e, ok, released, cancelled);
}

void Dependencies::ended(uint32_t e, bool ok, std::vector<uint32_t>& released,
                         std::vector<uint32_t>& cancelled) {
    for (uint32_t d : dependents_[e]) {
        if (settled_[d]) continue;
        if (!ok) {
            settle(d, released, cancelled);
            continue;
        }
        if (--waiting_[d] > 0) continue;
        auto& steps = b_.entries()[d].steps;
        if (steps.empty()) {  // nothing to run: it ends as it is released
            end_unrun(d, true, released, cancelled);
            continue;
        }
        for (Command& c : steps)
            c.bind_entries([&](size_t entry, size_t step) { return r_.entries[entry].steps[step].made(); });
        released.push_back(d);
    }
}

void Dependencies::settle(uint32_t d, std::vector<uint32_t>& released, std::vector<uint32_t>& cancelled) {
    cancel_unissued(b_.entries()[d].steps, r_.entries[d].steps, 0);
    cancelled.push_back(d);
    end_unrun(d, false, released, cancelled);  // a failure releases nobody
}

}  // namespace mlx5async::devx
