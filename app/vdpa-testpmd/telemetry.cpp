#include "telemetry.hpp"

#include <rte_telemetry.h>

#include <cerrno>
#include <cstring>

#include "emulator.hpp"

namespace vdpa_testpmd {
namespace {

App* g_telemetry_app = nullptr;  // telemetry callbacks carry no context

const Port* port_named(const char* name) {
    if (!g_telemetry_app || !name) return nullptr;
    for (const auto& p : g_telemetry_app->ports)
        if (p->name == name) return p.get();
    return nullptr;
}

int emu_objects(const char*, const char* params, struct rte_tel_data* d) {
    const Port* p = port_named(params);
    if (!p) return -EINVAL;
    const auto o = emulator_objects(*p);
    if (!o) return -ENOTSUP;
    rte_tel_data_start_dict(d);
    const struct {
        const char* name;
        uint32_t n;
    } fields[] = {{"pds", o->pds},       {"uars", o->uars},     {"umems", o->umems},
                  {"mkeys", o->mkeys},   {"counters", o->counters}, {"virtqs", o->virtqs},
                  {"cqs", o->cqs},       {"qps", o->qps},       {"sqs", o->sqs}};
    for (const auto& f : fields) rte_tel_data_add_dict_u64(d, f.name, f.n);
    return 0;
}

}  // namespace

void register_telemetry(App& app) {
    g_telemetry_app = &app;
    rte_telemetry_register_cmd("/vdpa_testpmd/emu_objects", emu_objects,
                               "The objects an emulated device holds. Parameters: device name");
}

}  // namespace vdpa_testpmd
