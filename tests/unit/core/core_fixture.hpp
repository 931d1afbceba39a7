// The device core over mlx5emu (zero latency) for the core's unit tests:
// a device with pre-created virtqs, guests with rings in real memory.
#pragma once

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>
#include <string>
#include <vector>

#include "emu/emu.hpp"
#include "testkit/eventually.hpp"
#include "testkit/linked_emulator.hpp"
#include "vdpa/mlx5async/core/device.hpp"

namespace mlx5async::core::testing_support {

inline constexpr const char* kFast =
    ",modify_us=0,query_us=0,create_us=0,destroy_us=0,umem_us=0,general_us=0,pin_ns=0,unpin_ns=0,mtt_ns=0,mkey_us=0";

// Guest RAM: the virtqs' mkey makes it reachable by the emulated datapath,
// so it must be real memory (1 GiB reserved, pages appear when touched).
inline uint64_t guest_ram() {
    static void* p = mmap(nullptr, 1ull << 30, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    EXPECT_NE(p, MAP_FAILED);
    return uint64_t(uintptr_t(p));
}

inline std::string unique_name() {
    static std::atomic<int> n{0};
    return "coretest" + std::to_string(n++);
}

inline constexpr uint64_t kBufGpa = 0x4000000;  // packet buffers, clear of the rings
inline constexpr uint16_t kDescWrite = 2;

// A split ring in guest RAM seen from the guest side (virtio 1.x §2.7).
struct GuestRing {
    const VringConfig& v;
    template <typename T>
    T* at(uint64_t gpa) const { return reinterpret_cast<T*>(uintptr_t(guest_ram() + gpa)); }
    // The device reads avail->flags concurrently: one atomic store.
    void set_avail_flags(uint16_t f) const { __atomic_store_n(at<uint16_t>(v.avail_gpa), f, __ATOMIC_RELEASE); }
    uint16_t avail_idx() const { return __atomic_load_n(at<uint16_t>(v.avail_gpa + 2), __ATOMIC_ACQUIRE); }
    uint16_t used_idx() const { return __atomic_load_n(at<uint16_t>(v.used_gpa + 2), __ATOMIC_ACQUIRE); }
    // One single-descriptor chain at the next avail slot (descriptor = slot).
    void post(uint64_t buf, uint32_t len, uint16_t flags) const {
        uint16_t idx = avail_idx();
        uint16_t d = uint16_t(idx % v.size);
        std::byte* desc = at<std::byte>(v.desc_gpa + 16ull * d);
        std::memcpy(desc, &buf, 8);
        std::memcpy(desc + 8, &len, 4);
        std::memcpy(desc + 12, &flags, 2);
        std::memset(desc + 14, 0, 2);
        at<uint16_t>(v.avail_gpa + 4)[d] = d;
        __atomic_store_n(at<uint16_t>(v.avail_gpa + 2), uint16_t(idx + 1), __ATOMIC_RELEASE);
    }
};

// `rings` rings of 256 entries (no memory table): ring i at 0x100000 + i *
// 64 KiB, its indexes avail0 + i.
inline GuestConfig guest_rings(uint32_t rings, uint16_t avail0 = 0) {
    GuestConfig g;
    g.features = vfeat::VERSION_1 | vfeat::MQ;
    for (uint16_t i = 0; i < rings; i++) {
        VringConfig v;
        v.index = i;
        v.size = 256;
        v.desc_gpa = 0x100000 + i * 0x10000;
        v.avail_gpa = v.desc_gpa + 0x1000;
        v.used_gpa = v.desc_gpa + 0x2000;
        v.last_avail_idx = uint16_t(avail0 + i);
        v.last_used_idx = uint16_t(avail0 + i);
        g.vrings.push_back(v);
    }
    return g;
}

// A sparse memfd mapped shared, as QEMU's guest RAM.
struct SparseGuest {
    explicit SparseGuest(uint64_t bytes) : bytes(bytes) {
        fd = memfd_create("core-test-guest", MFD_CLOEXEC);
        EXPECT_GE(fd, 0);
        EXPECT_EQ(ftruncate(fd, off_t(bytes)), 0);
        void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
        EXPECT_NE(p, MAP_FAILED);
        base = uint64_t(uintptr_t(p));
    }
    ~SparseGuest() {
        munmap(reinterpret_cast<void*>(base), bytes);
        close(fd);
    }
    SparseGuest(const SparseGuest&) = delete;
    SparseGuest& operator=(const SparseGuest&) = delete;
    uint64_t bytes, base = 0;
    int fd = -1;
};

struct Fixture : ::testing::Test {
    std::unique_ptr<Device> dev;
    std::string name;
    EventMode event_mode = EventMode::Irq;
    uint32_t timeout_ms = 2000;  // DeviceConfig's, from the end of open() on
    uint32_t start_attempts = 3;  // DeviceConfig's
    std::string emu_extra;       // appended to the emulator spec
    AnnounceConfig announce;     // DeviceConfig's

    void open(const std::string& profile, uint32_t queues, uint32_t max_inflight = 16,
              Strategy s = Strategy::Async) {
        DeviceConfig c;
        c.error_window_ms = 3600 * 1000;  // the rate limit must not depend on test speed
        c.emu_spec = profile + kFast + emu_extra;
        // The device opens with the default deadline: a fault test's short
        // one is for the faults, not for creating every virtq on a loaded
        // machine under a sanitizer.
        c.start_attempts = start_attempts;
        c.queues = queues;
        c.queue_size = 256;
        c.max_inflight = max_inflight;
        c.strategy = s;
        c.event_mode = event_mode;
        c.announce = announce;
        name = unique_name();
        auto d = Device::open(c, name);
        // Thrown, not ASSERTed: the test must stop here, not go on without a device.
        if (!d) throw std::runtime_error("Device::open: " + to_string(d.error()));
        dev = std::move(*d);
        if (auto r = dev->set_timeout_ms(timeout_ms); !r)
            throw std::runtime_error("set_timeout_ms: " + to_string(r.error()));
    }
    emu::Device& emu_dev() { return *emu::find_device(name + "-emu"); }
    // A fault rule on the device's emulator (emu::inject_fault).
    Result<void> emu_fault(std::string_view rule) { return emu::inject_fault(name + "-emu", rule); }

    // No memory table: control-path tests keep virtio_q_mkey 0, so the
    // emulated datapath never reads these (unwritten) rings.
    GuestConfig guest(uint32_t rings, uint16_t avail0 = 0) { return guest_rings(rings, avail0); }
    // The same rings in real guest RAM (one 1 GiB region), their avail/used
    // idx written to match vhost's indexes so the datapath finds them idle.
    GuestConfig guest_in_ram(uint32_t rings) {
        GuestConfig g = guest(rings);
        g.mem.push_back({0, 1ull << 30, guest_ram()});
        seed_rings(g);
        return g;
    }
    static void seed_rings(const GuestConfig& g) {
        auto host = [&](uint64_t gpa) -> uint16_t* {
            for (const auto& r : g.mem)
                if (gpa >= r.guest_phys_addr && gpa < r.guest_phys_addr + r.size)
                    return reinterpret_cast<uint16_t*>(uintptr_t(r.host_addr + gpa - r.guest_phys_addr));
            return nullptr;
        };
        for (const auto& v : g.vrings) {
            host(v.avail_gpa)[0] = 0;                 // avail->flags: interrupts wanted
            host(v.avail_gpa)[1] = v.last_avail_idx;  // avail->idx (little-endian host)
            host(v.used_gpa)[1] = v.last_used_idx;    // used->idx
        }
    }
    void enable_all(uint32_t rings) {
        for (uint16_t i = 0; i < rings; i++) dev->set_vring_state(i, true);
    }
    std::vector<VqPhase> phases(uint32_t rings) {
        std::vector<VqPhase> p;
        auto v = dev->vq_info();
        for (uint32_t i = 0; i < rings; i++) p.push_back(v[i].phase);
        return p;
    }
    // A device-side condition a test cannot be woken for (a late command landing).
    template <typename P>
    static bool eventually(P pred) { return mlx5async::testing::eventually(pred); }
    // The device holds this many umems and mkeys, once the releases and late
    // commands under way have ended.
    ::testing::AssertionResult memory_objects_are(size_t umems, size_t mkeys) {
        if (eventually([&] {
                auto c = emu_dev().object_counts();
                return c.umems == umems && c.mkeys == mkeys;
            }))
            return ::testing::AssertionSuccess();
        auto c = emu_dev().object_counts();
        return ::testing::AssertionFailure() << "umems " << c.umems << " (want " << umems << "), mkeys "
                                             << c.mkeys << " (want " << mkeys << ")";
    }
    emu::VirtqInfo fw(uint16_t ring) {
        auto v = dev->vq_info();
        auto i = emu_dev().virtq_info(v[ring].obj_id);
        EXPECT_TRUE(i);
        return i ? *i : emu::VirtqInfo{};
    }
};

// A TX packet on ring 1 of `g`: a zero virtio-net header, then an Ethernet
// frame of `type` whose payload is an IPv4 ARP from `spa` for `tpa` (or
// zeros), looped back to ring 0; waits until both rings used it.
inline void send_frame(Fixture& f, const GuestConfig& g, uint16_t type, uint32_t spa, uint32_t tpa) {
    GuestRing rx{g.vrings[0]}, tx{g.vrings[1]};
    std::byte* buf = tx.at<std::byte>(kBufGpa + 4096);
    std::memset(buf, 0, 12 + 60);
    std::byte* eth = buf + 12;
    std::memset(eth, 0xff, 6);
    eth[12] = std::byte(type >> 8);
    eth[13] = std::byte(type & 0xff);
    const uint8_t arp[8] = {0, 1, 8, 0, 6, 4, 0, 1};
    std::memcpy(eth + 14, arp, sizeof arp);
    for (int i = 0; i < 4; i++) {
        eth[14 + 14 + i] = std::byte(spa >> (24 - 8 * i));
        eth[14 + 24 + i] = std::byte(tpa >> (24 - 8 * i));
    }
    const uint16_t rx_used = rx.used_idx(), tx_used = tx.used_idx();
    rx.post(kBufGpa, 2048, kDescWrite);
    tx.post(kBufGpa + 4096, 12 + 60, 0);
    ASSERT_TRUE(f.emu_dev().kick(f.dev->vq_info()[1].obj_id));
    ASSERT_TRUE(Fixture::eventually([&] {
        return rx.used_idx() == uint16_t(rx_used + 1) && tx.used_idx() == uint16_t(tx_used + 1);
    }));
}

}  // namespace mlx5async::core::testing_support
