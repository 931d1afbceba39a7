// Host notifiers (VHOST_USER_PROTOCOL_F_HOST_NOTIFIER): vhost hands the
// frontend the doorbell page on the slave channel, and
// rte_vhost_host_notifier_ctrl() waits there for the frontend's reply.
// QEMU does not read the slave channel while it waits for an answer on the
// main one, e.g. to the GET_VRING_BASE it sends when it stops during our
// dev_conf: a vhost callback that made the call would wait for QEMU while
// QEMU waits for vhost. So the call runs on a thread of the device's
// (`mlx5a-notify`), never in a vhost callback.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>

namespace mlx5async::pmd {

struct PmdDevice;

class HostNotifiers {
public:
    explicit HostNotifiers(PmdDevice& dev);
    ~HostNotifiers();
    HostNotifiers(const HostNotifiers&) = delete;
    HostNotifiers& operator=(const HostNotifiers&) = delete;

    // dev_conf: set up every ring's notifier for `vid`; the ledger's start
    // `start_seq` gets notifiers_set when the frontend answered.
    void request(int vid, uint64_t start_seq);
    // dev_close: a request that has not started is dropped. A call already
    // waiting for the frontend goes on: it ends when the frontend answers
    // (once vhost answered its GET_VRING_BASE) or closes the channel.
    void cancel();
    // dev_cleanup: cancel(), then wait until no call runs, as vhost frees
    // the device after this. Logs while the frontend keeps it waiting.
    void wait_idle();

    uint64_t calls() const;  // calls made so far (tests)

private:
    struct Request {
        int vid;
        uint64_t start_seq;
    };
    void run(std::stop_token st);

    PmdDevice& dev_;
    mutable std::mutex mu_;  // protects pending_, running_, calls_
    std::condition_variable_any cv_;
    std::optional<Request> pending_;
    bool running_ = false;
    uint64_t calls_ = 0;
    std::jthread thread_;
};

}  // namespace mlx5async::pmd
