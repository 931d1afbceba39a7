// VIRTIO_Q_COUNTERS codec. Offsets cross-checked against Linux
// mlx5_ifc_vdpa.h (mlx5_ifc_virtio_q_counters_bits) and DPDK 22.11
// mlx5_prm.h (same value fields; received_desc at 0x80).
#include <gtest/gtest.h>

#include <vector>

#include "common/prm/counters.hpp"
#include "common/prm/opcodes.hpp"

namespace mlx5async::prm {
namespace {

using Bytes = std::vector<std::byte>;

void put(Bytes& b, size_t at, std::initializer_list<uint8_t> v) {
    for (uint8_t x : v) b[at++] = std::byte{x};
}

TEST(CountersGolden, CreateImage) {
    Bytes in(kCountersCreateInBytes, std::byte{0xee});
    encode_create_counters(in);
    Bytes want(kCountersCreateInBytes, std::byte{0});
    put(want, 0, {0x0a, 0x00, 0, 0, 0, 0, 0x00, 0x1c});  // CREATE, obj_type 0x001c
    EXPECT_EQ(in, want);
}

TEST(CountersGolden, QueryInImage) {
    Bytes in(kGeneralObjInHdrBytes, std::byte{0xee});
    encode_query_counters(0x77, in);
    Bytes want(kGeneralObjInHdrBytes, std::byte{0});
    put(want, 0, {0x0a, 0x02, 0, 0, 0, 0, 0x00, 0x1c, 0, 0, 0, 0x77});
    EXPECT_EQ(in, want);
}

TEST(CountersGolden, QueryOutImageDecodes) {
    Bytes out(kCountersQueryOutBytes, std::byte{0});
    const size_t o = 16;
    put(out, o + 16, {0, 0, 0, 1, 0, 0, 0, 2});  // received_desc 0x100000002 at 0x80
    put(out, o + 24, {0, 0, 0, 0, 0, 0, 0, 3});  // completed_desc at 0xc0
    put(out, o + 32, {0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0, 7});  // 0x100..0x160
    auto c = decode_query_counters_out(out, 9);
    ASSERT_TRUE(c);
    EXPECT_EQ(*c, (VirtqCounters{0x100000002ull, 3, 4, 5, 6, 7}));
}

TEST(CountersRoundTrip, EveryFieldAtMaximum) {
    VirtqCounters c{~0ull, ~0ull, ~0u, ~0u, ~0u, ~0u};
    Bytes obj(kCountersObjBytes, std::byte{0xee});
    write_counters_object(c, obj);
    EXPECT_EQ(*read_counters_object(obj), c);
    // Bytes 0..15 (modify_field_select, reserved_at_40) and 48.. stay zero.
    for (size_t i = 0; i < kCountersObjBytes; ++i)
        EXPECT_EQ(obj[i], (i >= 16 && i < 48) ? std::byte{0xff} : std::byte{0}) << i;
}

TEST(CountersDecode, FirmwareErrorAndShortBuffers) {
    Bytes out(kCountersQueryOutBytes, std::byte{0});
    out[0] = std::byte{0x5};
    auto e = decode_query_counters_out(out, 3);
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().code, Errc::Firmware);
    EXPECT_EQ(e.error().obj_id, 3u);

    auto s = decode_query_counters_out(Bytes(kCountersQueryOutBytes - 1), 3);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, Errc::ShortBuffer);
    EXPECT_NE(s.error().what.find("virtio_q_counters out: buffer of 143 bytes, need 144"),
              std::string::npos)
        << s.error().what;
    EXPECT_EQ(read_counters_object(Bytes(127)).error().code, Errc::ShortBuffer);
}

}  // namespace
}  // namespace mlx5async::prm
