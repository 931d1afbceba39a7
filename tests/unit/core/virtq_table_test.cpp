// VirtqTable: the one writer of a virtq's phase. Every (from, to) pair of
// the driver's lifecycle against a matrix written out here, what a refused
// step leaves, adoption of the device's state, the re-creation marker.
#include "vdpa/mlx5async/core/virtq_table.hpp"

#include <gtest/gtest.h>

namespace mlx5async::core {
namespace {

constexpr VqPhase kAll[] = {VqPhase::Absent, VqPhase::Init, VqPhase::Ready, VqPhase::Suspended,
                            VqPhase::Error};

// allowed[from][to], in kAll's order: CREATE (Absent->Init), start
// (Init/Suspended->Ready), suspend (Ready->Suspended), DESTROY (any object
// ->Absent), a failed command or ERR (any object ->Error).
constexpr bool kAllowed[5][5] = {
    //            Absent Init   Ready  Susp   Error
    /* Absent */ {false, true,  false, false, false},
    /* Init   */ {true,  false, true,  false, true},
    /* Ready  */ {true,  false, false, true,  true},
    /* Susp   */ {true,  false, true,  false, true},
    /* Error  */ {true,  false, false, false, false},
};

struct Pair {
    int from, to;
};

class EveryPhasePair : public testing::TestWithParam<Pair> {};

TEST_P(EveryPhasePair, AllowedStepsOnlyAndRefusedOnesChangeNothing) {
    const VqPhase from = kAll[GetParam().from], to = kAll[GetParam().to];
    VirtqTable t;
    t.create(4, "dev0");
    Vq& vq = t[3];
    t.adopt(vq, from);
    t.mark_for_recreation(vq);
    auto r = t.transition(vq, to);
    const bool allowed = kAllowed[GetParam().from][GetParam().to];
    ASSERT_EQ(bool(r), allowed) << vq_phase_name(from) << " -> " << vq_phase_name(to);
    if (allowed) {
        EXPECT_EQ(vq.phase(), to);
        // Only a destroy ends the need for a new object.
        EXPECT_EQ(vq.needs_recreation(), to != VqPhase::Absent);
        return;
    }
    EXPECT_EQ(vq.phase(), from);
    EXPECT_TRUE(vq.needs_recreation());
    EXPECT_EQ(r.error().code, Errc::State);
    const std::string& why = r.error().what;
    EXPECT_NE(why.find("dev0: virtq 3"), std::string::npos) << why;
    EXPECT_NE(why.find(std::string(vq_phase_name(from)) + " -> " + vq_phase_name(to)),
              std::string::npos)
        << why;
}

std::vector<Pair> all_pairs() {
    std::vector<Pair> v;
    for (int f = 0; f < 5; f++)
        for (int t = 0; t < 5; t++) v.push_back({f, t});
    return v;
}

INSTANTIATE_TEST_SUITE_P(All, EveryPhasePair, testing::ValuesIn(all_pairs()),
                         [](const testing::TestParamInfo<Pair>& i) {
                             return std::string(vq_phase_name(kAll[i.param.from])) + "_to_" +
                                    vq_phase_name(kAll[i.param.to]);
                         });

TEST(VirtqTable, TheTableInTheHeaderIsTheMatrix) {
    for (int f = 0; f < 5; f++)
        for (int t = 0; t < 5; t++)
            EXPECT_EQ(vq_phase_allowed(kAll[f], kAll[t]), kAllowed[f][t])
                << vq_phase_name(kAll[f]) << " -> " << vq_phase_name(kAll[t]);
}

TEST(VirtqTable, NumbersItsVirtqsAndStartsAbsent) {
    VirtqTable t;
    t.create(8, "dev0");
    ASSERT_EQ(t.size(), 8u);
    for (size_t i = 0; i < t.size(); i++) {
        EXPECT_EQ(t[i].index, i);
        EXPECT_EQ(t[i].phase(), VqPhase::Absent);
        EXPECT_FALSE(t[i].needs_recreation());
    }
}

TEST(VirtqTable, AdoptsWhatTheDeviceSaysFromAnyPhase) {
    VirtqTable t;
    t.create(1, "dev0");
    for (VqPhase believed : kAll)
        for (VqPhase on_device : kAll) {
            t.adopt(t[0], believed);
            t.adopt(t[0], on_device);
            EXPECT_EQ(t[0].phase(), on_device);
        }
}

TEST(VirtqTable, ALifecycleEndToEnd) {
    VirtqTable t;
    t.create(1, "dev0");
    Vq& vq = t[0];
    for (VqPhase to : {VqPhase::Init, VqPhase::Ready, VqPhase::Suspended, VqPhase::Ready,
                       VqPhase::Error, VqPhase::Absent, VqPhase::Init})
        ASSERT_TRUE(t.transition(vq, to)) << vq_phase_name(to);
    EXPECT_EQ(vq.phase(), VqPhase::Init);
}

}  // namespace
}  // namespace mlx5async::core
