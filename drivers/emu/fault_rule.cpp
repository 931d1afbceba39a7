#include "fault_rule.hpp"

#include <charconv>
#include <sstream>
#include <string>

#include "common/prm/opcodes.hpp"

namespace mlx5async::emu {
namespace {

Result<uint64_t> number(const std::string& key, std::string_view v, uint64_t max) {
    std::string_view digits = v;
    int base = 10;
    if (digits.starts_with("0x") || digits.starts_with("0X")) {
        digits.remove_prefix(2);
        base = 16;
    }
    uint64_t x = 0;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), x, base);
    if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size() || x > max)
        return fail(Errc::InvalidArgument, "fault rule: " + key + "=" + std::string(v) +
                                               ": expected a number in 0.." + std::to_string(max));
    return x;
}

// `key`=`v` into `dst` (an integer or an optional one), at most `max`.
template <typename T>
Result<void> read_number(T& dst, const std::string& key, std::string_view v, uint64_t max) {
    auto n = number(key, v, max);
    MLX5A_CHECK(n);
    if constexpr (requires { typename T::value_type; }) dst = typename T::value_type(*n);
    else dst = T(*n);
    return {};
}

Result<uint16_t> opcode_of(std::string_view op) {
    using prm::Opcode;
    if (op == "create") return uint16_t(Opcode::CREATE_GENERAL_OBJECT);
    if (op == "modify") return uint16_t(Opcode::MODIFY_GENERAL_OBJECT);
    if (op == "query") return uint16_t(Opcode::QUERY_GENERAL_OBJECT);
    if (op == "destroy") return uint16_t(Opcode::DESTROY_GENERAL_OBJECT);
    // Memory registration: mlx5dv_devx_umem_reg/dereg are these commands.
    if (op == "create_mkey") return uint16_t(Opcode::CREATE_MKEY);
    if (op == "destroy_mkey") return uint16_t(Opcode::DESTROY_MKEY);
    if (op == "create_umem") return uint16_t(Opcode::CREATE_UMEM);
    if (op == "destroy_umem") return uint16_t(Opcode::DESTROY_UMEM);
    return fail(Errc::InvalidArgument, "fault rule: op=" + std::string(op) +
                                           ": expected create|modify|query|destroy|create_mkey|"
                                           "destroy_mkey|create_umem|destroy_umem");
}

}  // namespace

Result<ParsedFaultRule> parse_fault_rule(std::string_view text) {
    std::istringstream in{std::string(text)};
    std::string tok;
    ParsedFaultRule out;
    FaultRule r;
    bool have_op = false, have_action = false;
    auto action = [&](FaultAction a) -> Result<void> {
        if (have_action)
            return fail(Errc::InvalidArgument,
                        "fault rule: one action only (status=S, hang, busy, delay_us=D or answer_late_us=D)");
        r.action = a;
        have_action = true;
        return {};
    };
    while (in >> tok) {
        auto eq = tok.find('=');
        std::string key = tok.substr(0, eq);
        std::string val = eq == std::string::npos ? "" : tok.substr(eq + 1);
        if (eq == std::string::npos && key == "clear") {
            out.clear = true;
        } else if (eq == std::string::npos && (key == "hang" || key == "busy")) {
            MLX5A_CHECK(action(key == "hang" ? FaultAction::Hang : FaultAction::Busy));
        } else if (key == "op") {
            auto o = opcode_of(val);
            MLX5A_CHECK(o);
            r.match.opcode = *o;
            have_op = true;
        } else if (key == "vq") {
            MLX5A_CHECK(read_number(out.vq, key, val, UINT16_MAX));
        } else if (key == "nth") {
            MLX5A_CHECK(read_number(r.match.nth, key, val, UINT32_MAX));
        } else if (key == "status") {
            MLX5A_CHECK(read_number(r.status, key, val, UINT8_MAX));
            MLX5A_CHECK(action(FaultAction::Fail));
        } else if (key == "syndrome") {
            MLX5A_CHECK(read_number(r.syndrome, key, val, UINT32_MAX));
        } else if (key == "delay_us" || key == "answer_late_us") {
            uint64_t us = 0;
            MLX5A_CHECK(read_number(us, key, val, kMaxFaultDelayUs));
            MLX5A_CHECK(action(key == "delay_us" ? FaultAction::Delay : FaultAction::AnswerLate));
            r.extra_ns = int64_t(us) * 1000;
        } else if (key == "error_type") {
            MLX5A_CHECK(read_number(out.error_type, key, val, UINT8_MAX));
        } else {
            return fail(Errc::InvalidArgument, "fault rule: unknown word '" + tok + "'");
        }
    }
    if (out.clear) {
        if (have_op || have_action || out.vq || out.error_type)
            return fail(Errc::InvalidArgument, "fault rule: 'clear' stands alone");
        return out;
    }
    if (out.error_type) {
        if (!out.vq) return fail(Errc::InvalidArgument, "fault rule: error_type needs vq=Q");
        if (have_op || have_action)
            return fail(Errc::InvalidArgument, "fault rule: error_type takes only vq=Q");
        return out;
    }
    if (!have_op || !have_action)
        return fail(Errc::InvalidArgument,
                    "fault rule: needs op=... and one of status=S, hang, busy, delay_us=D, answer_late_us=D");
    out.rule = r;
    return out;
}

}  // namespace mlx5async::emu
