// The real DevxApi: rdma-core's ibverbs and mlx5dv functions, nothing else.
// Built only when meson finds libibverbs and libmlx5 (have_rdma_core).
#include "devx_api.hpp"

namespace mlx5async::devx {
namespace {

// ibv_open_device is not used: DevX needs mlx5dv_open_device with
// MLX5DV_CONTEXT_FLAGS_DEVX.
const DevxApi kRdmaCore = {
    .name = "rdma-core",
    .get_device_list = ibv_get_device_list,
    .free_device_list = ibv_free_device_list,
    .get_device_name = ibv_get_device_name,
    .is_supported = mlx5dv_is_supported,
    .open_device = mlx5dv_open_device,
    .close_device = ibv_close_device,
    .alloc_pd = ibv_alloc_pd,
    .dealloc_pd = ibv_dealloc_pd,
    .init_obj = mlx5dv_init_obj,
    .general_cmd = mlx5dv_devx_general_cmd,
    .obj_create = mlx5dv_devx_obj_create,
    .obj_query = mlx5dv_devx_obj_query,
    .obj_modify = mlx5dv_devx_obj_modify,
    .obj_destroy = mlx5dv_devx_obj_destroy,
    .umem_reg = mlx5dv_devx_umem_reg,
    .umem_dereg = mlx5dv_devx_umem_dereg,
    .alloc_uar = mlx5dv_devx_alloc_uar,
    .free_uar = mlx5dv_devx_free_uar,
    .alloc_var = mlx5dv_alloc_var,
    .free_var = mlx5dv_free_var,
    .create_cmd_comp = mlx5dv_devx_create_cmd_comp,
    .destroy_cmd_comp = mlx5dv_devx_destroy_cmd_comp,
    .obj_query_async = mlx5dv_devx_obj_query_async,
    .get_async_cmd_comp = mlx5dv_devx_get_async_cmd_comp,
    .create_event_channel = mlx5dv_devx_create_event_channel,
    .destroy_event_channel = mlx5dv_devx_destroy_event_channel,
    .subscribe_devx_event = mlx5dv_devx_subscribe_devx_event,
    .get_event = mlx5dv_devx_get_event,
    .query_eqn = mlx5dv_devx_query_eqn,
};

}  // namespace

const DevxApi* rdma_core_api() noexcept { return &kRdmaCore; }

}  // namespace mlx5async::devx
