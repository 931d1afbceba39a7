// Fault rules as text (mlx5emu_fault, vdpa-testpmd `fault`, emu::inject_fault):
//   clear
//   op=create|modify|query|destroy [vq=Q] [nth=N] status=S [syndrome=Y]
//   op=create_mkey|destroy_mkey|create_umem|destroy_umem ...  (memory registration)
//   op=... [vq=Q] [nth=N] hang|busy|delay_us=D|answer_late_us=D
//   vq=Q error_type=E            (force virtq Q into ERR)
// Numbers are decimal or 0x-hex and must fit their field: a value that
// does not is refused, never truncated.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/base/result.hpp"
#include "faults.hpp"

namespace mlx5async::emu {

struct ParsedFaultRule {
    bool clear = false;                 // "clear": remove every rule
    std::optional<uint16_t> vq;         // the virtq the rule names (its object id is the caller's)
    std::optional<uint8_t> error_type;  // force vq into ERR with this error_type
    std::optional<FaultRule> rule;      // a command rule (match.obj_id left to the caller)
};

Result<ParsedFaultRule> parse_fault_rule(std::string_view text);

// Longest delay a rule may add (one hour): beyond any deadline, short of overflow.
inline constexpr uint64_t kMaxFaultDelayUs = 3600ull * 1000 * 1000;

}  // namespace mlx5async::emu
