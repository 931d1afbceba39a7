#include "transport.hpp"

#include <cerrno>

#include "common/base/log_sink.hpp"
#include "common/prm/transport.hpp"

namespace mlx5async::core {

Result<Transport> Transport::open(const devx::Context& ctx, const std::string& name) {
    Transport t;
    auto pd = devx::Pd::alloc(ctx);
    MLX5A_CHECK(pd);
    t.pd_ = std::move(*pd);
    std::vector<std::byte> in(prm::kTransportCmdBytes), out(prm::kTransportCmdBytes);
    prm::encode_alloc_transport_domain(in);
    auto td = devx::DevxObj::create(ctx, in, out);
    MLX5A_CHECK(td);
    t.td_ = std::move(*td);
    std::vector<std::byte> tin(prm::kCreateTisInBytes), tout(prm::kTransportCmdBytes);
    MLX5A_CHECK(prm::encode_create_tis({.transport_domain = t.td_.obj_id(), .pd = t.pd_.pdn()}, tin));
    auto tis = devx::DevxObj::create(ctx, tin, tout);
    MLX5A_CHECK(tis);
    t.tis_ = std::move(*tis);
    // Host notifiers: the frontend writes doorbells straight into this page
    // (mapped from the context's cmd_fd at mmap_off), as with DPDK's mlx5.
    if (mlx5dv_var* v = ctx.api()->alloc_var(ctx.get(), 0))
        t.var_ = std::unique_ptr<mlx5dv_var, VarDeleter>(v, VarDeleter{ctx.api()});
    else
        logf(LogLevel::Info, "%s: no VAR doorbell page (errno %d): host notifiers off", name.c_str(), errno);
    return t;
}

void Transport::reset() noexcept {
    var_.reset();
    tis_.reset();
    td_.reset();
    pd_.reset();
}

}  // namespace mlx5async::core
