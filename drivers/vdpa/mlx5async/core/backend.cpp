// The core's one seam to its backends: rdma-core (hardware) and, when built
// with it, mlx5emu. No other core file includes an emulator header.
#include "backend.hpp"

#include "mlx5async_config.h"

#if MLX5ASYNC_HAVE_EMULATOR
#include "emu/emu.hpp"
#include "emu/fault_rule.hpp"
#include "emu/profile.hpp"
#endif

namespace mlx5async::core {
namespace {

Result<Backend> open_hardware(const DeviceConfig& cfg) {
    Backend b;
    b.api = devx::rdma_core_api();
    if (!b.api)
        return fail(Errc::NotSupported,
                    "dev=" + cfg.hw_device + ": built without rdma-core (meson -Drdma_core=enabled)");
    // `dev` is a PCI address (has ':') or an ibv device name.
    auto c = cfg.hw_device.find(':') == std::string::npos
                 ? devx::Context::open(*b.api, cfg.hw_device)
                 : devx::Context::open_pci(*b.api, cfg.hw_device);
    MLX5A_CHECK(c);
    b.ctx = std::move(*c);
    return b;
}

#if MLX5ASYNC_HAVE_EMULATOR

class Emulated final : public EmulatorHooks {
public:
    Emulated(std::string device, const emu::Profile& p) : device_(std::move(device)) {
        timing_.modify_ns = uint64_t(p.timing.modify_us) * 1000;
        timing_.query_ns = uint64_t(p.timing.query_us) * 1000;
        timing_.fw_max_inflight = p.max_inflight;
    }
    ~Emulated() override {
        on_announce({});
        (void)emu::destroy_device(device_);
    }
    ModelTiming timing() const override { return timing_; }

    FrameCounts frames(uint32_t virtq_obj_id) const override {
        emu::Device* dev = emu::find_device(device_);
        if (!dev) return {};
        auto i = dev->virtq_info(virtq_obj_id);
        if (!i) return {};
        return {i->frames.arp, i->frames.announces, i->frames.oversize};
    }

    void on_announce(std::function<void(uint16_t ring)> f) override {
        emu::Device* dev = emu::find_device(device_);
        if (!dev) return;
        if (!f) return dev->datapath().set_announce_observer({});
        dev->datapath().set_announce_observer(
            [f = std::move(f)](uint32_t, uint16_t queue_index) { f(queue_index); });
    }

    Result<void> inject_fault(std::string_view text,
                              const std::function<Result<uint32_t>(uint16_t)>& object_of) override {
        emu::Device* dev = emu::find_device(device_);
        if (!dev) return fail(Errc::NotFound, "emulated device " + device_ + " is gone");
        auto parsed = emu::parse_fault_rule(text);
        MLX5A_CHECK(parsed);
        if (parsed->clear) {
            dev->faults().clear();
            return {};
        }
        std::optional<uint32_t> obj;
        if (parsed->vq) {
            auto id = object_of(*parsed->vq);
            MLX5A_CHECK(id);
            obj = *id;
        }
        if (parsed->error_type) return dev->force_virtq_error(*obj, *parsed->error_type);
        emu::FaultRule r = *parsed->rule;
        if (obj) r.match.obj_id = *obj;
        dev->faults().add(r);
        return {};
    }

private:
    std::string device_;
    ModelTiming timing_;
};

Result<Backend> open_emulated(const DeviceConfig& cfg, const std::string& name) {
    const std::string device = name + "-emu";
    MLX5A_CHECK(emu::create_device(device, cfg.emu_spec));  // parses the spec
    Backend b;
    b.api = &emu::api();
    // Removes the device on failure.
    b.emulator = std::make_unique<Emulated>(device, emu::find_device(device)->profile());
    auto c = devx::Context::open(*b.api, device);
    MLX5A_CHECK(c);
    b.ctx = std::move(*c);
    return b;
}

#endif

}  // namespace

bool have_emulator() noexcept { return MLX5ASYNC_HAVE_EMULATOR; }

Result<void> check_emulator_spec(std::string_view spec) {
#if MLX5ASYNC_HAVE_EMULATOR
    auto p = emu::parse_spec(spec);
    MLX5A_CHECK(p);
    if (p->clock == emu::ClockKind::Manual)
        return fail(Errc::InvalidArgument,
                    "clock=manual moves the emulator's time only when a test steps it; nothing "
                    "does for a driver, so the probe's first command (QUERY_HCA_CAP) would never "
                    "complete: leave clock unset (steady)");
    return {};
#else
    return fail(Errc::NotSupported, "emu=" + std::string(spec) +
                                        ": this build has no emulator (meson -Demulator=false); "
                                        "use dev=<PCI address>");
#endif
}

Result<Backend> open_backend(const DeviceConfig& cfg, const std::string& name) {
    if (!cfg.is_emulated()) return open_hardware(cfg);
#if MLX5ASYNC_HAVE_EMULATOR
    return open_emulated(cfg, name);
#else
    (void)name;
    return unexpected(check_emulator_spec(cfg.emu_spec).error());
#endif
}

std::string backend_label(const DeviceConfig& cfg, const devx::DevxApi* api) {
    if (cfg.is_emulated()) return "emu:" + cfg.emu_spec;
    return std::string(api ? api->name : "?") + ":" + cfg.hw_device;
}

}  // namespace mlx5async::core
