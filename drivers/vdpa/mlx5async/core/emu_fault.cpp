// Fault rules for emulated devices (rte_pmd_mlx5async_emu_fault): parsed by
// the emulator (emu/fault_rule.hpp), virtq numbers mapped to objects here.
#include "device_impl.hpp"
#include "emu/emu.hpp"
#include "emu/fault_rule.hpp"

namespace mlx5async::core {

Result<void> Device::emu_fault(std::string_view text) {
    Impl& d = *impl_;
    if (d.emu_device.empty())
        return fail(Errc::NotSupported, "fault injection needs an emulated device (emu=...)");
    emu::Device* dev = emu::device_of(d.ctx.get());
    if (!dev) return fail(Errc::NotFound, "emulated device " + d.emu_device + " is gone");
    auto parsed = emu::parse_fault_rule(text);
    MLX5A_CHECK(parsed);
    if (parsed->clear) {
        dev->faults().clear();
        return {};
    }
    std::lock_guard lk(d.mu);
    const auto vq = parsed->vq;
    if (vq && *vq >= d.vqs.size())
        return fail(Errc::InvalidArgument, "fault rule: vq=" + std::to_string(*vq) +
                                               ": the device has virtqs 0.." +
                                               std::to_string(d.vqs.size() - 1));
    if (vq && !d.vqs[*vq].obj)
        return fail(Errc::State, "fault rule: virtq " + std::to_string(*vq) + " has no object");
    if (parsed->error_type) return dev->force_virtq_error(d.vqs[*vq].obj.obj_id(), *parsed->error_type);
    emu::FaultRule r = *parsed->rule;
    if (vq) r.match.obj_id = d.vqs[*vq].obj.obj_id();
    dev->faults().add(r);
    return {};
}

}  // namespace mlx5async::core
