// Fault rules for emulated devices (rte_pmd_mlx5async_emu_fault), translated
// to the emulator's fault policy:
//   clear
//   op=create|modify|query|destroy [vq=Q] [nth=N] status=S [syndrome=Y]
//   op=... [vq=Q] [nth=N] hang|busy|delay_us=D
//   vq=Q error_type=E            (force virtq Q into ERR)
#include <charconv>
#include <sstream>

#include "common/prm/opcodes.hpp"
#include "device_impl.hpp"
#include "emu/emu.hpp"

namespace mlx5async::core {
namespace {

Result<uint64_t> number(std::string_view key, std::string_view v) {
    int base = 10;
    if (v.starts_with("0x")) {
        v.remove_prefix(2);
        base = 16;
    }
    uint64_t x = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x, base);
    if (ec != std::errc() || p != v.data() + v.size())
        return fail(Errc::InvalidArgument, "fault rule: " + std::string(key) + " needs a number");
    return x;
}

Result<uint16_t> opcode_of(std::string_view op) {
    using prm::Opcode;
    if (op == "create") return uint16_t(Opcode::CREATE_GENERAL_OBJECT);
    if (op == "modify") return uint16_t(Opcode::MODIFY_GENERAL_OBJECT);
    if (op == "query") return uint16_t(Opcode::QUERY_GENERAL_OBJECT);
    if (op == "destroy") return uint16_t(Opcode::DESTROY_GENERAL_OBJECT);
    return fail(Errc::InvalidArgument,
                "fault rule: op=" + std::string(op) + ": expected create|modify|query|destroy");
}

}  // namespace

Result<void> Device::emu_fault(std::string_view rule) {
    Impl& d = *impl_;
    if (d.emu_device.empty())
        return fail(Errc::NotSupported, "fault injection needs an emulated device (emu=...)");
    emu::Device* dev = emu::device_of(d.ctx.get());
    if (!dev) return fail(Errc::NotFound, "emulated device " + d.emu_device + " is gone");
    std::istringstream in{std::string(rule)};
    std::string tok;
    emu::FaultRule r;
    bool have_op = false, have_action = false;
    std::optional<uint16_t> vq;
    std::optional<uint8_t> error_type;
    while (in >> tok) {
        auto eq = tok.find('=');
        std::string key = tok.substr(0, eq);
        std::string val = eq == std::string::npos ? "" : tok.substr(eq + 1);
        if (key == "clear" && eq == std::string::npos) {
            dev->faults().clear();
            return {};
        } else if (key == "hang" || key == "busy") {
            r.action = key == "hang" ? emu::FaultAction::Hang : emu::FaultAction::Busy;
            have_action = true;
        } else if (key == "op") {
            auto o = opcode_of(val);
            MLX5A_CHECK(o);
            r.match.opcode = *o;
            have_op = true;
        } else {
            auto n = number(key, val);
            MLX5A_CHECK(n);
            if (key == "vq") vq = uint16_t(*n);
            else if (key == "nth") r.match.nth = *n;
            else if (key == "status") { r.status = uint8_t(*n); r.action = emu::FaultAction::Fail; have_action = true; }
            else if (key == "syndrome") r.syndrome = uint32_t(*n);
            else if (key == "delay_us") { r.extra_ns = int64_t(*n) * 1000; r.action = emu::FaultAction::Delay; have_action = true; }
            else if (key == "error_type") error_type = uint8_t(*n);
            else return fail(Errc::InvalidArgument, "fault rule: unknown key '" + key + "'");
        }
    }
    std::lock_guard lk(d.mu);
    if (vq && *vq >= d.vqs.size())
        return fail(Errc::InvalidArgument, "fault rule: vq=" + std::to_string(*vq) + " out of range");
    if (vq && !d.vqs[*vq].obj)
        return fail(Errc::State, "fault rule: virtq " + std::to_string(*vq) + " has no object");
    if (error_type) {
        if (!vq) return fail(Errc::InvalidArgument, "fault rule: error_type needs vq=Q");
        return dev->force_virtq_error(d.vqs[*vq].obj.obj_id(), *error_type);
    }
    if (!have_op || !have_action)
        return fail(Errc::InvalidArgument,
                    "fault rule: needs op=... and one of status=S, hang, busy, delay_us=D");
    if (vq) r.match.obj_id = d.vqs[*vq].obj.obj_id();
    dev->faults().add(r);
    return {};
}

}  // namespace mlx5async::core
