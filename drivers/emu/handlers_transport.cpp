// ALLOC/DEALLOC_TRANSPORT_DOMAIN and CREATE/DESTROY_TIS: a TIS lives in a
// transport domain (pinning it) and, optionally, a PD; a TX virtq may name a
// TIS in tisn_or_qpn (pinning it, handlers_virtq.cpp).
#include <string>

#include "common/prm/transport.hpp"
#include "dispatch.hpp"
#include "syndrome.hpp"

namespace mlx5async::emu {
namespace {

using prm::Status;

Result<void> need_in(const Mailbox& m, size_t n) {
    if (m.in.size() < n) return fw_fail(Status::BAD_INP_LEN_ERR, syndrome::kInLenShort, "inlen");
    if (m.out.size() < prm::kTransportCmdBytes)
        return fw_fail(Status::BAD_OUTP_LEN_ERR, syndrome::kOutLenShort, "outlen");
    return {};
}

}  // namespace

Result<void> h_alloc_transport_domain(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need_in(m, prm::kTransportCmdBytes));
    auto id = st.tds.insert(TdObj{m.ctx, 0});
    if (!id) return unexpected(id.error());
    m.created_id = *id;
    prm::encode_alloc_transport_domain_out(*id, m.out);
    return {};
}

Result<void> h_dealloc_transport_domain(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need_in(m, prm::kTransportCmdBytes));
    uint32_t id = *prm::decode_dealloc_transport_domain_in(m.in);
    auto td = st.tds.find(id);
    if (!td) return unexpected(td.error());
    if (td->refs) return fw_fail(Status::RES_BUSY, syndrome::kObjectInUse, "transport domain has TISes");
    st.tds.erase(id);
    prm::write_general_obj_out({0, 0, 0}, m.out);
    return {};
}

Result<void> h_create_tis(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need_in(m, prm::kCreateTisInBytes));
    if (auto name = prm::create_tis_in_nonzero_reserved(m.in); !name.empty())
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kReservedNonZero,
                       "reserved field " + std::string(name) + " not zero");
    auto a = prm::decode_create_tis_in(m.in);
    if (!a) return fw_fail(Status::BAD_PARAM_ERR, syndrome::kDecodeFailed, a.error().what);
    auto td = st.tds.find(a->transport_domain);
    if (!td) return fw_fail(Status::BAD_PARAM_ERR, syndrome::kTisUnknownTd, "unknown transport domain");
    if (a->pd && !st.pds.find(a->pd))
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kTisUnknownPd, "unknown pd");
    auto id = st.tises.insert(TisObj{m.ctx, a->transport_domain, a->pd, 0});
    if (!id) return unexpected(id.error());
    td->refs++;
    m.created_id = *id;
    prm::encode_create_tis_out(*id, m.out);
    return {};
}

Result<void> h_destroy_tis(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need_in(m, prm::kTransportCmdBytes));
    uint32_t id = *prm::decode_destroy_tis_in(m.in);
    auto tis = st.tises.find(id);
    if (!tis) return unexpected(tis.error());
    if (tis->refs) return fw_fail(Status::RES_BUSY, syndrome::kObjectInUse, "TIS used by a virtq or a send queue");
    if (auto td = st.tds.find(tis->td)) td->refs--;
    st.tises.erase(id);
    prm::write_general_obj_out({0, 0, 0}, m.out);
    return {};
}

}  // namespace mlx5async::emu
