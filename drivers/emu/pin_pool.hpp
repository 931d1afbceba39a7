// Pinning and unpinning a umem's pages is host CPU work in the kernel
// (ib_umem_get / ib_umem_release), which every device of the host shares:
// the model books it on `pin_cpus` lanes of one pool per process, each
// command's pages on the lane free first, so concurrent starts of several
// devices compete for pinning as they would on a real host, while each
// device keeps its own firmware (slots, throttle, translation lanes).
// Devices on a manual clock (tests) each book on a pool of their own: their
// times do not share a time base with anyone's.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace mlx5async::emu {

class PinPool {
public:
    // The pool of every device on the steady clock.
    static PinPool& host();

    // When `work_ns` of pinning that may start at `start_ns` ends, on the
    // first of `cpus` lanes to be free (0 lanes: at once, every command on
    // a CPU of its own).
    int64_t book(int64_t start_ns, int64_t work_ns, uint32_t cpus);

private:
    std::mutex mu_;  // protects free_at_
    std::vector<int64_t> free_at_;  // per lane, when it is free again
};

}  // namespace mlx5async::emu
