// Guest memory and split rings for the emulator's datapath tests: a local
// buffer reached only through mkeys (FakeGuest), the driver side of a ring
// (DriverRing: TX chains [12-byte header][payload], RX chains one 2 KiB
// writable descriptor), packet payloads with sequence numbers.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <span>
#include <thread>
#include <vector>

#include "common/prm/counters.hpp"
#include "emu/datapath/loopback.hpp"
#include "emu/datapath/split_ring.hpp"
#include "testkit/eventually.hpp"
#include "tools/vhost-user-guest/split_ring_driver.hpp"

namespace mlx5async::emu::test {

using dp::HostSpan;
using dp::kDescNext;
using dp::kDescWrite;
static_assert(dp::kDescNext == vug::kDescNext && dp::kDescWrite == vug::kDescWrite);
using dp::Translator;
using dp::WriteObserver;

inline constexpr uint32_t kMkey = 0x1234, kLogMkey = 0x5678;
inline constexpr uint64_t kBase = 0x100000, kLogBase = 0x7f0000000000;
inline constexpr size_t kMemBytes = 4 << 20;
inline constexpr uint64_t kQueueStride = 0x100000;  // per queue: rings, then buffers
inline constexpr uint16_t kSize = 256, kSlots = 128;
inline constexpr size_t kHdr = 12;

// Guest memory and the dirty bitmap, reachable only through their mkeys,
// each in a memfd as vhost-user hands them over (so a test can truncate
// one under the device).
struct FakeGuest {
    struct Pages {
        int fd = -1;
        size_t mapped = 0;
        std::span<std::byte> span;  // n bytes, page-aligned as memory a umem registers
        explicit Pages(size_t n) : mapped((n + 4095) & ~size_t(4095)) {
            fd = memfd_create("fake-guest", MFD_CLOEXEC);
            if (fd < 0 || ftruncate(fd, off_t(mapped)) != 0) std::abort();
            void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (p == MAP_FAILED) std::abort();
            span = {static_cast<std::byte*>(p), n};
        }
        ~Pages() {
            munmap(span.data(), mapped);
            close(fd);
        }
        // What a frontend can do to its memfd under the device.
        void truncate() { (void)!ftruncate(fd, 0); }
    };
    Pages mem_pages{kMemBytes};
    Pages log_pages{(kBase + kMemBytes) / 4096 / 8};
    std::span<std::byte> mem = mem_pages.span;
    std::span<std::byte> log = log_pages.span;
    FakeGuest() = default;
    FakeGuest(const FakeGuest&) = delete;
    std::atomic<uint64_t> writes{0};
    std::mutex mu;  // pages written (observer)
    std::condition_variable cv;
    std::set<uint64_t> pages;

    Result<std::vector<HostSpan>> tr(uint32_t mkey, uint64_t addr, size_t len) {
        std::byte* host;
        if (mkey == kMkey && addr >= kBase && addr + len <= kBase + mem.size() && addr + len >= addr)
            host = mem.data() + (addr - kBase);
        else if (mkey == kLogMkey && addr >= kLogBase && addr + len <= kLogBase + log.size())
            host = log.data() + (addr - kLogBase);
        else
            return fail(Errc::InvalidArgument, "outside registered memory");
        std::vector<HostSpan> v;  // split at 4 KiB boundaries, as umem pages
        while (len) {
            size_t n = std::min(len, 4096 - (reinterpret_cast<uintptr_t>(host) % 4096));
            v.push_back({host, n});
            host += n;
            len -= n;
        }
        return v;
    }
    Translator translator() {
        return [this](uint32_t k, uint64_t a, size_t l) { return tr(k, a, l); };
    }
    WriteObserver observer() {
        return [this](uint64_t a, size_t n) {
            std::lock_guard lk(mu);
            writes++;
            for (uint64_t p = a >> 12; p <= (a + n - 1) >> 12; ++p) pages.insert(p);
            cv.notify_all();
        };
    }
    std::byte* at(uint64_t gpa) { return mem.data() + (gpa - kBase); }
    template <typename T>
    T load(uint64_t gpa) {
        T v;
        std::memcpy(&v, at(gpa), sizeof v);
        return v;
    }
    template <typename T>
    void store(uint64_t gpa, T v) { std::memcpy(at(gpa), &v, sizeof v); }
    uint16_t load_idx(uint64_t gpa) {
        return std::atomic_ref<uint16_t>(*reinterpret_cast<uint16_t*>(at(gpa))).load(std::memory_order_acquire);
    }
    void store_idx(uint64_t gpa, uint16_t v) {
        std::atomic_ref<uint16_t>(*reinterpret_cast<uint16_t*>(at(gpa))).store(v, std::memory_order_release);
    }
    // Waits (bounded) until pred holds; re-checked after every device write.
    template <typename P>
    bool wait(P pred, std::chrono::seconds t = std::chrono::seconds(20)) {
        std::unique_lock lk(mu);
        return cv.wait_for(lk, t, pred);
    }
};

// The driver side of one split ring (tools/vhost-user-guest's
// SplitRingDriver, the one implementation) at a fixed layout per queue: TX
// chains are [12-byte header][payload] in two descriptors (2s, 2s+1); RX
// chains one 2 KiB writable descriptor.
struct DriverRing {
    FakeGuest& g;
    uint16_t queue;
    uint16_t avail = 0;  // driver's avail idx
    uint16_t seen = 0;   // used entries consumed
    vug::SplitRingDriver ring{[this](uint64_t gpa, uint64_t) { return reinterpret_cast<uint8_t*>(g.at(gpa)); },
                              desc(), avail_addr(), used(), kSize};
    DriverRing(FakeGuest& guest, uint16_t q) : g(guest), queue(q) {}
    uint64_t base() const { return kBase + queue * kQueueStride; }
    uint64_t desc() const { return base(); }
    uint64_t avail_addr() const { return base() + 0x1000; }
    uint64_t used() const { return base() + 0x2000; }
    uint64_t buf(uint16_t slot) const { return base() + 0x4000 + slot * 2048ull; }

    void put_desc(uint16_t i, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next) {
        ring.write_desc(i, vug::VringDesc{addr, len, flags, next});
    }
    void publish(uint16_t head) {
        ring.push_avail(head);
        ring.publish();
        avail = ring.next_avail();
    }
    bool full() const { return uint16_t(avail - seen) >= kSlots; }
    // hdr: the virtio-net header (all zero: no offload asked).
    void post_tx(std::span<const std::byte> payload, const std::array<std::byte, kHdr>& hdr = {}) {
        uint16_t s = avail % kSlots;
        std::memcpy(g.at(buf(s)), hdr.data(), kHdr);
        std::memcpy(g.at(buf(s) + 64), payload.data(), payload.size());
        put_desc(2 * s, buf(s), kHdr, kDescNext, 2 * s + 1);
        put_desc(2 * s + 1, buf(s) + 64, uint32_t(payload.size()), 0, 0);
        publish(2 * s);
    }
    void post_rx(uint32_t len = 2048) {
        uint16_t s = avail % kSlots;
        put_desc(2 * s, buf(s), len, kDescWrite, 0);
        publish(2 * s);
    }
    uint16_t used_idx() { return ring.used_idx(); }
    // Used element i: (id, len).
    std::pair<uint32_t, uint32_t> elem(uint16_t i) {
        auto e = ring.used_elem(i);
        return {e.id, e.len};
    }
    prm::VirtqAttr attr() const {
        prm::VirtqAttr a;
        a.queue_index = queue;
        a.queue_size = kSize;
        a.virtio_version_1_0 = true;
        a.virtio_q_mkey = kMkey;
        a.desc_addr = desc();
        a.available_addr = avail_addr();
        a.used_addr = used();
        return a;
    }
};

inline std::vector<std::byte> payload(uint32_t seq, size_t len) {
    std::vector<std::byte> p(len);
    for (size_t i = 0; i < len; ++i) p[i] = std::byte((seq * 7 + i) & 0xff);
    if (len >= 4) std::memcpy(p.data(), &seq, 4);
    return p;
}

using mlx5async::testing::eventually;

// One guest's RX ring (queue 0) and TX ring (queue 1) with the loopback's
// per-queue state for each, as the loopback tests start from.
struct LoopbackRings {
    FakeGuest g;
    DriverRing rx{g, 0}, tx{g, 1};
    prm::VirtqAttr rxa = rx.attr(), txa = tx.attr();
    prm::VirtqCounters rxc, txc;
    WriteObserver obs = g.observer();
    dp::QueueIo txio{txa, txc, &obs}, rxio{rxa, rxc, &obs};
    Translator tr = g.translator();
};

}  // namespace mlx5async::emu::test
