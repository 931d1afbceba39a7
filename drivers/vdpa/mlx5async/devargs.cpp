// Devargs: split with rte_kvargs, validated by core::parse_device_config.
#include "devargs.hpp"

#include <rte_kvargs.h>

namespace mlx5async::pmd {

Result<core::DeviceConfig> parse_devargs(const char* args) {
    core::KeyValues kv;
    if (args && *args) {
        // NULL valid-keys: accept everything here so the core can name an
        // unknown key in its error instead of a bare parse failure.
        rte_kvargs* parsed = rte_kvargs_parse(args, nullptr);
        if (!parsed)
            return fail(Errc::InvalidArgument, std::string("devargs '") + args +
                                                   "': not a list of key=value pairs");
        for (unsigned i = 0; i < parsed->count; i++) {
            const rte_kvargs_pair& p = parsed->pairs[i];
            kv.emplace_back(p.key ? p.key : "", p.value ? p.value : "");
        }
        rte_kvargs_free(parsed);
    }
    return core::parse_device_config(kv);
}

}  // namespace mlx5async::pmd
