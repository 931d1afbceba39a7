// umem registration, PD, UAR and VAR (doorbell pages).
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <thread>
#include <utility>
#include <vector>

#include "emu/host_pin.hpp"
#include "emu_fixture.hpp"

namespace mlx5async::emu::test {
namespace {

using prm::VirtqState;

using Umem = EmuTest;

TEST_F(Umem, RegistrationRemembersHostRange) {
    std::vector<std::byte> mem(12288);
    auto* u = A.umem_reg(ctx_, mem.data(), mem.size(), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(u, nullptr);
    auto info = dev_->umem_info(u->umem_id);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->addr, uint64_t(uintptr_t(mem.data())));
    EXPECT_EQ(info->size, mem.size());
    EXPECT_EQ(info->refs, 0u);
    uint32_t id = u->umem_id;
    EXPECT_EQ(A.umem_dereg(u), 0);
    EXPECT_FALSE(dev_->umem_info(id));  // stale id
}

// A memfd mapped twice: the registering process's view and a witness.
struct Memfd {
    explicit Memfd(uint64_t file_bytes) : bytes(file_bytes) {
        fd = memfd_create("umem-test", MFD_CLOEXEC);
        EXPECT_GE(fd, 0);
        EXPECT_EQ(ftruncate(fd, off_t(bytes)), 0);
    }
    ~Memfd() {
        for (auto [p, n] : maps) munmap(p, n);
        close(fd);
    }
    std::byte* map(uint64_t len) {
        void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
        EXPECT_NE(p, MAP_FAILED);
        maps.emplace_back(p, len);
        return static_cast<std::byte*>(p);
    }
    void unmap(std::byte* p) {
        std::erase_if(maps, [&](auto& m) {
            if (m.first != p) return false;
            munmap(m.first, m.second);
            return true;
        });
    }
    int fd = -1;
    uint64_t bytes;
    std::vector<std::pair<void*, size_t>> maps;
};

// As a pinned umem: the pages stay the device's after the process unmaps
// its view (vhost does at every SET_LOG_BASE), and they are the file's.
TEST_F(Umem, SharedMemoryStaysReachableAfterTheProcessUnmapsIt) {
    Memfd f(1 << 16);
    std::byte* mine = f.map(f.bytes);
    std::byte* witness = f.map(f.bytes);
    auto* u = A.umem_reg(ctx_, mine + 4096, 8192, IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(u, nullptr);
    auto info = dev_->umem_info(u->umem_id);
    ASSERT_TRUE(info);
    EXPECT_TRUE(info->own_view);
    EXPECT_EQ(info->addr, uint64_t(uintptr_t(mine + 4096)));
    f.unmap(mine);
    auto* device = reinterpret_cast<volatile uint8_t*>(uintptr_t(info->device_addr));
    device[5] = 0xa5;  // where the device would write
    EXPECT_EQ(uint8_t(witness[4096 + 5]), 0xa5);
    witness[4096 + 8191] = std::byte{0x3c};
    EXPECT_EQ(device[8191], 0x3c);
    EXPECT_EQ(A.umem_dereg(u), 0);
}

// vhost replaces its log at every SET_LOG_BASE: a new mapping, then the old
// one unmapped, its addresses free for the next mmap. A registration racing
// that either fails (EFAULT) or holds its own view of the file's pages; it
// never uses a shared range in place, which the device would fault on once
// the range is unmapped.
TEST_F(Umem, RegistrationRacingAnUnmapFailsOrHoldsItsOwnView) {
    Memfd f(8192);
    std::atomic<uintptr_t> current{uintptr_t(f.map(8192))};
    std::atomic<bool> done{false};
    std::thread vhost([&] {
        while (!done.load()) {
            void* next = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
            ASSERT_NE(next, MAP_FAILED);
            void* old = reinterpret_cast<void*>(current.exchange(uintptr_t(next)));
            munmap(old, 8192);
        }
    });
    unsigned pinned = 0, refused = 0;
    for (int i = 0; i < 4000; i++) {
        auto* u = A.umem_reg(ctx_, reinterpret_cast<void*>(current.load()), 8192, IBV_ACCESS_LOCAL_WRITE);
        if (!u) {
            EXPECT_EQ(errno, EFAULT);
            refused++;
            continue;
        }
        auto info = dev_->umem_info(u->umem_id);
        ASSERT_TRUE(info);
        EXPECT_TRUE(info->own_view) << "registration " << i << " uses a shared range in place";
        pinned++;
        EXPECT_EQ(A.umem_dereg(u), 0);
    }
    done = true;
    vhost.join();
    munmap(reinterpret_cast<void*>(current.load()), 8192);
    f.maps.clear();  // unmapped above, by the thread or here
    EXPECT_EQ(pinned + refused, 4000u);
    EXPECT_GT(pinned, 0u);
}

// The kernel cannot pin pages the process has not mapped, nor pages of a
// file mapping beyond the end of the file: EFAULT, and the device never
// faults on them later.
TEST_F(Umem, UnmappedInaccessibleOrPastTheFileIsEfault) {
    // Below mmap_min_addr nothing is ever mapped.
    errno = 0;
    EXPECT_EQ(A.umem_reg(ctx_, reinterpret_cast<void*>(0x1000), 0x2000, 0), nullptr);
    EXPECT_EQ(errno, EFAULT);
    // A page the process may not read (or not write, for a writable umem).
    auto* p = static_cast<char*>(
        mmap(nullptr, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(p, MAP_FAILED);
    mprotect(p + 4096, 4096, PROT_NONE);
    errno = 0;
    EXPECT_EQ(A.umem_reg(ctx_, p, 3 * 4096, 0), nullptr);
    EXPECT_EQ(errno, EFAULT);
    mprotect(p + 4096, 4096, PROT_READ);
    errno = 0;
    EXPECT_EQ(A.umem_reg(ctx_, p, 3 * 4096, IBV_ACCESS_LOCAL_WRITE), nullptr);
    EXPECT_EQ(errno, EFAULT);
    auto* ro = A.umem_reg(ctx_, p, 3 * 4096, 0);  // the device only reads
    EXPECT_NE(ro, nullptr);
    if (ro) {
        EXPECT_EQ(A.umem_dereg(ro), 0);
    }
    munmap(p, 3 * 4096);

    Memfd f(1 << 16);
    std::byte* beyond = f.map(4 * f.bytes);  // mapping longer than the file
    char files[80];
    std::snprintf(files, sizeof files, "/proc/self/map_files/%lx-%lx", uintptr_t(beyond),
                  uintptr_t(beyond + 4 * f.bytes));
    if (access(files, R_OK) != 0)
        GTEST_SKIP() << "telling a file's size from its mapping needs CAP_SYS_ADMIN (" << files << ")";
    errno = 0;
    EXPECT_EQ(A.umem_reg(ctx_, beyond, 2 * f.bytes, 0), nullptr);
    EXPECT_EQ(errno, EFAULT);
    auto* inside = A.umem_reg(ctx_, beyond, f.bytes, 0);
    EXPECT_NE(inside, nullptr);
    if (inside) {
        EXPECT_EQ(A.umem_dereg(inside), 0);
    }
}

// Registration reads no page: a 1 TiB sparse memfd registers and stays
// sparse.
TEST_F(Umem, TerabyteSparseMemfdRegistersWithoutTouchingPages) {
    constexpr uint64_t kTiB = 1ull << 40;
    Memfd f(kTiB);
    std::byte* p = f.map(kTiB);
    auto* u = A.umem_reg(ctx_, p, kTiB, IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(u, nullptr);
    auto info = dev_->umem_info(u->umem_id);
    ASSERT_TRUE(info);
    EXPECT_TRUE(info->own_view);
    struct stat st {};
    ASSERT_EQ(fstat(f.fd, &st), 0);
    EXPECT_EQ(st.st_blocks, 0);  // no page of the file was allocated
    EXPECT_EQ(A.umem_dereg(u), 0);
}

// The cost model's page count (pinning, MTT entries): the kernel's pages for
// a memfd, or the pages `shared_page` models a hugepage guest with; private
// memory (the driver's own buffers) always in the kernel's.
TEST_F(Umem, PagesCountInTheSharedPageSizeAsked) {
    constexpr uint64_t kSize = 64ull << 20;
    Memfd f(kSize);
    const uint64_t addr = uint64_t(uintptr_t(f.map(kSize)));
    for (uint64_t page : {0ull, 4096ull, 2ull << 20, 1ull << 30}) {
        auto pin = HostPin::pin(addr, kSize, true, page);
        ASSERT_TRUE(pin) << page;
        EXPECT_EQ(pin->pages(), (kSize + std::max<uint64_t>(page, 4096) - 1) / std::max<uint64_t>(page, 4096))
            << page;
    }
    void* priv = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ASSERT_NE(priv, MAP_FAILED);
    auto pin = HostPin::pin(uint64_t(uintptr_t(priv)), kSize, true, 2ull << 20);
    ASSERT_TRUE(pin);
    EXPECT_EQ(pin->pages(), kSize / 4096);
    munmap(priv, kSize);
}

TEST_F(Umem, BadRegistrationIsEinval) {
    std::byte b[8];
    EXPECT_EQ(A.umem_reg(ctx_, nullptr, 4096, 0), nullptr);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(A.umem_reg(ctx_, b, 0, 0), nullptr);
    EXPECT_EQ(errno, EINVAL);
}

TEST_F(Umem, InUseUmemAndPdCannotBeReleased) {
    Vq vq = virtq_in_state(VirtqState::INIT);
    auto info = dev_->virtq_info(vq.id);
    EXPECT_EQ(dev_->umem_info(info->attr.umem[0].id)->refs, 1u);
    EXPECT_EQ(A.umem_dereg(umems_[0]), EBUSY);  // as the kernel: RES_BUSY -> EBUSY
    EXPECT_EQ(A.dealloc_pd(pd_), EBUSY);
    ASSERT_EQ(destroy_obj(vq.obj), 0);
    EXPECT_EQ(dev_->umem_info(info->attr.umem[0].id)->refs, 0u);
    EXPECT_EQ(A.umem_dereg(umems_[0]), 0);
    umems_.erase(umems_.begin());
}

TEST_F(Umem, VarPageMapsThroughContextFd) {
    mlx5dv_var* var = A.alloc_var(ctx_, 0);
    ASSERT_NE(var, nullptr);
    EXPECT_EQ(var->length, 4096u);
    // As with rdma-core: mmap(ctx->cmd_fd, var->mmap_off).
    void* p1 = mmap(nullptr, var->length, PROT_READ | PROT_WRITE, MAP_SHARED, ctx_->cmd_fd, var->mmap_off);
    void* p2 = mmap(nullptr, var->length, PROT_READ | PROT_WRITE, MAP_SHARED, ctx_->cmd_fd, var->mmap_off);
    ASSERT_NE(p1, MAP_FAILED);
    ASSERT_NE(p2, MAP_FAILED);
    // Word 1, not the doorbell word 0: the datapath thread consumes doorbells.
    static_cast<volatile uint32_t*>(p1)[1] = 5;
    EXPECT_EQ(static_cast<volatile uint32_t*>(p2)[1], 5u);
    munmap(p1, var->length);
    munmap(p2, var->length);
    EXPECT_EQ(A.alloc_var(ctx_, 1), nullptr);
    EXPECT_EQ(errno, EOPNOTSUPP);
    A.free_var(var);
}

TEST_F(Umem, UarIsMappedAndDistinct) {
    auto* a = A.alloc_uar(ctx_, MLX5DV_UAR_ALLOC_TYPE_NC);
    auto* b = A.alloc_uar(ctx_, MLX5DV_UAR_ALLOC_TYPE_BF);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_NE(a->page_id, b->page_id);
    EXPECT_NE(a->mmap_off, b->mmap_off);
    static_cast<volatile uint32_t*>(a->reg_addr)[0] = 1;  // writable
    EXPECT_EQ(A.alloc_uar(ctx_, 7), nullptr);
    EXPECT_EQ(errno, EINVAL);
    A.free_uar(a);
    A.free_uar(b);
}

TEST_F(Umem, ContextCloseDropsItsObjects) {
    Vq vq = virtq_in_state(VirtqState::RDY);
    EXPECT_TRUE(dev_->virtq_info(vq.id));
    A.close_device(ctx_);
    ctx_ = nullptr;
    EXPECT_EQ(dev_->virtq_count(), 0u);
    // The handle outlives the context: use fails with EBADF, destroy frees it.
    std::vector<std::byte> in(16), out(prm::kVirtqQueryOutBytes);
    prm::encode_query_virtq(vq.id, in);
    EXPECT_EQ(A.obj_query(vq.obj, in.data(), in.size(), out.data(), out.size()), EBADF);
    EXPECT_EQ(destroy_obj(vq.obj), 0);
    EXPECT_EQ(A.umem_dereg(umems_.back()), 0);
    umems_.pop_back();
}

TEST_F(Umem, ForeignHandlesAreRefused) {
    // Zeroed memory larger than our handles: no magic, so refused.
    alignas(16) unsigned char zeros[1024]{};
    EXPECT_EQ(A.alloc_pd(reinterpret_cast<ibv_context*>(zeros)), nullptr);
    EXPECT_EQ(errno, EINVAL);
    mlx5dv_obj o{};
    mlx5dv_pd out{};
    o.pd.in = reinterpret_cast<ibv_pd*>(zeros);
    o.pd.out = &out;
    EXPECT_EQ(A.init_obj(&o, MLX5DV_OBJ_PD), EINVAL);
    EXPECT_EQ(A.init_obj(&o, MLX5DV_OBJ_QP), EOPNOTSUPP);
}

}  // namespace
}  // namespace mlx5async::emu::test
