// Every row of reference/prm-virtq-fields.tsv (layout facts of Linux
// mlx5_ifc*.h and DPDK mlx5_prm.h) against the codec's tables, and every
// table field against the TSV; reference/prm-virtq-enums.tsv against the
// enums. A missing TSV is a failure, not a skip.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/prm/caps_layout.hpp"
#include "common/prm/counters_layout.hpp"
#include "common/prm/general_obj_layout.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"
#include "common/prm/virtq.hpp"
#include "common/prm/virtq_layout.hpp"

#ifndef PRM_TSV_DIR
#error "PRM_TSV_DIR must point at tests/unit/prm/reference"
#endif

namespace mlx5async::prm {
namespace {

namespace lay = layout;
using Row = std::vector<std::string>;
using Fields = std::vector<const Field*>;

std::vector<Row> read_tsv(const std::string& name) {
    std::string path = std::string(PRM_TSV_DIR) + "/" + name;
    std::ifstream f(path);
    std::vector<Row> rows;
    if (!f) {
        ADD_FAILURE() << "cannot open " << path;
        return rows;
    }
    std::string line;
    bool header = true;
    while (std::getline(f, line)) {
        if (line.empty() || line[0] == '#') continue;  // comments
        if (std::exchange(header, false)) continue;    // column names
        Row r;
        std::stringstream ss(line);
        std::string cell;
        while (std::getline(ss, cell, '\t')) r.push_back(cell);
        rows.push_back(r);
    }
    return rows;
}

template <typename Span>
void append(Fields& out, const Span& s) {
    for (const Field* f : s) out.push_back(f);
}

// TSV struct name -> the fields the codec has for it.
std::map<std::string, Fields> tables() {
    std::map<std::string, Fields> m;
    append(m["general_obj_in_cmd_hdr"], lay::kGeneralObjInCmdHdr.fields);
    append(m["general_obj_in_cmd_hdr"], lay::general_obj_in_cmd_hdr::kViews);
    append(m["general_obj_out_cmd_hdr"], lay::kGeneralObjOutCmdHdr.fields);
    append(m["virtio_net_q_object"], lay::kVirtioNetQObject.fields);
    append(m["virtio_q"], lay::kVirtioQ.fields);
    append(m["virtio_emulation_cap"], lay::kVirtioEmulationCap.fields);
    append(m["virtio_q_counters"], lay::kVirtioQCounters.fields);
    append(m["dpdk:general_obj_in_cmd_hdr"], lay::general_obj_in_cmd_hdr::dpdk::kFields);
    append(m["dpdk:virtio_q"], lay::virtio_q::dpdk::kFields);
    append(m["dpdk:virtio_net_q"], lay::virtio_net_q_object::dpdk::kFields);
    append(m["dpdk:virtio_emulation_cap"], lay::virtio_emulation_cap::dpdk::kFields);
    append(m["dpdk:virtio_q_counters"], lay::virtio_q_counters::dpdk::kFields);
    return m;
}

// "virtio_q_context.X" names field X of the nested context (offset >= 0x200).
const Field* lookup(const Fields& fs, const std::string& name) {
    const std::string ctx = "virtio_q_context.";
    bool nested = name.rfind(ctx, 0) == 0;
    std::string bare = nested ? name.substr(ctx.size()) : name;
    for (const Field* f : fs) {
        bool in_ctx = f->bit_offset >= lay::virtio_net_q_object::kContext;
        if (f->name == bare && (!nested || in_ctx)) return f;
    }
    return nullptr;
}

// The DPDK table a Linux row's "DPDK DIFFERS" / "DPDK name" notes refer to.
std::string dpdk_table_of(const std::string& st) {
    if (st == "virtio_net_q_object") return "dpdk:virtio_net_q";
    return "dpdk:" + st;
}

// Notes of a Linux row that describe DPDK's version of the same bits:
// "DPDK DIFFERS: off=O w=W" (same name) and "DPDK name N" (same bits).
void check_dpdk_note(const Row& r, const Fields& dpdk, std::set<const Field*>& seen) {
    std::string note = r.size() > 4 ? r[4] : "";
    std::string name = r[1];
    uint32_t off = std::stoul(r[2]), w = std::stoul(r[3]);
    if (auto p = note.find("DPDK DIFFERS: off="); p != std::string::npos) {
        std::sscanf(note.c_str() + p, "DPDK DIFFERS: off=%u w=%u", &off, &w);
    } else if (auto q = note.find("DPDK name "); q != std::string::npos) {
        std::stringstream ss(note.substr(q + 10));
        std::string dn;
        ss >> dn;
        name = (name.rfind("virtio_q_context.", 0) == 0 ? "virtio_q_context." : "") + dn;
        if (!dn.empty() && (dn.back() == ';' || dn.back() == ',')) name.pop_back();
    } else {
        return;
    }
    if (const Field* f = lookup(dpdk, name); f && f->bit_offset == off) {
        EXPECT_EQ(f->bit_width, w) << "DPDK " << name;
        seen.insert(f);
    }
}

TEST(PrmTsv, EveryFieldRowMatchesTheTables) {
    auto rows = read_tsv("prm-virtq-fields.tsv");
    ASSERT_GT(rows.size(), 100u);
    auto t = tables();
    std::map<std::string, std::set<const Field*>> seen;
    for (const Row& r : rows) {
        ASSERT_GE(r.size(), 4u);
        const std::string& st = r[0];
        auto it = t.find(st);
        ASSERT_NE(it, t.end()) << "no table for TSV struct " << st;
        const Field* f = lookup(it->second, r[1]);
        if (!f) {
            ADD_FAILURE() << st << "." << r[1] << " missing from the tables";
            continue;
        }
        EXPECT_EQ(f->bit_offset, std::stoul(r[2])) << st << "." << r[1];
        EXPECT_EQ(f->bit_width, std::stoul(r[3])) << st << "." << r[1];
        seen[st].insert(f);
        if (auto d = t.find(dpdk_table_of(st)); d != t.end() && st.rfind("dpdk:", 0) != 0)
            check_dpdk_note(r, d->second, seen[d->first]);
    }
    // And the other way: no table field the TSV does not know.
    for (const auto& [st, fs] : t)
        for (const Field* f : fs)
            EXPECT_TRUE(seen[st].count(f)) << st << "." << f->name << " not in the TSV";
}

// Linux and DPDK names of the same bits agree: every bit of a DPDK value
// field is a bit of some Linux value field (any union view), or the codec
// carries the DPDK field itself.
TEST(PrmTsv, DpdkValueBitsAreLinuxValueBitsOrCarried) {
    auto t = tables();
    std::set<const Field*> carried;
    for (const Field* f : lay::virtio_q::kCarried) carried.insert(f);
    for (const Field* f : lay::virtio_net_q_object::kCarried) carried.insert(f);
    for (const Field* f : lay::virtio_emulation_cap::kCarried) carried.insert(f);
    const std::pair<const char*, const char*> pairs[] = {
        {"dpdk:virtio_q", "virtio_q"},
        {"dpdk:virtio_net_q", "virtio_net_q_object"},
        {"dpdk:virtio_emulation_cap", "virtio_emulation_cap"},
        {"dpdk:general_obj_in_cmd_hdr", "general_obj_in_cmd_hdr"},
    };
    for (auto [dpdk, linux_name] : pairs) {
        for (const Field* d : t[dpdk]) {
            if (d->reserved() || carried.count(d)) continue;
            for (uint32_t bit = d->bit_offset; bit < d->end(); ++bit) {
                bool covered = false;
                for (const Field* l : t[linux_name])
                    covered = covered || (!l->reserved() && bit >= l->bit_offset && bit < l->end());
                EXPECT_TRUE(covered) << dpdk << "." << d->name << " bit 0x" << std::hex << bit;
            }
        }
    }
}

uint64_t parse_value(const std::string& v) {
    if (v.rfind("1<<", 0) == 0) return 1ull << std::stoul(v.substr(3));
    return std::stoull(v, nullptr, 0);
}

int errno_of(const std::string& note) {
    const std::pair<const char*, int> names[] = {{"(-EIO)", EIO},       {"(-EINVAL)", EINVAL},
                                                 {"(-EBUSY)", EBUSY},   {"(-ENOMEM)", ENOMEM},
                                                 {"(-EAGAIN)", EAGAIN}};
    for (auto [s, e] : names)
        if (note.find(s) != std::string::npos) return e;
    return -1;
}

TEST(PrmTsv, EnumsMatchTheCode) {
    auto rows = read_tsv("prm-virtq-enums.tsv");
    ASSERT_GT(rows.size(), 30u);
    const std::map<std::string, uint64_t> modify = {
        {"STATE", modify_bits::STATE},
        {"DIRTY_BITMAP_PARAMS", modify_bits::DIRTY_BITMAP_PARAMS},
        {"DIRTY_BITMAP_DUMP_ENABLE", modify_bits::DIRTY_BITMAP_DUMP_ENABLE},
        {"QUEUE_PERIOD", modify_bits::QUEUE_PERIOD},
        {"VIRTIO_Q_ADDRS", modify_bits::VIRTIO_Q_ADDRS},
        {"VIRTIO_Q_AVAIL_IDX", modify_bits::VIRTIO_Q_AVAIL_IDX},
        {"VIRTIO_Q_USED_IDX", modify_bits::VIRTIO_Q_USED_IDX},
        {"Q_TYPE", modify_bits::Q_TYPE},
        {"QUEUE_VIRTIO_VERSION", modify_bits::QUEUE_VIRTIO_VERSION},
        {"VIRTIO_Q_MKEY", modify_bits::VIRTIO_Q_MKEY},
        {"QUEUE_FEATURES", modify_bits::QUEUE_FEATURES},
        {"EVENT_MODE", modify_bits::EVENT_MODE},
        {"DESC_GROUP_MKEY", modify_bits::DESC_GROUP_MKEY},
    };
    int checked = 0;
    for (const Row& r : rows) {
        ASSERT_GE(r.size(), 3u);
        const std::string &g = r[0], &name = r[1];
        std::string note = r.size() > 3 ? r[3] : "";
        if (g == "modify_field_select") {
            ASSERT_TRUE(modify.count(name)) << name;
            EXPECT_EQ(modify.at(name), parse_value(r[2])) << name;
        } else if (g == "state") {
            auto v = uint8_t(parse_value(r[2]));
            EXPECT_STREQ(virtq_state_name(VirtqState(v)), name.c_str());
        } else if (g == "opcode") {
            EXPECT_STREQ(opcode_name(uint16_t(parse_value(r[2]))), name.c_str());
        } else if (g == "obj_type") {
            EXPECT_STREQ(obj_type_name(uint16_t(parse_value(r[2]))), name.c_str());
        } else if (g == "event_mode") {
            const char* names[] = {"NO_MSIX", "QP", "MSIX"};
            EXPECT_STREQ(names[int(parse_value(r[2]))], name.c_str());
            EXPECT_EQ(int(EventMode::MSIX), 2);
        } else if (g == "virtio_q_type") {
            EXPECT_EQ(uint64_t(name == "SPLIT" ? VirtqType::SPLIT : VirtqType::PACKED),
                      parse_value(r[2]));
        } else if (g == "event") {
            EXPECT_EQ(kEventObjectChange, parse_value(r[2]));
        } else if (g == "status") {
            auto v = uint8_t(parse_value(r[2]));
            EXPECT_STREQ(status_name(v), name.c_str());
            int e = errno_of(note);
            if (e >= 0) {
                EXPECT_EQ(status_to_errno(v), e) << name;
            }
        } else {
            continue;  // state(sw): a Linux driver-only marker
        }
        ++checked;
    }
    EXPECT_GT(checked, 40);
}

}  // namespace
}  // namespace mlx5async::prm
