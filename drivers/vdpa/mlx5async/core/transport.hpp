// The transport objects: what one device's virtqs name that lives as long
// as the device, created at open and read-only after (any thread may read
// them): the protection domain, the transport domain and the TIS every TX
// virtq names in tisn_or_qpn (as DPDK's mlx5 vDPA creates them at device
// open), and the VAR doorbell page a frontend can map (host notifiers).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/base/result.hpp"
#include "common/devx/raii.hpp"

namespace mlx5async::core {

// The VAR doorbell page, freed through the DevxApi table.
struct VarDeleter {
    const devx::DevxApi* api = nullptr;
    void operator()(mlx5dv_var* v) const noexcept {
        if (v && api) api->free_var(v);
    }
};

class Transport {
public:
    // The PD, the TD and TIS in it, and the doorbell page when the device has one.
    static Result<Transport> open(const devx::Context& ctx, const std::string& name);
    Transport() = default;
    Transport(Transport&&) = default;
    Transport& operator=(Transport&&) = default;
    ~Transport() { reset(); }
    // The TIS before the PD it names, the PD last.
    void reset() noexcept;

    const devx::Pd& pd() const { return pd_; }
    uint32_t pdn() const { return pd_.pdn(); }
    uint32_t tisn() const { return tis_.obj_id(); }
    const mlx5dv_var* var() const { return var_.get(); }

private:
    devx::Pd pd_;
    devx::DevxObj td_;
    devx::DevxObj tis_;
    std::unique_ptr<mlx5dv_var, VarDeleter> var_;
};

}  // namespace mlx5async::core
