#include "emulator.hpp"

#include <dlfcn.h>

#include <cerrno>
#include <mutex>

namespace vdpa_testpmd {
namespace {

struct Api {
    decltype(&mlx5emu_get_model) model = nullptr;
    decltype(&mlx5emu_ideal_ns) ideal_ns = nullptr;
    decltype(&mlx5emu_fault) fault = nullptr;
    decltype(&mlx5emu_get_objects) objects = nullptr;
};

// The plugin the PMD loaded, looked up once it is there (the PMD loads it
// at the first emu= probe).
const Api* api() {
    static std::mutex mu;  // guards a
    static Api a;
    std::lock_guard lk(mu);
    if (a.model) return &a;
    void* h = dlopen(MLX5EMU_SONAME, RTLD_NOW | RTLD_NOLOAD);
    if (!h) return nullptr;
    a.model = reinterpret_cast<decltype(a.model)>(dlsym(h, "mlx5emu_get_model"));
    a.ideal_ns = reinterpret_cast<decltype(a.ideal_ns)>(dlsym(h, "mlx5emu_ideal_ns"));
    a.fault = reinterpret_cast<decltype(a.fault)>(dlsym(h, "mlx5emu_fault"));
    a.objects = reinterpret_cast<decltype(a.objects)>(dlsym(h, "mlx5emu_get_objects"));
    dlclose(h);  // the PMD's reference keeps it loaded
    if (!a.model || !a.ideal_ns || !a.fault || !a.objects) a = {};
    return a.model ? &a : nullptr;
}

bool info_of(const Port& p, DevInfo& info) { return rte_pmd_mlx5async_get_dev_info(p.dev, &info) == 0; }

}  // namespace

std::optional<mlx5emu_model> emulator_model(const Port& p) {
    DevInfo info;
    const Api* a = api();
    mlx5emu_model m{};
    if (!a || !info_of(p, info) || a->model(info.backend_device, &m) != 0) return std::nullopt;
    return m;
}

uint64_t emulator_ideal_ns(const Port& p, rte_pmd_mlx5async_op op, uint32_t queues) {
    DevInfo info;
    const Api* a = api();
    if (!a || !info_of(p, info)) return 0;
    return a->ideal_ns(info.backend_device, op == RTE_PMD_MLX5ASYNC_OP_SUSPEND, queues, info.max_inflight);
}

int emulator_fault(const Port& p, const char* rule, std::string& why) {
    DevInfo info;
    const Api* a = api();
    mlx5emu_model m{};
    if (!a || !info_of(p, info) || a->model(info.backend_device, &m) != 0) return -ENOTSUP;
    char err[256] = "";
    int rc = a->fault(info.backend_device, rule, err, sizeof err);
    why = err;
    return rc;
}

std::optional<mlx5emu_objects> emulator_objects(const Port& p) {
    DevInfo info;
    const Api* a = api();
    mlx5emu_objects o{};
    if (!a || !info_of(p, info) || a->objects(info.backend_device, &o) != 0) return std::nullopt;
    return o;
}

}  // namespace vdpa_testpmd
