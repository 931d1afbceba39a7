#include "vhost_hooks.hpp"

// vhost's message context (lib/vhost/vhost_user.h, from the driver SDK):
// the layout it hands extern message hooks, fds included. It names the
// uapi's vring structs, whose legacy C helpers C++ cannot compile.
#define VIRTIO_RING_NO_LEGACY
#include <linux/vhost.h>
#include <rte_vhost.h>
#include <unistd.h>
#include <vhost_user.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "common/base/file_backing.hpp"
#include "common/devx/error_log.hpp"
#include "common/prm/status.hpp"
#include "log.hpp"
#include "pmd_device.hpp"
#include "vdpa/mlx5async/core/vfeatures.hpp"

namespace mlx5async::pmd {
namespace {

// SEND_RARP (QEMU's announce of a guest without GUEST_ANNOUNCE, once
// per round): the device sends the RARP from the MAC the message names, in
// its first 6 bytes. It may come before the device's first start on this
// connection. vhost's own use of it (a RARP handed to the application at
// its next dequeue) never happens for a vDPA device.
rte_vhost_msg_result send_rarp(int vid, const VhostUserMsg& m) {
    PmdDevice* d = find_device_by_vid(vid);
    if (!d) return RTE_VHOST_MSG_RESULT_NOT_HANDLED;
    const int served = d->vid.load();
    if (served != vid && served != -1) return RTE_VHOST_MSG_RESULT_NOT_HANDLED;  // another frontend's
    uint8_t b[8];
    std::memcpy(b, &m.payload.u64, sizeof b);
    core::MacAddr mac = 0;
    for (int i = 0; i < 6; i++) mac = (mac << 8) | b[i];
    if (!d->core->announces())
        MLX5A_LOG(WARNING, "vid %d: SEND_RARP from %s: %s does not announce (devarg announce=off)", vid,
                  core::mac_string(mac).c_str(), d->core->name().c_str());
    d->core->frontend_rarp(mac);
    return RTE_VHOST_MSG_RESULT_NOT_HANDLED;
}

// vhost hands the hooks its message context (vhu_msg_context): the
// message, then the fds that came with it.
rte_vhost_msg_result after_message(int vid, void* msg) noexcept {
    const VhostUserMsg& m = static_cast<const vhu_msg_context*>(msg)->msg;
    const uint32_t request = m.request.master;
    if (request == VHOST_USER_SEND_RARP) return send_rarp(vid, m);
    if (request != VHOST_USER_SET_FEATURES && request != VHOST_USER_SET_LOG_BASE &&
        request != VHOST_USER_SET_VRING_BASE)
        return RTE_VHOST_MSG_RESULT_NOT_HANDLED;
    PmdDevice* d = find_device_by_vid(vid);
    if (!d || d->vid.load() != vid) return RTE_VHOST_MSG_RESULT_NOT_HANDLED;  // not served
    if (request == VHOST_USER_SET_VRING_BASE) {  // dev_conf reads the bases set before it
        if (m.payload.state.index < d->core->max_virtqs())
            d->core->frontend_set_base(uint16_t(m.payload.state.index));
        return RTE_VHOST_MSG_RESULT_NOT_HANDLED;
    }
    if (request == VHOST_USER_SET_FEATURES) {
        const uint64_t features = m.payload.u64;
        if (!(features & core::vfeat::LOG_ALL) || d->core->dirty_logging())
            return RTE_VHOST_MSG_RESULT_NOT_HANDLED;
        MLX5A_LOG(ERR, "vid %d: SET_FEATURES: LOG_ALL refused: %s is not logging dirty pages", vid,
                  d->core->name().c_str());
        return RTE_VHOST_MSG_RESULT_ERR;
    }
    if (!d->core->dirty_logging()) return RTE_VHOST_MSG_RESULT_NOT_HANDLED;  // taken at LOG_ALL
    auto log = vhost_dirty_log(vid);
    auto r = log ? d->core->set_dirty_logging(true, *log) : Result<void>(unexpected(log.error()));
    if (r) return RTE_VHOST_MSG_RESULT_NOT_HANDLED;
    MLX5A_LOG(ERR, "vid %d: SET_LOG_BASE: %s cannot log into the new log: %s; closing the connection",
              vid, d->core->name().c_str(), devx::describe_once(r.error()).c_str());
    return RTE_VHOST_MSG_RESULT_ERR;
}

std::string hex(uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "%#" PRIx64, v);
    return b;
}

// Why a memory table's file cannot back what it says to map: vhost maps
// each region from offset 0 to mmap_offset + size, and a page past the
// file's end kills the process at its first access (vhost itself reads a
// ring's used index at SET_VRING_KICK). A short log is vhost's to map and
// the device's to refuse (after_message, dev_close): vhost never touches
// it for a vDPA device.
std::optional<std::string> short_backing(const vhu_msg_context& ctx) {
    const VhostUserMsg& m = ctx.msg;
    const int fd_num = ctx.fd_num;  // a copy: the context is packed
    if (m.request.master == VHOST_USER_SET_MEM_TABLE) {
        uint32_t n = std::min<uint32_t>({m.payload.memory.nregions, uint32_t(std::max(fd_num, 0)),
                                         VHOST_MEMORY_MAX_NREGIONS});
        for (uint32_t i = 0; i < n; i++) {
            VhostUserMemoryRegion r = m.payload.memory.regions[i];
            auto ok = check_file_covers(ctx.fds[i], r.mmap_offset, r.memory_size);
            if (!ok)
                return "SET_MEM_TABLE: region " + std::to_string(i) + " (guest address " +
                       hex(r.guest_phys_addr) + ", " + std::to_string(r.memory_size) + " bytes): " +
                       ok.error().what;
        }
    }
    return std::nullopt;
}

// Postcopy: the destination VM runs before its RAM has arrived, each
// missing page fetched when touched (userfaultfd). The device's DMA to the
// guest takes no page fault, so it would write into pages the migration
// later overwrites: refused, whatever the frontend negotiated (the driver
// never offers PAGEFAULT).
std::optional<std::string> postcopy(const vhu_msg_context& ctx, int vid) {
    const uint32_t request = ctx.msg.request.master;
    const char* what = request == VHOST_USER_POSTCOPY_ADVISE  ? "POSTCOPY_ADVISE"
                       : request == VHOST_USER_POSTCOPY_LISTEN ? "POSTCOPY_LISTEN"
                       : request == VHOST_USER_POSTCOPY_END    ? "POSTCOPY_END"
                                                               : nullptr;
    if (!what) return std::nullopt;
    PmdDevice* d = find_device_by_vid(vid);
    return std::string(what) + ": postcopy refused: " + (d ? d->core->name() : std::string("the device")) +
           " is a vDPA device, whose DMA cannot fault in guest pages that have not arrived yet "
           "(VHOST_USER_PROTOCOL_F_PAGEFAULT is not offered): migrate with precopy";
}

// Before vhost handles a message: a file that cannot back its mapping, or
// a postcopy message, refuses the message (a REPLY_ACK carries 1; without
// one vhost closes the connection), its fds closed here since vhost's
// handler never sees them.
rte_vhost_msg_result before_message(int vid, void* msg) noexcept {
    auto* ctx = static_cast<vhu_msg_context*>(msg);
    auto why = postcopy(*ctx, vid);
    if (!why) why = short_backing(*ctx);
    if (!why) return RTE_VHOST_MSG_RESULT_NOT_HANDLED;
    MLX5A_LOG(ERR, "vid %d: %s; the message is refused", vid, why->c_str());
    const int fd_num = std::min<int>(ctx->fd_num, VHOST_MEMORY_MAX_NREGIONS);
    for (int i = 0; i < fd_num; i++)
        if (ctx->fds[i] >= 0) close(ctx->fds[i]);
    ctx->fd_num = 0;
    return RTE_VHOST_MSG_RESULT_ERR;
}

const rte_vhost_user_extern_ops kHooks = {before_message, after_message};

}  // namespace

void watch_messages(int vid) { rte_vhost_extern_callback_register(vid, &kHooks, nullptr); }

int watch_new_connection(int vid) noexcept {
    watch_messages(vid);
    return 0;
}

Result<core::DirtyLog> vhost_dirty_log(int vid) {
    uint64_t base = 0, size = 0;
    if (rte_vhost_get_log_base(vid, &base, &size) != 0)
        return fail(Errc::NotFound, "vhost device " + std::to_string(vid) + " is gone");
    if (!base || !size) return fail(Errc::State, "LOG_ALL without a log (no SET_LOG_BASE from the frontend)");
    return core::DirtyLog{base, size, 12};  // vhost logs in 4 KiB pages
}

}  // namespace mlx5async::pmd
