// Properties of the field tables and the bit access in field.hpp, for every
// field of every layout (Linux tables, union views and DPDK fields).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/prm/caps_layout.hpp"
#include "common/prm/counters_layout.hpp"
#include "common/prm/general_obj_layout.hpp"
#include "common/prm/virtq_layout.hpp"

namespace mlx5async::prm {
namespace {

namespace lay = layout;

struct Named {
    std::string layout;
    uint32_t bits;
    std::vector<const Field*> fields;
};

template <typename... Spans>
Named named(const Layout& l, const Spans&... extra) {
    Named n{std::string(l.name), l.bits, {l.fields.begin(), l.fields.end()}};
    (n.fields.insert(n.fields.end(), std::begin(extra), std::end(extra)), ...);
    return n;
}

std::vector<Named> all_layouts() {
    return {
        named(lay::kGeneralObjInCmdHdr, lay::general_obj_in_cmd_hdr::kViews,
              lay::general_obj_in_cmd_hdr::dpdk::kFields),
        named(lay::kGeneralObjOutCmdHdr),
        named(lay::kMboxIn),
        named(lay::kMboxOut),
        named(lay::kVirtioQ, lay::virtio_q::dpdk::kFields),
        named(lay::kVirtioNetQObject, lay::virtio_net_q_object::dpdk::kFields),
        named(lay::kVirtioQCounters, lay::virtio_q_counters::dpdk::kFields),
        named(lay::kQueryHcaCapIn),
        named(lay::kQueryHcaCapOutHdr),
        named(lay::kCmdHcaCap),
        named(lay::kVirtioEmulationCap, lay::virtio_emulation_cap::dpdk::kFields),
    };
}

bool bit_set(const std::vector<std::byte>& b, uint32_t bit) {
    return (static_cast<uint8_t>(b[bit / 8]) >> (7 - bit % 8)) & 1;
}

// Sets or clears every bit of f: through one set_bits call for the shapes it
// supports (inside one dword, or an aligned 64-bit value), else dword by
// dword (padding may span dwords).
void fill(std::vector<std::byte>& buf, const Field& f, bool ones) {
    bool one_dword = f.bit_offset / 32 == (f.end() - 1) / 32;
    if (one_dword || (f.bit_width == 64 && f.bit_offset % 32 == 0)) {
        set_bits(buf, f.bit_offset, f.bit_width, ones ? width_mask(f.bit_width) : 0);
        return;
    }
    for (uint32_t o = f.bit_offset; o < f.end();) {
        uint32_t w = std::min<uint32_t>(f.end() - o, 32 - o % 32);
        set_bits(buf, o, w, ones ? width_mask(w) : 0);
        o += w;
    }
}

TEST(PrmLayout, WritingOneFieldChangesNoBitOutsideIt) {
    int fields = 0;
    for (const Named& l : all_layouts()) {
        for (const Field* f : l.fields) {
            for (bool background : {false, true}) {
                std::vector<std::byte> buf(l.bits / 8, background ? std::byte{0xff} : std::byte{0});
                fill(buf, *f, !background);
                for (uint32_t bit = 0; bit < l.bits; ++bit) {
                    bool inside = bit >= f->bit_offset && bit < f->end();
                    ASSERT_EQ(bit_set(buf, bit), inside != background)
                        << l.layout << "." << f->name << " bit 0x" << std::hex << bit;
                }
            }
            ++fields;
        }
    }
    EXPECT_GT(fields, 200);
}

TEST(PrmLayout, GetReadsBackEveryValueFieldAtMaximum) {
    for (const Named& l : all_layouts()) {
        for (const Field* f : l.fields) {
            if (f->reserved()) continue;
            std::vector<std::byte> buf(l.bits / 8, std::byte{0});
            set_bits(buf, f->bit_offset, f->bit_width, ~0ull);  // truncated to the width
            EXPECT_EQ(get_bits(buf, f->bit_offset, f->bit_width), width_mask(f->bit_width))
                << l.layout << "." << f->name;
        }
    }
}

TEST(PrmLayout, ValueFieldsNeverCrossADword) {
    for (const Named& l : all_layouts())
        for (const Field* f : l.fields)
            EXPECT_TRUE(field_shape_ok(*f)) << l.layout << "." << f->name;
}

TEST(PrmLayout, FirstNonzeroReservedFindsEveryPaddingField) {
    const Layout layouts[] = {lay::kGeneralObjInCmdHdr, lay::kGeneralObjOutCmdHdr,
                              lay::kVirtioNetQObject,   lay::kVirtioQCounters,
                              lay::kCmdHcaCap,          lay::kVirtioEmulationCap,
                              lay::kQueryHcaCapIn};
    for (const Layout& l : layouts) {
        std::vector<std::byte> buf(l.bytes(), std::byte{0});
        for (const Field* f : l.fields) set_bits(buf, f->bit_offset, 1, f->reserved() ? 0 : 1);
        EXPECT_EQ(first_nonzero_reserved(l, buf), nullptr) << l.name;
        for (const Field* f : l.fields) {
            if (!f->reserved()) continue;
            std::vector<std::byte> one(l.bytes(), std::byte{0});
            set_bits(one, f->end() - 1, 1, 1);  // its last bit
            EXPECT_EQ(first_nonzero_reserved(l, one), f) << l.name << "." << f->name;
        }
    }
}

TEST(PrmLayout, UnionViewPaddingCountsAsReserved) {
    EXPECT_TRUE(lay::general_obj_in_cmd_hdr::create_reserved_at_1.reserved());
    EXPECT_FALSE(lay::general_obj_in_cmd_hdr::log_obj_range.reserved());
    EXPECT_EQ(find_field(lay::kVirtioNetQObject, "state"), &lay::virtio_net_q_object::state);
    EXPECT_EQ(find_field(lay::kVirtioNetQObject, "no_such_field"), nullptr);
}

TEST(PrmLayout, ContextFieldsAreTheVirtioQTableShifted) {
    const auto& q = lay::kVirtioQ.fields;
    const auto& o = lay::kVirtioNetQObject.fields;
    size_t first = o.size() - q.size();
    for (size_t i = 0; i < q.size(); ++i) {
        EXPECT_EQ(o[first + i]->name, q[i]->name);
        EXPECT_EQ(o[first + i]->bit_offset, q[i]->bit_offset + 0x200);
        EXPECT_EQ(o[first + i]->bit_width, q[i]->bit_width);
    }
}

// set_const<F, V>() with V wider than F does not compile
// (static_assert "constant wider than the PRM field"), e.g.
//   set_const<lay::virtio_net_q_object::state, 0x10>(buf);
// A compile failure cannot be a runtime test; this one pins the happy path.
TEST(PrmLayout, SetConstWritesTheConstant) {
    std::vector<std::byte> buf(lay::kVirtioNetQObject.bytes(), std::byte{0});
    set_const<lay::virtio_net_q_object::state, 0xf>(buf);
    EXPECT_EQ(static_cast<uint8_t>(buf[19]), 0x0f);
    EXPECT_EQ(get<lay::virtio_net_q_object::state>(buf), 0xfu);
    EXPECT_TRUE(fits<lay::virtio_net_q_object::state>(0xf));
    EXPECT_FALSE(fits<lay::virtio_net_q_object::state>(0x10));
}

}  // namespace
}  // namespace mlx5async::prm
