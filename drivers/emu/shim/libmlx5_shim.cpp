// libmlx5emu.so: rdma-core's ibverbs/mlx5dv symbol names (with their symbol
// versions, libmlx5emu.map) forwarding to the emulator's DevxApi. No logic:
// each entry is one call, behind a catch-all (no exception crosses the C ABI).
#include <cerrno>

#include "emu/emu.hpp"

namespace {

const mlx5async::devx::DevxApi& A() { return mlx5async::emu::api(); }

template <typename F, typename R>
R guard(F&& f, R on_exception) noexcept {
    try {
        return f();
    } catch (...) {
        errno = EIO;
        return on_exception;
    }
}

}  // namespace

#define EMU_EXPORT extern "C" __attribute__((visibility("default")))

EMU_EXPORT ibv_device** ibv_get_device_list(int* n) {
    return guard([&] { return A().get_device_list(n); }, (ibv_device**)nullptr);
}
EMU_EXPORT void ibv_free_device_list(ibv_device** l) {
    guard([&] { A().free_device_list(l); return 0; }, 0);
}
EMU_EXPORT const char* ibv_get_device_name(ibv_device* d) {
    return guard([&] { return A().get_device_name(d); }, (const char*)nullptr);
}
EMU_EXPORT int ibv_close_device(ibv_context* c) {
    return guard([&] { return A().close_device(c); }, EIO);
}
EMU_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* c) {
    return guard([&] { return A().alloc_pd(c); }, (ibv_pd*)nullptr);
}
EMU_EXPORT int ibv_dealloc_pd(ibv_pd* pd) {
    return guard([&] { return A().dealloc_pd(pd); }, EIO);
}
EMU_EXPORT bool mlx5dv_is_supported(ibv_device* d) {
    return guard([&] { return A().is_supported(d); }, false);
}
EMU_EXPORT ibv_context* mlx5dv_open_device(ibv_device* d, mlx5dv_context_attr* attr) {
    return guard([&] { return A().open_device(d, attr); }, (ibv_context*)nullptr);
}
EMU_EXPORT int mlx5dv_init_obj(mlx5dv_obj* obj, uint64_t obj_type) {
    return guard([&] { return A().init_obj(obj, obj_type); }, EIO);
}
EMU_EXPORT int mlx5dv_devx_general_cmd(ibv_context* c, const void* in, size_t inlen, void* out,
                                       size_t outlen) {
    return guard([&] { return A().general_cmd(c, in, inlen, out, outlen); }, EIO);
}
EMU_EXPORT mlx5dv_devx_obj* mlx5dv_devx_obj_create(ibv_context* c, const void* in, size_t inlen,
                                                   void* out, size_t outlen) {
    return guard([&] { return A().obj_create(c, in, inlen, out, outlen); }, (mlx5dv_devx_obj*)nullptr);
}
EMU_EXPORT int mlx5dv_devx_obj_query(mlx5dv_devx_obj* o, const void* in, size_t inlen, void* out,
                                     size_t outlen) {
    return guard([&] { return A().obj_query(o, in, inlen, out, outlen); }, EIO);
}
EMU_EXPORT int mlx5dv_devx_obj_modify(mlx5dv_devx_obj* o, const void* in, size_t inlen, void* out,
                                      size_t outlen) {
    return guard([&] { return A().obj_modify(o, in, inlen, out, outlen); }, EIO);
}
EMU_EXPORT int mlx5dv_devx_obj_destroy(mlx5dv_devx_obj* o) {
    return guard([&] { return A().obj_destroy(o); }, EIO);
}
EMU_EXPORT mlx5dv_devx_umem* mlx5dv_devx_umem_reg(ibv_context* c, void* addr, size_t size,
                                                  uint32_t access) {
    return guard([&] { return A().umem_reg(c, addr, size, access); }, (mlx5dv_devx_umem*)nullptr);
}
EMU_EXPORT int mlx5dv_devx_umem_dereg(mlx5dv_devx_umem* u) {
    return guard([&] { return A().umem_dereg(u); }, EIO);
}
EMU_EXPORT mlx5dv_devx_uar* mlx5dv_devx_alloc_uar(ibv_context* c, uint32_t flags) {
    return guard([&] { return A().alloc_uar(c, flags); }, (mlx5dv_devx_uar*)nullptr);
}
EMU_EXPORT void mlx5dv_devx_free_uar(mlx5dv_devx_uar* u) {
    guard([&] { A().free_uar(u); return 0; }, 0);
}
EMU_EXPORT mlx5dv_var* mlx5dv_alloc_var(ibv_context* c, uint32_t flags) {
    return guard([&] { return A().alloc_var(c, flags); }, (mlx5dv_var*)nullptr);
}
EMU_EXPORT void mlx5dv_free_var(mlx5dv_var* v) {
    guard([&] { A().free_var(v); return 0; }, 0);
}
EMU_EXPORT mlx5dv_devx_cmd_comp* mlx5dv_devx_create_cmd_comp(ibv_context* c) {
    return guard([&] { return A().create_cmd_comp(c); }, (mlx5dv_devx_cmd_comp*)nullptr);
}
EMU_EXPORT void mlx5dv_devx_destroy_cmd_comp(mlx5dv_devx_cmd_comp* cc) {
    guard([&] { A().destroy_cmd_comp(cc); return 0; }, 0);
}
EMU_EXPORT int mlx5dv_devx_obj_query_async(mlx5dv_devx_obj* o, const void* in, size_t inlen,
                                           size_t outlen, uint64_t wr_id,
                                           mlx5dv_devx_cmd_comp* cc) {
    return guard([&] { return A().obj_query_async(o, in, inlen, outlen, wr_id, cc); }, EIO);
}
EMU_EXPORT int mlx5dv_devx_get_async_cmd_comp(mlx5dv_devx_cmd_comp* cc,
                                              mlx5dv_devx_async_cmd_hdr* resp, size_t len) {
    return guard([&] { return A().get_async_cmd_comp(cc, resp, len); }, EIO);
}
EMU_EXPORT mlx5dv_devx_event_channel* mlx5dv_devx_create_event_channel(
    ibv_context* c, mlx5dv_devx_create_event_channel_flags flags) {
    return guard([&] { return A().create_event_channel(c, flags); },
                 (mlx5dv_devx_event_channel*)nullptr);
}
EMU_EXPORT void mlx5dv_devx_destroy_event_channel(mlx5dv_devx_event_channel* ch) {
    guard([&] { A().destroy_event_channel(ch); return 0; }, 0);
}
EMU_EXPORT int mlx5dv_devx_subscribe_devx_event(mlx5dv_devx_event_channel* ch, mlx5dv_devx_obj* o,
                                                uint16_t events_sz, uint16_t events_num[],
                                                uint64_t cookie) {
    return guard([&] { return A().subscribe_devx_event(ch, o, events_sz, events_num, cookie); }, EIO);
}
EMU_EXPORT ssize_t mlx5dv_devx_get_event(mlx5dv_devx_event_channel* ch,
                                         mlx5dv_devx_async_event_hdr* data, size_t len) {
    return guard([&] { return A().get_event(ch, data, len); }, (ssize_t)-1);
}
EMU_EXPORT int mlx5dv_devx_query_eqn(ibv_context* c, uint32_t vector, uint32_t* eqn) {
    return guard([&] { return A().query_eqn(c, vector, eqn); }, EIO);
}
