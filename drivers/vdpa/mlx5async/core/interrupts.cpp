#include "interrupts.hpp"

#include <cerrno>
#include <cstdio>

#include "common/base/log_sink.hpp"
#include "common/prm/status.hpp"

namespace mlx5async::core {

Result<void> Interrupts::setup(const DeviceConfig& cfg, const devx::Context& ctx,
                               const prm::VirtioEmulationCaps& caps, size_t rings,
                               const std::string& name) {
    if (cfg.event_mode == EventMode::None) return {};
    auto no = [&](const std::string& why) -> Result<void> {
        if (cfg.event_mode_set) return fail(Errc::NotSupported, "devarg event_mode=irq: " + why);
        logf(LogLevel::Info, "%s: no interrupts (%s): frontends must poll", name.c_str(), why.c_str());
        return {};
    };
    if (!(caps.event_mode & (1u << uint8_t(prm::EventMode::QP)))) {
        char mask[8];
        std::snprintf(mask, sizeof mask, "%x", caps.event_mode);
        return no(std::string("the device has no QP event mode (virtio caps event_mode 0x") + mask + ")");
    }
    if (ctx.api()->query_eqn(ctx.get(), 0, &eqn_) != 0)
        return no("mlx5dv_devx_query_eqn(vector 0) failed: errno " + std::to_string(errno));
    auto u = devx::Uar::alloc(ctx);
    if (!u) return no("no UAR page: " + to_string(u.error()));
    uar_ = std::move(*u);
    qps_ = std::vector<EventQp>(rings);
    auto r = IrqRelay::create(ctx, uar_.get()->base_addr, rings, cfg.event_core, name);
    MLX5A_CHECK(r);
    relay_ = std::move(*r);
    return {};
}

// Created before their virtqs: a virtq names its firmware QP at CREATE.
Result<EventQp::Build> Interrupts::plan_event_qps(std::span<const uint16_t> rings, uint16_t size) {
    std::erase_if(parked_, [](devx::Umem& u) { return u.try_dereg() == 0; });
    std::vector<uint16_t> todo;
    if (on())
        for (uint16_t r : rings)
            if (!qps_.at(r)) todo.push_back(r);
    uint8_t log_n = 0;
    while ((2u << log_n) <= size && log_n < EventQp::kMaxLog) log_n++;
    return EventQp::plan(todo, log_n);
}

Result<void> Interrupts::add_event_qps(EventQp::Build& build, const devx::Context& ctx, uint32_t pdn,
                                       devx::Batch& b) const {
    return EventQp::add(b, ctx, pdn, uar_.page_id(), eqn_, build);
}

Result<void> Interrupts::take_event_qps(EventQp::Build& build, devx::BatchResult& res,
                                        std::vector<devx::PageBuffer>& late) {
    if (build.rings.empty()) return {};
    Result<void> first = {};
    auto qps = EventQp::take(build, res, late, parked_, first);
    for (size_t i = 0; i < build.rings.size(); i++) {
        if (!qps[i]) continue;
        const uint16_t r = build.rings[i];
        qps_[r] = std::move(qps[i]);
        if (auto a = relay_->attach(r, &qps_[r]); !a && first) first = a;
    }
    return first;
}

uint32_t Interrupts::fw_qpn(uint16_t ring) const {
    return ring < qps_.size() && qps_[ring] ? qps_[ring].fw_qpn() : 0;
}

void Interrupts::set_callfds(const std::vector<std::pair<uint16_t, int>>& fds, const std::string& name) {
    if (!relay_) return;
    if (auto c = relay_->set_callfds(fds); !c)
        logf(LogLevel::Warning, "%s: interrupts: %s", name.c_str(), to_string(c.error()).c_str());
}

void Interrupts::set_callfd(uint16_t ring, int fd, const std::string& name) {
    if (!relay_) return;
    if (auto r = relay_->set_callfd(ring, fd); !r)
        logf(LogLevel::Warning, "%s: interrupts: %s", name.c_str(), to_string(r.error()).c_str());
}

void Interrupts::clear_callfds() {
    if (relay_) relay_->clear_callfds();
}

IrqRelayStats Interrupts::stats() const { return relay_ ? relay_->stats() : IrqRelayStats{}; }

uint64_t Interrupts::calls(uint16_t ring) const { return relay_ ? relay_->calls(ring) : 0; }

void Interrupts::reset() {
    relay_.reset();
    qps_.clear();
    parked_.clear();
    uar_.reset();
}

}  // namespace mlx5async::core
