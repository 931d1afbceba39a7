// A futex on a 32-bit atomic word, for sleepers that several wakers reach
// with one system call: a condition variable wakes one thread per call, or
// all of them, and on one CPU each woken thread preempts the waker before
// its next call. The bitset forms let one call wake exactly the sleepers
// whose bits it names.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <mutex>

namespace mlx5async {

// Every sleeper's bits match.
inline constexpr uint32_t kFutexAnyBit = FUTEX_BITSET_MATCH_ANY;

// Sleeps while `word` holds `seen` (returns at once if it no longer does,
// and on any wake naming one of `bits`). The caller re-checks its condition.
inline void futex_wait(std::atomic<uint32_t>& word, uint32_t seen, uint32_t bits = kFutexAnyBit) noexcept {
    static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
    (void)syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_BITSET_PRIVATE, seen,
                  nullptr, nullptr, bits);
}

// Under `lk` (held again on return): sleeps on `word` as it reads under the
// lock, so that a waker who moves it on under the same lock is never missed.
inline void futex_wait_unlocked(std::unique_lock<std::mutex>& lk, std::atomic<uint32_t>& word,
                                uint32_t bits = kFutexAnyBit) noexcept {
    const uint32_t seen = word.load(std::memory_order_relaxed);
    lk.unlock();
    futex_wait(word, seen, bits);
    lk.lock();
}

// Wakes up to `n` sleepers on `word` whose bits meet `bits`.
inline void futex_wake(std::atomic<uint32_t>& word, unsigned n, uint32_t bits = kFutexAnyBit) noexcept {
    if (n == 0 || bits == 0) return;
    (void)syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_BITSET_PRIVATE,
                  int(std::min<unsigned>(n, INT_MAX)), nullptr, nullptr, bits);
}

}  // namespace mlx5async
