// Used-buffer notifications ("interrupts") the device sends on each ring's
// callfd (vhost-user SET_VRING_CALL), counted per ring for the life of the
// process: the count of a ring survives stop, restart and reconnect, when
// the ring gets a new callfd. No thread: an eventfd adds up its writes until
// read, so reading on demand (before an answer, when a callfd is replaced)
// yields the same counts as a watcher thread would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vug {

class IrqCounter {
public:
    explicit IrqCounter(int nrings);
    ~IrqCounter();
    IrqCounter(const IrqCounter&) = delete;
    IrqCounter& operator=(const IrqCounter&) = delete;

    // The ring's callfd from now on (the caller owns it). detach() reads what
    // is pending on the current one first, so the caller may then close it.
    void attach(int ring, int callfd);
    void detach(int ring);

    // Reads every pending signal into the counts.
    void drain() { wait(0); }
    // Waits until ring's count reaches n (absolute) or timeout_ms passes;
    // signals of other rings arriving meanwhile are counted too.
    bool wait_for(int ring, uint64_t n, int timeout_ms);

    uint64_t count(int ring) const { return counts_[size_t(ring)]; }
    const std::vector<uint64_t>& counts() const { return counts_; }
    uint64_t total() const;

private:
    void wait(int timeout_ms);  // one epoll_wait, then reads what it reported
    void read_ring(int ring);

    int epfd_ = -1;
    std::vector<int> fds_;          // current callfd per ring, -1: none
    std::vector<uint64_t> counts_;  // sum of the eventfd values read per ring
};

}  // namespace vug
