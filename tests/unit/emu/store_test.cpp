// Object store: typed tables, index + generation handles.
#include <gtest/gtest.h>

#include "emu/store.hpp"

namespace mlx5async::emu::test {
namespace {

struct Thing {
    int v = 0;
};
using Things = ObjectTable<Thing, Kind::Umem>;
using Others = ObjectTable<Thing, Kind::Pd>;

TEST(ObjectStore, StaleIdFailsAfterSlotReuse) {
    Things t;
    auto a = t.insert({1});
    ASSERT_TRUE(a);
    ASSERT_TRUE(t.erase(*a));
    auto b = t.insert({2});
    ASSERT_TRUE(b);
    EXPECT_NE(*a, *b);
    auto stale = t.find(*a);
    ASSERT_FALSE(stale);
    EXPECT_EQ(stale.error().fw_status, uint8_t(prm::Status::BAD_RES_ERR));
    EXPECT_EQ(stale.error().syndrome, syndrome::kUnknownObject + uint32_t(Kind::Umem));
    EXPECT_EQ(t.find(*b)->v, 2);
    EXPECT_FALSE(t.erase(*a));
}

TEST(ObjectStore, IdOfAnotherKindIsUnknown) {
    Things t;
    Others o;
    auto a = t.insert({1});
    auto b = o.insert({1});
    ASSERT_TRUE(a && b);
    EXPECT_FALSE(o.find(*a));
    EXPECT_FALSE(t.find(*b));
    EXPECT_FALSE(t.find(0));
}

TEST(ObjectStore, IdsFitTwentyFourBits) {
    Things t;
    for (int i = 0; i < 100; ++i) {
        auto id = t.insert({i});
        ASSERT_TRUE(id);
        EXPECT_EQ(*id & ~0xffffffu, 0u);
        ASSERT_TRUE(t.erase(*id));
    }
}

TEST(ObjectStore, FullTableIsLimitError) {
    Things t;
    for (uint32_t i = 0; i < Things::kMaxObjects; ++i) ASSERT_TRUE(t.insert({}));
    auto r = t.insert({});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().fw_status, uint8_t(prm::Status::LIM_ERR));
    EXPECT_EQ(t.size(), Things::kMaxObjects);
}

TEST(ObjectStore, ReuseIsOldestFirstSoGenerationsRarelyWrap) {
    Things t;
    auto a = t.insert({});
    auto b = t.insert({});
    ASSERT_TRUE(a && b);
    t.erase(*a);
    t.erase(*b);
    auto c = t.insert({});
    EXPECT_EQ(*c & 0xfff, *a & 0xfff);  // a's slot first
}

}  // namespace
}  // namespace mlx5async::emu::test
