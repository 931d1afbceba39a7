// Every PRM decoder on arbitrary bytes: none may crash, read out of bounds
// or hang; each decoder with an encoder round-trips what it accepted
// (decode -> encode -> decode gives the same value; reserved bits may go).
// Input: a selector byte, then the buffer.
#include <cstdint>
#include <span>
#include <vector>

#include "common/prm/caps.hpp"
#include "common/prm/counters.hpp"
#include "common/prm/event_qp.hpp"
#include "common/prm/general_obj.hpp"
#include "common/prm/mkey.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"
#include "common/prm/transport.hpp"
#include "common/prm/virtq.hpp"
#include "fuzz_check.hpp"

namespace prm = mlx5async::prm;
using Bytes = std::span<const std::byte>;

namespace {

// decode(in) accepted: encode it into `size` bytes and decode again.
template <typename Decode, typename Encode>
void round_trip(Bytes in, size_t size, Decode decode, Encode encode) {
    auto a = decode(in);
    if (!a) {
        (void)prm::describe(a.error());  // the message of any refusal is printable
        return;
    }
    std::vector<std::byte> buf(size);
    encode(*a, std::span<std::byte>(buf));
    auto b = decode(Bytes(buf));
    FUZZ_CHECK(b, "a decoded value did not decode again after encoding");
    FUZZ_CHECK(*b == *a, "decode -> encode -> decode changed the value");
}

template <typename R>
void must_succeed(const R& r) {
    FUZZ_CHECK(r, "encoding a decoded value failed");
}

template <typename Decode>
void decode_only(Bytes in, Decode decode) {
    auto r = decode(in);
    if (!r) (void)prm::describe(r.error());
}

void with_status_header(std::vector<std::byte>& out) {
    for (size_t i = 0; i < prm::kGeneralObjOutHdrBytes; i++) out[i] = std::byte{0};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    Bytes in(reinterpret_cast<const std::byte*>(data) + 1, size - 1);
    switch (data[0] % 20) {
    case 0:
        round_trip(in, prm::kCapLayoutBytes, prm::read_general_caps,
                   [](const prm::GeneralCaps& c, std::span<std::byte> b) { prm::write_general_caps(c, b); });
        break;
    case 1:
        round_trip(in, prm::kCapLayoutBytes, prm::read_virtio_emulation_caps,
                   [](const prm::VirtioEmulationCaps& c, std::span<std::byte> b) {
                       prm::write_virtio_emulation_caps(c, b);
                   });
        break;
    case 2:
        round_trip(in, prm::kVirtqObjBytes, prm::read_virtq_object,
                   [](const prm::VirtqAttr& a, std::span<std::byte> b) {
                       must_succeed(prm::write_virtq_object(a, b));
                   });
        (void)prm::virtq_object_nonzero_reserved(in);
        break;
    case 3:
        round_trip(in, prm::kCountersQueryOutBytes,
                   [](Bytes b) { return prm::decode_query_counters_out(b); },
                   [](const prm::VirtqCounters& c, std::span<std::byte> b) {
                       std::vector<std::byte> out(b.size());
                       with_status_header(out);
                       prm::write_counters_object(c, std::span(out).subspan(prm::kGeneralObjOutHdrBytes));
                       std::copy(out.begin(), out.end(), b.begin());
                   });
        break;
    case 4:
        round_trip(in, prm::kCreateCqInBytes, prm::decode_create_cq_in,
                   [](const prm::CqAttr& a, std::span<std::byte> b) { must_succeed(prm::encode_create_cq(a, b)); });
        break;
    case 5:
        round_trip(in, prm::kCreateQpInBytes, prm::decode_create_qp_in,
                   [](const prm::QpAttr& a, std::span<std::byte> b) { must_succeed(prm::encode_create_qp(a, b)); });
        break;
    case 6:
        round_trip(in, prm::kQpModifyInBytes, prm::decode_qp_modify_in,
                   [](const prm::QpModify& m, std::span<std::byte> b) { must_succeed(prm::encode_qp_modify(m, b)); });
        break;
    case 7: {
        auto a = prm::decode_create_mkey_in(in);
        (void)prm::create_mkey_in_nonzero_reserved(in);
        if (!a) break;
        auto enc = prm::encode_create_mkey(*a);
        FUZZ_CHECK(enc, "encoding a decoded mkey failed");
        auto b = prm::decode_create_mkey_in(Bytes(*enc));
        FUZZ_CHECK(b && *b == *a, "mkey decode -> encode -> decode changed the value");
        break;
    }
    case 8:
        round_trip(in, prm::kCreateTisInBytes, prm::decode_create_tis_in,
                   [](const prm::TisAttr& a, std::span<std::byte> b) { must_succeed(prm::encode_create_tis(a, b)); });
        break;
    case 9:
        if (in.size() >= prm::kCqeBytes) {
            auto c = prm::decode_cqe(in.first<prm::kCqeBytes>());
            std::vector<std::byte> b(prm::kCqeBytes);
            prm::encode_cqe(c, std::span<std::byte, prm::kCqeBytes>(b.data(), prm::kCqeBytes));
            FUZZ_CHECK(prm::decode_cqe(std::span<const std::byte, prm::kCqeBytes>(b.data(), prm::kCqeBytes)) == c,
                       "cqe decode -> encode -> decode changed the value");
        }
        break;
    case 10:
        if (in.size() >= 4) {
            uint32_t w = uint32_t(in[0]) | uint32_t(in[1]) << 8 | uint32_t(in[2]) << 16 | uint32_t(in[3]) << 24;
            auto a = prm::decode_cq_arm_word(w);
            FUZZ_CHECK(prm::decode_cq_arm_word(prm::cq_arm_word(a)) == a, "cq arm word round trip");
        }
        break;
    case 11:
        round_trip(in, prm::kQuerySpecialContextsOutBytes, prm::decode_query_special_contexts_out,
                   [](const prm::SpecialContexts& s, std::span<std::byte> b) {
                       prm::encode_query_special_contexts_out(s, b);
                   });
        break;
    case 12:
        decode_only(in, [](Bytes b) { return prm::decode_query_virtq_out(b, 0, -1); });
        break;
    case 13:
        decode_only(in, prm::decode_query_general_caps_out);
        decode_only(in, prm::decode_query_virtio_caps_out);
        break;
    case 14:
        decode_only(in, prm::decode_create_cq_out);
        decode_only(in, prm::decode_destroy_cq_in);
        decode_only(in, prm::decode_create_qp_out);
        decode_only(in, prm::decode_destroy_qp_in);
        break;
    case 15:
        decode_only(in, prm::decode_qp_modify_out);
        decode_only(in, prm::decode_create_mkey_out);
        decode_only(in, prm::decode_destroy_mkey_in);
        break;
    case 16:
        decode_only(in, prm::decode_alloc_transport_domain_out);
        decode_only(in, prm::decode_dealloc_transport_domain_in);
        decode_only(in, prm::decode_create_tis_out);
        decode_only(in, prm::decode_destroy_tis_in);
        break;
    case 17:
        decode_only(in, prm::read_general_obj_in);
        decode_only(in, prm::read_general_obj_out);
        break;
    case 18:
        if (in.size() >= 2) {
            uint16_t opcode = uint16_t(uint16_t(in[0]) | uint16_t(in[1]) << 8);
            auto r = prm::check_out(in.subspan(2), opcode, 0, -1);
            if (!r) (void)prm::describe(r.error());
            (void)prm::opcode_name(opcode);
        }
        break;
    case 19:
        if (!in.empty()) (void)prm::status_name(uint8_t(in[0]));
        break;
    }
    return 0;
}
