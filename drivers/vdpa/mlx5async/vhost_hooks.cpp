#include "vhost_hooks.hpp"

#include <rte_vhost.h>

#include <cstring>

#include "common/base/vhost_user.hpp"
#include "common/devx/error_log.hpp"
#include "common/prm/status.hpp"
#include "log.hpp"
#include "pmd_device.hpp"
#include "vdpa/mlx5async/core/vfeatures.hpp"

namespace mlx5async::pmd {
namespace {

using vhost_user::MsgHeader;

// vhost hands the hooks its message context, whose first member is the
// message: its header, then the payload.
rte_vhost_msg_result after_message(int vid, void* msg) noexcept {
    MsgHeader h;
    std::memcpy(&h, msg, sizeof h);
    if (h.request != vhost_user::SET_FEATURES && h.request != vhost_user::SET_LOG_BASE) return RTE_VHOST_MSG_RESULT_NOT_HANDLED;
    PmdDevice* d = find_device_by_vid(vid);
    if (!d || d->vid.load() != vid) return RTE_VHOST_MSG_RESULT_NOT_HANDLED;  // not served
    if (h.request == vhost_user::SET_FEATURES) {
        uint64_t features = 0;
        std::memcpy(&features, static_cast<const std::byte*>(msg) + sizeof h, sizeof features);
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

const rte_vhost_user_extern_ops kHooks = {nullptr, after_message};

}  // namespace

void watch_messages(int vid) { rte_vhost_extern_callback_register(vid, &kHooks, nullptr); }

Result<core::DirtyLog> vhost_dirty_log(int vid) {
    uint64_t base = 0, size = 0;
    if (rte_vhost_get_log_base(vid, &base, &size) != 0)
        return fail(Errc::NotFound, "vhost device " + std::to_string(vid) + " is gone");
    if (!base || !size) return fail(Errc::State, "LOG_ALL without a log (no SET_LOG_BASE from the frontend)");
    return core::DirtyLog{base, size, 12};  // vhost logs in 4 KiB pages
}

}  // namespace mlx5async::pmd
