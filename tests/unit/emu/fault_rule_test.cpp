// Fault rules as text: every number must fit its field, no value is
// truncated, and the rule's shape is checked.
#include "emu/fault_rule.hpp"

#include <gtest/gtest.h>

#include "common/prm/opcodes.hpp"

namespace mlx5async::emu {
namespace {

std::string error_of(std::string_view text) {
    auto r = parse_fault_rule(text);
    return r ? "" : r.error().what;
}

TEST(FaultRuleText, ParsesEachShape) {
    auto r = parse_fault_rule("op=modify vq=5 nth=3 status=0x9 syndrome=0x1");
    ASSERT_TRUE(r) << r.error().what;
    ASSERT_TRUE(r->rule);
    EXPECT_EQ(r->vq, 5);
    EXPECT_EQ(*r->rule->match.opcode, uint16_t(prm::Opcode::MODIFY_GENERAL_OBJECT));
    EXPECT_EQ(r->rule->match.nth, 3u);
    EXPECT_EQ(r->rule->action, FaultAction::Fail);
    EXPECT_EQ(r->rule->status, 9);
    EXPECT_EQ(r->rule->syndrome, 1u);
    r = parse_fault_rule("op=query hang");
    ASSERT_TRUE(r && r->rule);
    EXPECT_EQ(r->rule->action, FaultAction::Hang);
    r = parse_fault_rule("op=create delay_us=1500");
    ASSERT_TRUE(r && r->rule);
    EXPECT_EQ(r->rule->extra_ns, 1500000);
    r = parse_fault_rule("op=create_mkey answer_late_us=20");
    ASSERT_TRUE(r && r->rule);
    EXPECT_EQ(r->rule->action, FaultAction::AnswerLate);
    EXPECT_EQ(r->rule->extra_ns, 20000);
    EXPECT_FALSE(parse_fault_rule("op=create_mkey delay_us=1 answer_late_us=1"));
    r = parse_fault_rule("vq=2 error_type=255");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->error_type, 255);
    EXPECT_FALSE(r->rule);
    r = parse_fault_rule("clear");
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->clear);
}

TEST(FaultRuleText, MemoryRegistrationCommandsAreTargets) {
    const std::pair<const char*, prm::Opcode> ops[] = {
        {"create_mkey", prm::Opcode::CREATE_MKEY},   {"destroy_mkey", prm::Opcode::DESTROY_MKEY},
        {"create_umem", prm::Opcode::CREATE_UMEM},   {"destroy_umem", prm::Opcode::DESTROY_UMEM},
    };
    for (auto [word, opcode] : ops) {
        auto r = parse_fault_rule(std::string("op=") + word + " nth=2 status=0x3");
        ASSERT_TRUE(r && r->rule) << word;
        EXPECT_EQ(*r->rule->match.opcode, uint16_t(opcode)) << word;
    }
    EXPECT_NE(error_of("op=mkey status=1").find("create_mkey"), std::string::npos);
}

TEST(FaultRuleText, NumbersThatDoNotFitAreRefusedNotTruncated) {
    EXPECT_EQ(error_of("op=modify vq=65536 status=9"), "fault rule: vq=65536: expected a number in 0..65535");
    EXPECT_EQ(error_of("vq=1 error_type=300"), "fault rule: error_type=300: expected a number in 0..255");
    EXPECT_EQ(error_of("op=modify status=256"), "fault rule: status=256: expected a number in 0..255");
    EXPECT_NE(error_of("op=modify syndrome=0x100000000 status=1"), "");
    EXPECT_NE(error_of("op=modify delay_us=99999999999999999"), "");  // overflowed int64 ns
    EXPECT_NE(error_of("op=modify nth=-1 status=1"), "");
    EXPECT_NE(error_of("op=modify nth= status=1"), "");
    EXPECT_NE(error_of("op=modify nth=0x status=1"), "");
    EXPECT_EQ(error_of("op=modify nth=0x10 status=1"), "");
}

TEST(FaultRuleText, ShapesThatMeanNothingAreRefused) {
    EXPECT_NE(error_of("op=modify"), "");                 // no action
    EXPECT_NE(error_of("status=9"), "");                  // no op
    EXPECT_NE(error_of("op=modify hang busy"), "");       // two actions
    EXPECT_NE(error_of("op=modify status=9 hang"), "");
    EXPECT_NE(error_of("error_type=1"), "");              // no vq
    EXPECT_NE(error_of("vq=1 error_type=1 op=modify hang"), "");
    EXPECT_NE(error_of("clear op=modify hang"), "");
    EXPECT_EQ(error_of("op=modify bogus=1 status=9"), "fault rule: unknown word 'bogus=1'");
    EXPECT_NE(error_of("op=frob status=1"), "");
}

}  // namespace
}  // namespace mlx5async::emu
