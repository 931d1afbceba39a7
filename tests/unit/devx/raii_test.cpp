// RAII wrappers over the fake table: each resource is released exactly once,
// moves transfer ownership, failed destroys are logged and not thrown.
#include "common/devx/raii.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/base/log_sink.hpp"
#include "common/prm/general_obj.hpp"
#include "common/prm/opcodes.hpp"
#include "testkit/fake_devx_api.hpp"

namespace mlx5async::devx {
namespace {

using testing::FakeCall;
using testing::FakeDevx;
using testing::FakeOp;
using testing::FakeReply;

// Buffers carved from one mapping: page aligned, apart, zeroed; each goes
// on its own (its pages unmapped), the others stay usable.
TEST(DevxRaii, PageBuffersFromOneMappingAreApartAndGoOneByOne) {
    const std::vector<size_t> sizes{1, 4096, 4097, 3 * 4096};
    auto bufs = PageBuffer::alloc_many(sizes);
    ASSERT_TRUE(bufs) << to_string(bufs.error());
    ASSERT_EQ(bufs->size(), sizes.size());
    for (size_t i = 0; i < sizes.size(); i++) {
        const PageBuffer& b = (*bufs)[i];
        ASSERT_TRUE(b);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 4096, 0u);
        for (size_t k = 0; k < sizes[i]; k++) ASSERT_EQ(b.data()[k], std::byte{0});
        if (i + 1 < sizes.size()) {  // the next starts past this one's pages
            EXPECT_GE((*bufs)[i + 1].data() - b.data(), std::ptrdiff_t((sizes[i] + 4095) / 4096 * 4096));
        }
    }
    (*bufs)[1] = PageBuffer{};  // unmaps its page only
    for (size_t i : {size_t(0), size_t(2), size_t(3)}) {
        std::byte* p = (*bufs)[i].data();
        p[sizes[i] - 1] = std::byte{0xa5};
        p[0] = std::byte{0x5a};
        EXPECT_EQ(p[0], std::byte{0x5a});
    }
    auto none = PageBuffer::alloc_many({});
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
}

TEST(DevxRaii, ContextOpensByNameAndCloses) {
    FakeDevx fake;
    {
        auto ctx = Context::open(FakeDevx::api(), "fake0");
        ASSERT_TRUE(ctx) << to_string(ctx.error());
        EXPECT_EQ(ctx->get(), fake.ctx());
        EXPECT_EQ(fake.live_resources(), 1);
        Context moved = std::move(*ctx);
        EXPECT_FALSE(*ctx);
        EXPECT_EQ(fake.live_resources(), 1);
    }
    EXPECT_EQ(fake.live_resources(), 0);
}

TEST(DevxRaii, UnknownDeviceIsNotFound) {
    FakeDevx fake;
    auto ctx = Context::open(FakeDevx::api(), "mlx5_9");
    ASSERT_FALSE(ctx);
    EXPECT_EQ(ctx.error().code, Errc::NotFound);
    auto pci = Context::open_pci(FakeDevx::api(), "0000:08:00.2");
    ASSERT_FALSE(pci);
    EXPECT_EQ(pci.error().code, Errc::NotFound);
}

TEST(DevxRaii, PdUarUmemEventChannelReleasedOnce) {
    FakeDevx fake;
    {
        auto ctx = Context::open(FakeDevx::api(), "fake0");
        ASSERT_TRUE(ctx);
        auto pd = Pd::alloc(*ctx);
        ASSERT_TRUE(pd);
        EXPECT_EQ(pd->pdn(), 0x42u);
        auto uar = Uar::alloc(*ctx);
        ASSERT_TRUE(uar);
        EXPECT_EQ(uar->page_id(), 0x5u);
        auto umem = Umem::reg(*ctx, 10000);
        ASSERT_TRUE(umem);
        EXPECT_EQ(umem->id(), 0x77u);
        EXPECT_EQ(umem->size(), 10000u);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(umem->data()) % 4096, 0u);
        auto ch = EventChannel::create(*ctx);
        ASSERT_TRUE(ch);
        DevxObj vq = fake.make_obj();
        const uint16_t ev[] = {prm::kEventObjectChange};
        EXPECT_TRUE(ch->subscribe(vq, ev, 7));
        EXPECT_EQ(fake.live_resources(), 5);  // context, pd, uar, umem, channel
        Umem other = std::move(*umem);
        EXPECT_EQ(fake.live_resources(), 5);
    }
    EXPECT_EQ(fake.live_resources(), 0);
}

TEST(DevxRaii, DevxObjCreateReadsIdAndDestroysAtScopeEnd) {
    FakeDevx fake;
    auto ctx = Context::open(FakeDevx::api(), "fake0");
    ASSERT_TRUE(ctx);
    std::vector<std::byte> in(prm::kGeneralObjInHdrBytes), out(prm::kGeneralObjOutHdrBytes);
    prm::write_general_obj_in({.opcode = uint16_t(prm::Opcode::CREATE_GENERAL_OBJECT),
                               .obj_type = uint16_t(prm::ObjType::VIRTIO_NET_Q)},
                              in);
    unsigned before = fake.live_objects();
    {
        auto obj = DevxObj::create(*ctx, in, out);
        ASSERT_TRUE(obj) << to_string(obj.error());
        EXPECT_NE(obj->obj_id(), 0u);
        EXPECT_EQ(obj->obj_type(), uint16_t(prm::ObjType::VIRTIO_NET_Q));
        EXPECT_EQ(fake.live_objects(), before + 1);
    }
    EXPECT_EQ(fake.live_objects(), before);
}

TEST(DevxRaii, DevxObjCreateFirmwareErrorIsAValue) {
    FakeDevx fake;
    fake.set_script([](const FakeCall&) {
        FakeReply r;
        r.status = 0x3;  // BAD_PARAM_ERR
        r.syndrome = 0xabc;
        return r;
    });
    auto ctx = Context::open(FakeDevx::api(), "fake0");
    ASSERT_TRUE(ctx);
    std::vector<std::byte> in(prm::kGeneralObjInHdrBytes), out(prm::kGeneralObjOutHdrBytes);
    prm::write_general_obj_in({.opcode = uint16_t(prm::Opcode::CREATE_GENERAL_OBJECT)}, in);
    auto obj = DevxObj::create(*ctx, in, out);
    ASSERT_FALSE(obj);
    EXPECT_EQ(obj.error().code, Errc::Firmware);
    EXPECT_EQ(obj.error().fw_status, 0x3);
    EXPECT_EQ(obj.error().syndrome, 0xabcu);
}

TEST(DevxRaii, FailedDestroyIsLoggedNotThrown) {
    FakeDevx fake;
    std::vector<std::string> lines;
    set_log_sink([&](LogLevel, std::string_view l) { lines.emplace_back(l); });
    fake.set_script([](const FakeCall& c) {
        FakeReply r;
        if (c.op == FakeOp::Destroy) r.call_errno = EBUSY;
        return r;
    });
    {
        DevxObj obj = fake.make_obj();
        DevxObj moved = std::move(obj);
        EXPECT_FALSE(obj);
    }
    set_log_sink(nullptr);
    ASSERT_EQ(lines.size(), 1u);  // one destroy attempt, one line
    EXPECT_NE(lines[0].find("DESTROY"), std::string::npos) << lines[0];
}

}  // namespace
}  // namespace mlx5async::devx
