// DevxApi: the rdma-core (ibverbs + mlx5dv) functions the driver uses, as one
// table of function pointers with rdma-core's own signatures. Three instances:
// real rdma-core (devx_api_rdma_core.cpp, when built with it), the emulator
// (drivers/emu), and scripted fakes in tests. Nothing else calls rdma-core.
#pragma once

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

namespace mlx5async::devx {

struct DevxApi {
    const char* name;  // "rdma-core", "mlx5emu", "fake"

    // Device discovery and open.
    ibv_device** (*get_device_list)(int* num_devices);
    void (*free_device_list)(ibv_device** list);
    const char* (*get_device_name)(ibv_device* device);
    bool (*is_supported)(ibv_device* device);  // mlx5dv_is_supported
    ibv_context* (*open_device)(ibv_device* device, mlx5dv_context_attr* attr);  // mlx5dv_open_device
    int (*close_device)(ibv_context* context);

    // Protection domain; pdn through mlx5dv_init_obj(MLX5DV_OBJ_PD).
    ibv_pd* (*alloc_pd)(ibv_context* context);
    int (*dealloc_pd)(ibv_pd* pd);
    int (*init_obj)(mlx5dv_obj* obj, uint64_t obj_type);

    // DevX commands.
    int (*general_cmd)(ibv_context* context, const void* in, size_t inlen, void* out, size_t outlen);
    mlx5dv_devx_obj* (*obj_create)(ibv_context* context, const void* in, size_t inlen, void* out,
                                   size_t outlen);
    int (*obj_query)(mlx5dv_devx_obj* obj, const void* in, size_t inlen, void* out, size_t outlen);
    int (*obj_modify)(mlx5dv_devx_obj* obj, const void* in, size_t inlen, void* out, size_t outlen);
    int (*obj_destroy)(mlx5dv_devx_obj* obj);

    // Host memory registration.
    mlx5dv_devx_umem* (*umem_reg)(ibv_context* ctx, void* addr, size_t size, uint32_t access);
    int (*umem_dereg)(mlx5dv_devx_umem* umem);

    // UAR and VAR (doorbell pages).
    mlx5dv_devx_uar* (*alloc_uar)(ibv_context* context, uint32_t flags);
    void (*free_uar)(mlx5dv_devx_uar* devx_uar);
    mlx5dv_var* (*alloc_var)(ibv_context* context, uint32_t flags);
    void (*free_var)(mlx5dv_var* dv_var);

    // Asynchronous QUERY (the only async DevX command in rdma-core).
    mlx5dv_devx_cmd_comp* (*create_cmd_comp)(ibv_context* context);
    void (*destroy_cmd_comp)(mlx5dv_devx_cmd_comp* cmd_comp);
    int (*obj_query_async)(mlx5dv_devx_obj* obj, const void* in, size_t inlen, size_t outlen,
                           uint64_t wr_id, mlx5dv_devx_cmd_comp* cmd_comp);
    int (*get_async_cmd_comp)(mlx5dv_devx_cmd_comp* cmd_comp, mlx5dv_devx_async_cmd_hdr* cmd_resp,
                              size_t cmd_resp_len);

    // DevX events (OBJECT_CHANGE on virtq error).
    mlx5dv_devx_event_channel* (*create_event_channel)(ibv_context* context,
                                                       mlx5dv_devx_create_event_channel_flags flags);
    void (*destroy_event_channel)(mlx5dv_devx_event_channel* event_channel);
    int (*subscribe_devx_event)(mlx5dv_devx_event_channel* event_channel, mlx5dv_devx_obj* obj,
                                uint16_t events_sz, uint16_t events_num[], uint64_t cookie);
    ssize_t (*get_event)(mlx5dv_devx_event_channel* event_channel,
                         mlx5dv_devx_async_event_hdr* event_data, size_t event_resp_len);

    // The completion EQ number for a vector (CREATE_CQ's c_eqn).
    int (*query_eqn)(ibv_context* context, uint32_t vector, uint32_t* eqn);
};

// The rdma-core instance; nullptr when built without it (meson option rdma_core).
const DevxApi* rdma_core_api() noexcept;

}  // namespace mlx5async::devx
