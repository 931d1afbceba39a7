#include "emu_virtqs.hpp"

#include <chrono>
#include <string>

#include "common/devx/engine.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"

namespace mlx5async::testing {
namespace {

using namespace std::chrono_literals;

constexpr auto kSetupTimeout = 120s;

prm::VirtqAttr create_attr(const ReadyVirtqs& r, size_t q) {
    prm::VirtqAttr a;
    a.state = prm::VirtqState::INIT;
    a.virtio_q_type = prm::VirtqType::SPLIT;
    // The first event mode the device supports (caps.event_mode is a bitmask).
    for (uint8_t m = 0; m < 3; ++m)
        if (r.caps.event_mode & (1u << m)) {
            a.event_mode = static_cast<prm::EventMode>(m);
            break;
        }
    a.queue_index = static_cast<uint16_t>(q);
    a.queue_size = r.setup.queue_size;
    a.virtio_version_1_0 = r.caps.virtio_version_1_0;
    a.pd = r.pd.pdn();
    a.hw_available_index = r.avail_of(q);
    a.hw_used_index = r.used_of(q);
    a.desc_addr = 0x10000000ull + q * 0x10000;
    a.available_addr = a.desc_addr + 0x4000;
    a.used_addr = a.desc_addr + 0x8000;
    for (int i = 0; i < 3; ++i) {
        const devx::Umem& u = r.umems[q * 3 + i];
        a.umem[i] = {u.id(), static_cast<uint32_t>(u.size()), 0};
    }
    return a;
}

Result<void> check_all(const devx::BatchResult& br, const char* what) {
    for (const auto& e : br.entries)
        for (const auto& s : e.steps)
            if (!s.ok()) {
                Error err = s.error();
                err.what = what;
                return unexpected(std::move(err));
            }
    return {};
}

}  // namespace

Result<prm::VirtioEmulationCaps> query_virtio_caps(const devx::Context& ctx) {
    std::vector<std::byte> in(prm::kQueryHcaCapInBytes), out(prm::kQueryHcaCapOutBytes);
    prm::encode_query_hca_cap(prm::cap_op_mod(prm::kCapTypeVirtioEmulation), in);
    int r = ctx.api()->general_cmd(ctx.get(), in.data(), in.size(), out.data(), out.size());
    auto caps = prm::decode_query_virtio_caps_out(out);
    if (!caps) return unexpected(caps.error());
    if (r != 0) return unexpected(Error::sys(r < 0 ? -r : r, "QUERY_HCA_CAP"));
    return caps;
}

Result<ReadyVirtqs> make_ready_virtqs(const devx::DevxApi& api, std::string_view device,
                                      unsigned n, VirtqSetup setup) {
    ReadyVirtqs r;
    r.setup = setup;
    auto ctx = devx::Context::open(api, device);
    MLX5A_CHECK(ctx);
    r.ctx = std::move(*ctx);
    auto caps = query_virtio_caps(r.ctx);
    MLX5A_CHECK(caps);
    r.caps = *caps;
    auto pd = devx::Pd::alloc(r.ctx);
    MLX5A_CHECK(pd);
    r.pd = std::move(*pd);
    r.umems.reserve(size_t(n) * 3);
    for (unsigned q = 0; q < n; ++q)
        for (int i = 0; i < 3; ++i) {
            auto u = devx::Umem::reg(r.ctx, r.caps.umem_size(i, setup.queue_size));
            MLX5A_CHECK(u);
            r.umems.push_back(std::move(*u));
        }
    auto eng = devx::Engine::create(api, r.ctx.get(), {.max_inflight = setup.max_inflight});
    MLX5A_CHECK(eng);
    devx::Batch create;
    for (unsigned q = 0; q < n; ++q) {
        auto c = devx::Command::create_virtq(r.ctx, create_attr(r, q), int(q));
        MLX5A_CHECK(c);
        create.add(std::move(*c));
    }
    devx::BatchResult cr = (*eng)->run(std::move(create), kSetupTimeout);
    r.vqs.reserve(n);
    for (auto& e : cr.entries) r.vqs.push_back(std::move(e.steps[0].obj));
    MLX5A_CHECK(check_all(cr, "create virtq"));
    devx::Batch rdy;
    for (unsigned q = 0; q < n; ++q) rdy.add_resume(r.vqs[q], int(q));
    MLX5A_CHECK(check_all((*eng)->run(std::move(rdy), kSetupTimeout), "modify virtq to RDY"));
    return r;
}

}  // namespace mlx5async::testing
