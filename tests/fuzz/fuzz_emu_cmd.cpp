// mlx5emu's firmware command interface on arbitrary commands: any bytes
// through general_cmd, obj_create, obj_modify, obj_query, obj_query_async
// and obj_destroy, in any order, on objects the same input created. The
// emulator may refuse anything (status, errno) but never crashes, never
// hangs, and a context close frees whatever the input left.
//
// Input: a sequence of records: op (1 byte), object pick (1 byte), length
// (2 bytes, little endian), then that many bytes of command input.
#include <poll.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "common/prm/general_obj.hpp"
#include "emu/emu.hpp"
#include "fuzz_check.hpp"

namespace emu = mlx5async::emu;

namespace {

constexpr const char* kSpec =
    "cx7,create_us=0,modify_us=0,query_us=0,destroy_us=0,umem_us=0,general_us=0,pin_ns=0,unpin_ns=0,mtt_ns=0,mkey_us=0,"
    "cmd_timeout_ms=200";
constexpr size_t kMaxOut = 16 + 4096;  // QUERY_HCA_CAP is the largest output
constexpr size_t kMaxRecords = 64;

ibv_device* device() {
    static ibv_device* dev = [] {
        auto d = emu::create_device("fuzz-emu", kSpec);
        FUZZ_CHECK(d, "cannot create the emulated device");
        return *d;
    }();
    return dev;
}

// Umems a CREATE may name (umem ids are small integers: a mutation finds them).
struct Umems {
    std::vector<std::vector<std::byte>> mem;
    std::vector<mlx5dv_devx_umem*> reg;
};

void add_umems(const mlx5async::devx::DevxApi& A, ibv_context* ctx, Umems& u) {
    for (int i = 0; i < 3; i++) {
        u.mem.emplace_back(64 * 1024);
        if (auto* r = A.umem_reg(ctx, u.mem.back().data(), u.mem.back().size(), IBV_ACCESS_LOCAL_WRITE))
            u.reg.push_back(r);
    }
}

void drain_async(const mlx5async::devx::DevxApi& A, mlx5dv_devx_cmd_comp* cc) {
    pollfd p{cc->fd, POLLIN, 0};
    // The command timeout bounds a hung query; a flushed one completes too.
    FUZZ_CHECK(::poll(&p, 1, 10000) == 1, "an async query never completed");
    alignas(8) std::byte buf[sizeof(mlx5dv_devx_async_cmd_hdr) + kMaxOut];
    FUZZ_CHECK(A.get_async_cmd_comp(cc, reinterpret_cast<mlx5dv_devx_async_cmd_hdr*>(buf), sizeof buf) == 0,
               "an async completion could not be read");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto& A = emu::api();
    mlx5dv_context_attr attr{};
    attr.flags = MLX5DV_CONTEXT_FLAGS_DEVX;
    ibv_context* ctx = A.open_device(device(), &attr);
    FUZZ_CHECK(ctx, "cannot open the emulated device");
    ibv_pd* pd = A.alloc_pd(ctx);
    Umems umems;
    add_umems(A, ctx, umems);
    mlx5dv_devx_cmd_comp* cc = A.create_cmd_comp(ctx);
    std::vector<mlx5dv_devx_obj*> objs;
    std::vector<std::byte> out(kMaxOut);
    size_t at = 0;
    for (size_t n = 0; n < kMaxRecords && at + 4 <= size; n++) {
        const uint8_t op = data[at] % 6, pick = data[at + 1];
        size_t len = size_t(data[at + 2]) | size_t(data[at + 3]) << 8;
        at += 4;
        len = std::min(len, size - at);
        std::vector<std::byte> in(len);
        if (len) std::memcpy(in.data(), data + at, len);
        at += len;
        // Output length from the input's low bits: short outputs are legal to ask for.
        const size_t outlen = 16 + (len ? size_t(data[at - 1]) * 16 : 0) % (kMaxOut - 15);
        mlx5dv_devx_obj* obj = objs.empty() ? nullptr : objs[pick % objs.size()];
        switch (op) {
        case 0: (void)A.general_cmd(ctx, in.data(), in.size(), out.data(), outlen); break;
        case 1:
            if (auto* o = A.obj_create(ctx, in.data(), in.size(), out.data(), outlen)) objs.push_back(o);
            break;
        case 2:
            if (obj) (void)A.obj_modify(obj, in.data(), in.size(), out.data(), outlen);
            break;
        case 3:
            if (obj) (void)A.obj_query(obj, in.data(), in.size(), out.data(), outlen);
            break;
        case 4:
            if (obj && A.obj_destroy(obj) == 0) std::erase(objs, obj);
            break;
        case 5:
            if (obj && cc && A.obj_query_async(obj, in.data(), in.size(), outlen, n, cc) == 0)
                drain_async(A, cc);
            break;
        }
    }
    // Newest first, as objects depend on older ones. Whatever stays pinned
    // (an mkey naming a umem ...) is released again once the context is
    // closed, which frees its handle.
    std::vector<mlx5dv_devx_obj*> pinned;
    for (auto it = objs.rbegin(); it != objs.rend(); ++it)
        if (A.obj_destroy(*it) != 0) pinned.push_back(*it);
    if (cc) A.destroy_cmd_comp(cc);
    std::vector<mlx5dv_devx_umem*> pinned_umems;
    for (auto* u : umems.reg)
        if (A.umem_dereg(u) != 0) pinned_umems.push_back(u);
    bool pd_left = pd && A.dealloc_pd(pd) != 0;
    FUZZ_CHECK(A.close_device(ctx) == 0, "closing the context failed");
    for (auto* o : pinned) FUZZ_CHECK(A.obj_destroy(o) == 0, "a handle outlived its closed context");
    for (auto* u : pinned_umems) FUZZ_CHECK(A.umem_dereg(u) == 0, "a umem outlived its closed context");
    if (pd_left) FUZZ_CHECK(A.dealloc_pd(pd) == 0, "a PD outlived its closed context");
    return 0;
}
