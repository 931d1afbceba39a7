// CREATE/MODIFY/DESTROY_SQ and the send doorbell: each rule answers a PRM
// status and its syndrome and changes nothing; a rung SQ puts its inline
// frames on the port's wire with a REQ CQE each; a WQE the device cannot
// execute moves the SQ to ERR with a REQ_ERR CQE naming why, and sends
// nothing; the pcap file holds what left, byte for byte.
#include <endian.h>
#include <pcap/pcap.h>

#include <atomic>
#include <cstdio>
#include <filesystem>

#include "common/prm/sq.hpp"
#include "common/prm/transport.hpp"
#include "event_qp_fixture.hpp"
#include "testkit/eventually.hpp"

namespace mlx5async::emu::test {
namespace {

using mlx5async::testing::eventually;
using prm::SqState;
using prm::Status;
namespace syn = syndrome;

constexpr uint8_t kLogBlocks = 4;
constexpr uint16_t kBlocks = 1u << kLogBlocks;
constexpr size_t kRingBytes = prm::kWqeBasicBlock * kBlocks;

// A RARP as QEMU's self-announce builds it: broadcast, ethertype 0x8035.
std::vector<std::byte> rarp(uint8_t last_octet = 0x56) {
    std::vector<std::byte> f(60);
    for (int i = 0; i < 6; ++i) f[i] = std::byte{0xff};
    const uint8_t src[6] = {0x52, 0x54, 0x00, 0x12, 0x34, last_octet};
    for (int i = 0; i < 6; ++i) f[6 + i] = std::byte{src[i]};
    f[12] = std::byte{0x80};
    f[13] = std::byte{0x35};
    return f;
}

class SqTest : public EventQpTest {
protected:
    virtual std::string spec() const { return std::string("cx7,") + kZeroLatency; }
    void SetUp() override {
        open_device(spec());
        setup_event_objects();
        std::vector<std::byte> in(prm::kTransportCmdBytes);
        prm::encode_alloc_transport_domain(in);
        td_ = create(in);
        ASSERT_TRUE(td_.obj);
        std::vector<std::byte> tin(prm::kCreateTisInBytes);
        ASSERT_TRUE(prm::encode_create_tis({.transport_domain = td_.id, .pd = pdn_}, tin));
        tis_ = create(tin);
        ASSERT_TRUE(tis_.obj);
        prm::CqAttr c = cq_attr(kLogBlocks);
        cq_ = create_cq(c);
        ASSERT_TRUE(cq_.obj);
        cqes_ = cq_mem_[c.cq_umem_id];
        cq_dbr_ = cqes_ + c.dbr_addr;
        mem_ = buffer(kRingBytes + 64);
    }

    prm::SqAttr sq_attr() const {
        prm::SqAttr s;
        s.state = uint8_t(SqState::RST);
        s.ts_format = uint8_t(prm::sq_ts_format_for_cap(dev_->profile().general.sq_ts_format));
        s.cqn = cq_.id;
        s.tis_lst_sz = 1;
        s.tis_num_0 = tis_.id;
        s.wq_type = prm::kWqTypeCyclic;
        s.pd = pdn_;
        s.uar_page = uar_->page_id;
        s.dbr_addr = kRingBytes;
        s.log_wq_stride = 6;
        s.log_wq_sz = kLogBlocks;
        s.dbr_umem_valid = s.wq_umem_valid = true;
        s.dbr_umem_id = s.wq_umem_id = mem_.umem;
        return s;
    }
    Made create_sq(const prm::SqAttr& a) {
        std::vector<std::byte> in(prm::kCreateSqInBytes);
        EXPECT_TRUE(prm::encode_create_sq(a, in));
        return create_raw_sq(in);
    }
    Made create_raw_sq(std::vector<std::byte>& in) {
        std::vector<std::byte> out(prm::kSqCmdBytes);
        Made m;
        m.obj = A.obj_create(ctx_, in.data(), in.size(), out.data(), out.size());
        m.ret = ret_of(m.obj ? 0 : errno, out);
        if (m.obj) {
            objs_.push_back(m.obj);
            m.id = *prm::decode_create_sq_out(out);
        }
        return m;
    }
    CmdRet modify_sq(const Made& sq, SqState from, SqState to) {
        std::vector<std::byte> in(prm::kModifySqInBytes), out(prm::kSqCmdBytes);
        EXPECT_TRUE(prm::encode_modify_sq({sq.id, uint8_t(from), uint8_t(to)}, in));
        return ret_of(A.obj_modify(sq.obj, in.data(), in.size(), out.data(), out.size()), out);
    }
    Made ready_sq() {
        Made sq = create_sq(sq_attr());
        EXPECT_TRUE(sq.obj) << std::hex << sq.ret.syndrome;
        if (sq.obj) {
            EXPECT_EQ(modify_sq(sq, SqState::RST, SqState::RDY).rc, 0);
        }
        return sq;
    }

    // Writes a WQE at the producer counter, then (ring) the record and the
    // UAR register, as the driver does.
    void write_wqe(std::span<const std::byte> wqe) {
        for (size_t i = 0; i < wqe.size() / prm::kWqeBasicBlock; ++i)
            std::memcpy(mem_.host + ((pi_ + i) & (kBlocks - 1)) * prm::kWqeBasicBlock,
                        wqe.data() + i * prm::kWqeBasicBlock, prm::kWqeBasicBlock);
        pi_ = uint16_t(pi_ + wqe.size() / prm::kWqeBasicBlock);
    }
    void ring(std::span<const std::byte> first_block) {
        std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(mem_.host + kRingBytes + prm::kSqDbrSendCounter))
            .store(htobe32(pi_), std::memory_order_release);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        uint64_t first8;
        std::memcpy(&first8, first_block.data(), sizeof first8);
        std::atomic_ref<uint64_t>(*static_cast<uint64_t*>(uar_->reg_addr)).store(first8, std::memory_order_release);
    }
    std::vector<std::byte> send_wqe(const Made& sq, std::span<const std::byte> frame, uint16_t index) {
        std::vector<std::byte> w(prm::kWqeBasicBlock * prm::wqe_basic_blocks(prm::inline_send_ds(frame.size())));
        EXPECT_TRUE(prm::encode_inline_send(index, sq.id, true, frame, w));
        return w;
    }
    void post(const Made& sq, std::span<const std::byte> frame) {
        auto w = send_wqe(sq, frame, pi_);
        write_wqe(w);
        ring(w);
    }

    SqInfo info(const Made& sq) { return *dev_->sq_info(sq.id); }
    prm::Cqe cqe(uint32_t n) {
        return prm::decode_cqe(std::span<const std::byte, prm::kCqeBytes>(
            cqes_ + (n & (kBlocks - 1)) * prm::kCqeBytes, prm::kCqeBytes));
    }
    void consume_cqes(uint32_t ci) {
        std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(cq_dbr_)).store(htobe32(ci), std::memory_order_release);
    }

    Made td_, tis_, cq_;
    std::byte* cqes_ = nullptr;
    std::byte* cq_dbr_ = nullptr;
    HostBuf mem_;
    uint16_t pi_ = 0;
};

TEST_F(SqTest, CreateModifyDestroyAndPins) {
    const size_t before = dev_->object_counts().sqs;
    Made sq = create_sq(sq_attr());
    ASSERT_TRUE(sq.obj) << std::hex << sq.ret.syndrome;
    EXPECT_EQ(dev_->object_counts().sqs, before + 1);
    EXPECT_EQ(info(sq).state, SqState::RST);
    EXPECT_NE(destroy_obj(cq_.obj), 0) << "an SQ pins its CQ";
    EXPECT_NE(destroy_obj(tis_.obj), 0) << "an SQ pins its TIS";
    ASSERT_EQ(modify_sq(sq, SqState::RST, SqState::RDY).rc, 0);
    EXPECT_EQ(info(sq).state, SqState::RDY);
    ASSERT_EQ(modify_sq(sq, SqState::RDY, SqState::RST).rc, 0);
    EXPECT_EQ(destroy_obj(sq.obj), 0);
    EXPECT_EQ(dev_->object_counts().sqs, before);
    EXPECT_EQ(destroy_obj(cq_.obj), 0) << "the CQ is free once the SQ is gone";
}

TEST_F(SqTest, CreateRulesAnswerSyndromeAndMakeNothing) {
    const size_t before = dev_->object_counts().sqs;
    struct Case {
        const char* what;
        void (*bend)(prm::SqAttr&, uint32_t);
        Status status;
        uint32_t syndrome;
    };
    const Case cases[] = {
        {"state RDY at create", [](prm::SqAttr& a, uint32_t) { a.state = uint8_t(SqState::RDY); },
         Status::BAD_PARAM_ERR, syn::kSqCreateNotRst},
        {"wq_type linked list", [](prm::SqAttr& a, uint32_t) { a.wq_type = 0; }, Status::BAD_PARAM_ERR,
         syn::kSqWqType},
        {"128-byte stride", [](prm::SqAttr& a, uint32_t) { a.log_wq_stride = 7; }, Status::BAD_PARAM_ERR,
         syn::kSqStride},
        {"ts_format 3", [](prm::SqAttr& a, uint32_t) { a.ts_format = 3; }, Status::BAD_PARAM_ERR, syn::kSqTsFormat},
        {"unknown pd", [](prm::SqAttr& a, uint32_t) { a.pd += 77; }, Status::BAD_RES_ERR, syn::kSqBadPd},
        {"no TIS", [](prm::SqAttr& a, uint32_t) { a.tis_lst_sz = 0; }, Status::BAD_PARAM_ERR, syn::kSqTis},
        {"unknown CQ", [](prm::SqAttr& a, uint32_t) { a.cqn += 77; }, Status::BAD_PARAM_ERR, syn::kSqBadCq},
        {"no umem", [](prm::SqAttr& a, uint32_t) { a.wq_umem_valid = false; }, Status::BAD_PARAM_ERR,
         syn::kSqNoUmem},
        {"unknown umem", [](prm::SqAttr& a, uint32_t) { a.wq_umem_id += 77; }, Status::BAD_RES_ERR,
         syn::kSqUmemUnknown},
        {"ring past the umem", [](prm::SqAttr& a, uint32_t) { a.log_wq_sz = 10; }, Status::BAD_PARAM_ERR,
         syn::kSqUmemRange},
        {"ring not 64-byte aligned", [](prm::SqAttr& a, uint32_t) { a.wq_umem_offset = 8; },
         Status::BAD_PARAM_ERR, syn::kSqRingAlign},
        {"record past the umem", [](prm::SqAttr& a, uint32_t size) { a.dbr_addr = size; }, Status::BAD_PARAM_ERR,
         syn::kSqDbrRange},
        {"record not 8-byte aligned", [](prm::SqAttr& a, uint32_t) { a.dbr_addr = kRingBytes + 4; },
         Status::BAD_PARAM_ERR, syn::kSqDbrAlign},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.what);
        prm::SqAttr a = sq_attr();
        c.bend(a, uint32_t(mem_.size));
        Made sq = create_sq(a);
        EXPECT_FALSE(sq.obj);
        expect_rule(sq.ret, c.status, c.syndrome);
    }
    std::vector<std::byte> in(prm::kCreateSqInBytes);
    ASSERT_TRUE(prm::encode_create_sq(sq_attr(), in));
    in[in.size() - 1] = std::byte{1};  // the wq's last reserved bytes
    Made reserved = create_raw_sq(in);
    EXPECT_FALSE(reserved.obj);
    expect_rule(reserved.ret, Status::BAD_PARAM_ERR, syn::kReservedNonZero);
    EXPECT_EQ(dev_->object_counts().sqs, before);
}

TEST_F(SqTest, ModifyNamesTheStateItSawAndOnlyLegalMoves) {
    Made sq = create_sq(sq_attr());
    ASSERT_TRUE(sq.obj);
    expect_rule(modify_sq(sq, SqState::RDY, SqState::RST), Status::BAD_RES_STATE_ERR, syn::kSqBadState);
    expect_rule(modify_sq(sq, SqState::RST, SqState::ERR), Status::BAD_PARAM_ERR, syn::kSqIllegalTransition);
    EXPECT_EQ(info(sq).state, SqState::RST) << "a refused MODIFY changes nothing";
    ASSERT_EQ(modify_sq(sq, SqState::RST, SqState::RDY).rc, 0);
    expect_rule(modify_sq(sq, SqState::RDY, SqState::RDY), Status::BAD_PARAM_ERR, syn::kSqIllegalTransition);
    EXPECT_EQ(info(sq).state, SqState::RDY);
}

TEST_F(SqTest, RungFramesLeaveOnTheWireWithACompletionEach) {
    Made sq = ready_sq();
    ASSERT_TRUE(sq.obj);
    // 30 frames through a ring of 16 blocks: the counter wraps the ring.
    for (uint16_t i = 0; i < 30; ++i) {
        auto f = rarp(uint8_t(i));
        post(sq, f);
        ASSERT_TRUE(eventually([&] { return info(sq).completions == i + 1u; })) << "frame " << i;
        const prm::Cqe c = cqe(i);
        EXPECT_EQ(c.opcode, uint8_t(prm::CqeOpcode::REQ));
        EXPECT_EQ(c.qpn, sq.id);
        EXPECT_EQ(c.wqe_counter, uint16_t(pi_ - 2)) << "the WQE's first block (a 60-byte frame takes 2)";
        EXPECT_EQ(c.owner, bool((i >> kLogBlocks) & 1));
        consume_cqes(i + 1u);
    }
    EXPECT_EQ(info(sq).sent, 30u);
    EXPECT_EQ(info(sq).consumed, pi_);
    const dp::WireCounters w = dev_->wire().counters();
    EXPECT_EQ(w.frames, 30u);
    EXPECT_EQ(w.rarp, 30u);
    EXPECT_EQ(w.bytes, 30u * 60);
    auto kept = dev_->wire().frames();
    ASSERT_EQ(kept.size(), 30u);
    EXPECT_EQ(kept.back().bytes, rarp(29));
    EXPECT_GT(kept.back().wall_ns, 0u);
}

// A WQE bent after encoding: the SQ goes to ERR, names why, completes it
// with a REQ_ERR CQE of `syndrome`, and sends nothing.
struct Bend {
    const char* what;
    void (*bend)(std::vector<std::byte>&);
    prm::CqeSyndrome syndrome;
    const char* says;
};

class SqMalformed : public SqTest, public ::testing::WithParamInterface<Bend> {};

TEST_P(SqMalformed, MovesTheSqToErrAndSendsNothing) {
    const Bend& b = GetParam();
    Made sq = ready_sq();
    ASSERT_TRUE(sq.obj);
    auto f = rarp();
    auto w = send_wqe(sq, f, pi_);
    b.bend(w);
    write_wqe(w);
    ring(w);
    ASSERT_TRUE(eventually([&] { return info(sq).state == SqState::ERR; })) << b.what;
    const SqInfo i = info(sq);
    EXPECT_NE(i.error.find(b.says), std::string::npos) << i.error;
    EXPECT_EQ(i.sent, 0u);
    EXPECT_EQ(dev_->wire().counters().frames, 0u);
    ASSERT_EQ(i.completions, 1u);
    const prm::Cqe c = cqe(0);
    EXPECT_EQ(c.opcode, uint8_t(prm::CqeOpcode::REQ_ERR));
    EXPECT_EQ(c.syndrome, uint8_t(b.syndrome));
    EXPECT_EQ(c.wqe_counter, 0u);
    consume_cqes(1);
    // ERR -> RST -> RDY forgets the ring: a good WQE at 0 then leaves.
    ASSERT_EQ(modify_sq(sq, SqState::ERR, SqState::RST).rc, 0);
    EXPECT_EQ(info(sq).consumed, 0u);
    EXPECT_TRUE(info(sq).error.empty());
    ASSERT_EQ(modify_sq(sq, SqState::RST, SqState::RDY).rc, 0);
    pi_ = 0;
    post(sq, f);
    ASSERT_TRUE(eventually([&] { return info(sq).sent == 1u; }));
    EXPECT_EQ(dev_->wire().counters().rarp, 1u);
}

void put_be16(std::vector<std::byte>& w, size_t at, uint16_t v) {
    w[at] = std::byte(v >> 8);
    w[at + 1] = std::byte(v & 0xff);
}

INSTANTIATE_TEST_SUITE_P(
    Wqes, SqMalformed,
    ::testing::Values(
        Bend{"wqe_index not the ring's counter", [](std::vector<std::byte>& w) { put_be16(w, 1, 5); },
             prm::CqeSyndrome::LOCAL_QP_OP_ERR, "wqe_index 5"},
        Bend{"another SQ's number", [](std::vector<std::byte>& w) { w[4] = std::byte(uint8_t(w[4]) ^ 0x01); },
             prm::CqeSyndrome::LOCAL_QP_OP_ERR, "names SQ"},
        Bend{"not a SEND", [](std::vector<std::byte>& w) { w[3] = std::byte{0x08}; },  // RDMA_WRITE
             prm::CqeSyndrome::LOCAL_QP_OP_ERR, "send WQE: opcode 0x8"},
        Bend{"checksum offload asked", [](std::vector<std::byte>& w) { w[16 + 4] = std::byte{0xc0}; },
             prm::CqeSyndrome::LOCAL_QP_OP_ERR, "wqe_eth_seg: "},
        Bend{"one segment", [](std::vector<std::byte>& w) { w[7] = std::byte{1}; },
             prm::CqeSyndrome::LOCAL_LENGTH_ERR, "ds 1"},
        Bend{"more blocks than the record posts", [](std::vector<std::byte>& w) { w[7] = std::byte{12}; },
             prm::CqeSyndrome::LOCAL_LENGTH_ERR, "the record posts 2"}),
    [](const auto& info) {
        std::string n = info.param.what;
        for (char& ch : n)
            if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
        return n;
    });

TEST_F(SqTest, ARecordAheadOfTheRingIsAnError) {
    Made sq = ready_sq();
    ASSERT_TRUE(sq.obj);
    auto f = rarp();
    auto w = send_wqe(sq, f, 0);
    write_wqe(w);
    pi_ = kBlocks + 1;  // more blocks posted than the ring holds
    ring(w);
    ASSERT_TRUE(eventually([&] { return info(sq).state == SqState::ERR; }));
    EXPECT_NE(info(sq).error.find("ahead of a ring of 16"), std::string::npos) << info(sq).error;
    EXPECT_EQ(cqe(0).syndrome, uint8_t(prm::CqeSyndrome::LOCAL_LENGTH_ERR));
    EXPECT_EQ(dev_->wire().counters().frames, 0u);
}

class SqSmallMtu : public SqTest {
protected:
    std::string spec() const override { return std::string("cx7,mtu=68,") + kZeroLatency; }
};

TEST_F(SqSmallMtu, AFrameOverThePortsMtuIsALengthError) {
    Made sq = ready_sq();
    ASSERT_TRUE(sq.obj);
    post(sq, std::vector<std::byte>(87));  // 68 + 14 + 4 = 86 passes
    ASSERT_TRUE(eventually([&] { return info(sq).state == SqState::ERR; }));
    EXPECT_NE(info(sq).error.find("a frame of 87 bytes (the port passes 14..86)"), std::string::npos)
        << info(sq).error;
    EXPECT_EQ(cqe(0).syndrome, uint8_t(prm::CqeSyndrome::LOCAL_LENGTH_ERR));
    EXPECT_EQ(dev_->wire().counters().frames, 0u);
}

std::string pcap_path() {
    return (std::filesystem::path(::testing::TempDir()) /
            ("mlx5emu-wire-" + std::to_string(::getpid()) + ".pcap")).string();
}

class SqPcap : public SqTest {
protected:
    std::string spec() const override {
        return "cx7,mac=52:54:00:12:34:56,wire_pcap=" + pcap_path() + "," + kZeroLatency;
    }
    void TearDown() override {
        SqTest::TearDown();
        std::filesystem::remove(pcap_path());
    }
};

TEST_F(SqPcap, ThePcapFileHoldsWhatLeftAndTheVportItsMac) {
    auto vport = query_own_vport();
    ASSERT_TRUE(vport) << to_string(vport.error());
    EXPECT_EQ(vport->permanent_mac, 0x525400123456u);

    Made sq = ready_sq();
    ASSERT_TRUE(sq.obj);
    for (uint8_t i = 0; i < 3; ++i) {
        post(sq, rarp(i));
        ASSERT_TRUE(eventually([&] { return info(sq).sent == i + 1u; }));
    }
    const auto kept = dev_->wire().frames();
    ASSERT_EQ(kept.size(), 3u);
    char err[PCAP_ERRBUF_SIZE];
    pcap_t* p = pcap_open_offline_with_tstamp_precision(pcap_path().c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
    ASSERT_NE(p, nullptr) << err;
    EXPECT_EQ(pcap_datalink(p), DLT_EN10MB);
    pcap_pkthdr* h = nullptr;
    const u_char* data = nullptr;
    for (uint8_t i = 0; i < 3; ++i) {
        ASSERT_EQ(pcap_next_ex(p, &h, &data), 1) << "frame " << int(i);
        const auto want = rarp(i);
        ASSERT_EQ(h->caplen, want.size());
        EXPECT_EQ(std::memcmp(data, want.data(), want.size()), 0);
        EXPECT_EQ(uint64_t(h->ts.tv_sec) * 1000000000u + uint64_t(h->ts.tv_usec), kept[i].wall_ns)
            << "nanosecond timestamps, the frame's own";
    }
    EXPECT_EQ(pcap_next_ex(p, &h, &data), PCAP_ERROR_BREAK) << "nothing else left";
    pcap_close(p);
    EXPECT_EQ(dev_->wire().counters().pcap_errors, 0u);
}

TEST(SqSpec, AWirePcapInAMissingFolderOrABadMacIsRefused) {
    auto d = create_device("t-sq-bad-pcap", "cx7,wire_pcap=/nonexistent-mlx5emu-dir/wire.pcap");
    ASSERT_FALSE(d);
    EXPECT_NE(to_string(d.error()).find("/nonexistent-mlx5emu-dir/wire.pcap"), std::string::npos)
        << to_string(d.error());
    auto rel = create_device("t-sq-rel-pcap", "cx7,wire_pcap=wire.pcap");
    ASSERT_FALSE(rel);
    EXPECT_NE(to_string(rel.error()).find("absolute"), std::string::npos) << to_string(rel.error());
    auto mac = create_device("t-sq-bad-mac", "cx7,mac=52:54:00:12:34");
    ASSERT_FALSE(mac);
    EXPECT_NE(to_string(mac.error()).find("mac=52:54:00:12:34"), std::string::npos) << to_string(mac.error());
}

}  // namespace
}  // namespace mlx5async::emu::test
