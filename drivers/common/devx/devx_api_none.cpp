// Built without rdma-core (meson: have_rdma_core false): there is no real
// backend, only the emulator and test fakes.
#include "devx_api.hpp"

namespace mlx5async::devx {

const DevxApi* rdma_core_api() noexcept { return nullptr; }

}  // namespace mlx5async::devx
