// Fault injection as a policy object: rules matched against every command at
// submission, in submission order. No #ifdefs.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

namespace mlx5async::emu {

struct FaultMatch {
    std::optional<uint16_t> opcode;
    std::optional<uint16_t> obj_type;
    std::optional<uint32_t> obj_id;
    // 0: every matching command; N: only the N-th matching command (1-based)
    // counted from when the rule was added.
    uint64_t nth = 0;
};

enum class FaultAction : uint8_t {
    Fail,   // not executed; output carries status + syndrome
    Hang,   // holds its slot until the kernel's command timeout (Timing::cmd_timeout_ms:
            // ETIMEDOUT / a failed completion) or the device closes (ENXIO / flushed)
    Busy,   // the call returns EBUSY without reaching the firmware
    Delay,  // executes normally after extra_ns more
    // Executes at its time; the answer reaches its caller extra_ns later (a
    // blocking command: what it creates exists while the caller waits; an
    // async one is answered when it executes, as Delay).
    AnswerLate,
};

struct FaultRule {
    FaultMatch match;
    FaultAction action = FaultAction::Fail;
    uint8_t status = 0;
    uint32_t syndrome = 0;
    int64_t extra_ns = 0;
};

struct FaultDecision {
    bool fail = false;
    bool hang = false;
    bool busy = false;
    uint8_t status = 0;
    uint32_t syndrome = 0;
    int64_t extra_ns = 0;
    int64_t answer_late_ns = 0;
    uint32_t rules_hit = 0;
};

class FaultPolicy {
public:
    // Returns an id for remove().
    uint32_t add(const FaultRule& r);
    void remove(uint32_t id);
    void clear();
    // Called once per command at submission.
    FaultDecision decide(uint16_t opcode, uint16_t obj_type, uint32_t obj_id);

private:
    struct Active {
        uint32_t id;
        FaultRule rule;
        uint64_t seen = 0;
    };
    std::mutex mu_;  // guards next_id_ and rules_ (armed by control calls, read per command)
    uint32_t next_id_ = 1;
    std::vector<Active> rules_;
};

}  // namespace mlx5async::emu
