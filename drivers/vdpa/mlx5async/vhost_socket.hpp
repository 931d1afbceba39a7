// The vhost-user socket a device serves on when the devarg vhost_socket
// names one, as DPDK's net_vhost owns its `iface`: the driver registers
// it, attaches the device to it and starts it at probe, and unregisters it
// at remove. Any DPDK application that loads the driver (dpdk-testpmd,
// OVS-DPDK) then serves a VM with no vhost code of its own.
#pragma once

#include <memory>
#include <string>

#include "common/base/result.hpp"

struct rte_vdpa_device;

namespace mlx5async::pmd {

class VhostSocket {
public:
    // Registers `path` (with `client`, vhost connects to a frontend
    // listening there, and reconnects when it goes), attaches `vdpa` and
    // starts it. A failed step undoes the ones before it; the error names
    // the socket and the step.
    static Result<std::unique_ptr<VhostSocket>> open(const std::string& path, bool client,
                                                     rte_vdpa_device* vdpa);
    // Unregisters: vhost closes a live connection first (the device's
    // dev_close, then dev_cleanup) and, in server mode, removes the file.
    ~VhostSocket();
    VhostSocket(const VhostSocket&) = delete;
    VhostSocket& operator=(const VhostSocket&) = delete;

    const std::string& path() const { return path_; }
    bool client() const { return client_; }

private:
    VhostSocket(std::string path, bool client) : path_(std::move(path)), client_(client) {}

    std::string path_;
    bool client_;
};

}  // namespace mlx5async::pmd
