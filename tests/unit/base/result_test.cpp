#include "common/base/result.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <memory>

namespace mlx5async {
namespace {

Result<int> half(int v) {
    if (v % 2) return fail(Errc::InvalidArgument, "odd");
    return v / 2;
}

Result<int> quarter(int v) {
    auto h = half(v);
    MLX5A_CHECK(h);
    return half(*h);
}

TEST(Result, CarriesValueOrError) {
    auto ok = half(8);
    ASSERT_TRUE(ok);
    EXPECT_EQ(*ok, 4);
    auto bad = half(3);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code, Errc::InvalidArgument);
    EXPECT_EQ(bad.error().what, "odd");
}

TEST(Result, CheckPropagatesFirstError) {
    EXPECT_EQ(*quarter(8), 2);
    EXPECT_FALSE(quarter(6));  // 6/2 = 3 is odd
    EXPECT_EQ(quarter(5).error().what, "odd");
}

TEST(Result, MoveOnlyValues) {
    Result<std::unique_ptr<int>> r(std::make_unique<int>(7));
    auto p = std::move(r).value();
    EXPECT_EQ(*p, 7);
}

TEST(Result, VoidAndReference) {
    Result<void> ok;
    EXPECT_TRUE(ok);
    Result<void> bad = fail(Errc::Timeout, "late");
    EXPECT_FALSE(bad);
    int x = 3;
    Result<int&> ref(x);
    *ref = 4;
    EXPECT_EQ(x, 4);
}

TEST(ErrorToErrno, UsesSysErrnoThenCode) {
    EXPECT_EQ(to_errno(Error::sys(ENOMEM, "x")), -ENOMEM);
    EXPECT_EQ(to_errno(Error::make(Errc::Timeout, "")), -ETIMEDOUT);
    EXPECT_EQ(to_errno(Error::make(Errc::InvalidArgument, "")), -EINVAL);
}

TEST(ErrorToString, NamesEveryPart) {
    Error e = Error::make(Errc::Firmware, "ctx");
    e.opcode = 0xa01;
    e.obj_id = 0x12;
    e.queue = 3;
    e.fw_status = 9;
    e.syndrome = 0x1234;
    auto s = to_string(e);
    EXPECT_NE(s.find("0xa01"), std::string::npos);
    EXPECT_NE(s.find("queue 3"), std::string::npos);
    EXPECT_NE(s.find("syndrome 0x1234"), std::string::npos);
    EXPECT_NE(s.find("ctx"), std::string::npos);
}

}  // namespace
}  // namespace mlx5async
