// The PMD's per-device record: the vdev, its vdpa registration and the
// DPDK-free device core, plus the vhost-side facts the glue tracks.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "vdpa/mlx5async/core/device.hpp"

struct rte_vdev_device;
struct rte_vdpa_device;

namespace mlx5async::pmd {

class VringStateCoalescer;
class HostNotifiers;
class VhostSocket;

struct PmdDevice {
    rte_vdev_device* vdev = nullptr;
    rte_vdpa_device* vdpa = nullptr;
    std::unique_ptr<core::Device> core;
    // The vhost connection the device serves: the one whose dev_conf took
    // it, until that connection's dev_cleanup (-1: none). vhost attaches
    // every connection of the socket to the device.
    std::atomic<int> vid{-1};
    std::atomic<bool> configured{false};
    std::unique_ptr<VringStateCoalescer> coalescer;
    std::unique_ptr<HostNotifiers> notifiers;  // null without a doorbell page
    // The vhost-user socket the driver serves the device on (devarg
    // vhost_socket); null: the application attaches the device itself.
    std::unique_ptr<VhostSocket> socket;
    // Connections the device does not serve (yet): the ring enables each
    // asked for, applied when its dev_conf takes the device.
    std::mutex waiting_mu;  // protects waiting
    std::map<int, std::map<uint16_t, bool>> waiting;
    // Counter baselines for reset_stats, per virtq (survive reconfiguration).
    std::mutex stats_mu;
    std::vector<prm::VirtqCounters> stats_base;
};

// Registry (probe adds, remove erases). Lookups return nullptr when absent.
PmdDevice* find_device(const rte_vdpa_device* vdpa);
PmdDevice* find_device_by_vid(int vid);
PmdDevice* find_device_by_name(const char* name);
// Every probed device, in probe order (telemetry).
std::vector<PmdDevice*> all_devices();

}  // namespace mlx5async::pmd
