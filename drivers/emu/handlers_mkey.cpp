// CREATE_MKEY (0x200), DESTROY_MKEY (0x202), QUERY_SPECIAL_CONTEXTS (0x203).
// The two mkey shapes a vDPA driver registers guest memory with (DPDK
// mlx5_vdpa_mem.c, Linux mlx5_vdpa mr.c): a direct MTT mkey over a umem, and
// an indirect KLM mkey whose entries name direct mkeys (or the null mkey for
// holes between guest memory regions).
#include "common/prm/general_obj.hpp"
#include "common/prm/mkey.hpp"
#include "dispatch.hpp"
#include "guest_memory.hpp"

namespace mlx5async::emu {
namespace {

using prm::MkeyAccessMode;
using prm::MkeyAttr;
using prm::Status;

Result<void> bad_param(uint32_t syn, const char* what) {
    return fw_fail(Status::BAD_PARAM_ERR, syn, what);
}

// PRM: an MTT mkey takes its translations from the umem (the kernel sets
// mkey_umem_valid for every DevX MTT mkey, api_cmd.cpp), which must hold
// [umem_offset, umem_offset + len); one MTT entry per page.
Result<void> validate_direct(DeviceState& st, const MkeyAttr& a) {
    auto u = st.umems.find(a.umem_id);
    if (!u) return unexpected(u.error());
    if (a.umem_offset > u->size || a.len > u->size - a.umem_offset)
        return bad_param(syndrome::kMkeyUmemRange, "mkey past its umem");
    if (a.log_page_size < prm::kMkeyPageShift || a.log_page_size > 30)
        return bad_param(syndrome::kMkeyPageSize, "log_page_size");
    uint64_t page = 1ull << a.log_page_size;
    if (uint64_t(a.translations_octword_actual_size) * 2 < (a.len + page - 1) / page)
        return bad_param(syndrome::kMkeyTranslations, "fewer MTT entries than pages");
    return {};
}

// Every entry names a direct mkey (or the null mkey) and lies inside it; the
// entries tile [start_addr, start_addr + len).
Result<void> validate_indirect(DeviceState& st, const MkeyAttr& a) {
    if (a.umem_valid) return bad_param(syndrome::kMkeyUmemWithKlm, "KLM with umem");
    if (a.klm.empty()) return bad_param(syndrome::kMkeyKlmEmpty, "KLM without entries");
    uint64_t sum = 0;
    for (const prm::KlmEntry& e : a.klm) {
        if (e.byte_count == 0) return bad_param(syndrome::kMkeyKlmZero, "KLM byte_count 0");
        sum += e.byte_count;
        if (e.mkey == kNullMkey) continue;
        const MkeyObj* d = find_mkey(st, e.mkey);
        if (!d) return fw_fail(Status::BAD_RES_ERR, syndrome::kMkeyKlmUnknown, "KLM mkey unknown");
        if (d->indirect) return bad_param(syndrome::kMkeyKlmIndirect, "KLM names an indirect mkey");
        if (e.address < d->start || e.address - d->start > d->len ||
            e.byte_count > d->len - (e.address - d->start))
            return bad_param(syndrome::kMkeyKlmRange, "KLM entry outside its mkey");
    }
    if (sum != a.len) return bad_param(syndrome::kMkeyKlmLength, "KLM entries do not sum to len");
    return {};
}

Result<void> validate(DeviceState& st, const MkeyAttr& a) {
    bool klm = a.access_mode == MkeyAccessMode::KLM;
    if (!klm && a.access_mode != MkeyAccessMode::MTT)
        return bad_param(syndrome::kMkeyAccessMode, "access mode");
    if (a.len == 0) return bad_param(syndrome::kMkeyLenZero, "len 0");
    if (a.start_addr + a.len < a.start_addr)
        return bad_param(syndrome::kMkeyRangeOverflow, "start_addr + len wraps");
    if (auto pd = st.pds.find(a.pd); !pd) return unexpected(pd.error());
    return klm ? validate_indirect(st, a) : validate_direct(st, a);
}

// A direct mkey pins its umem and PD; an indirect one its direct mkeys and PD.
void pin(DeviceState& st, const MkeyObj& m, int delta) {
    if (auto pd = st.pds.find(m.pd)) pd->refs += delta;
    if (!m.indirect) {
        if (auto u = st.umems.find(m.umem_id)) u->refs += delta;
        return;
    }
    for (const prm::KlmEntry& e : m.klm)
        if (MkeyObj* d = e.mkey == kNullMkey ? nullptr : find_mkey(st, e.mkey)) d->refs += delta;
}

Result<void> need_in(const Mailbox& m, size_t n) {
    if (m.in.size() < n) return fw_fail(Status::BAD_INP_LEN_ERR, syndrome::kInLenShort, "inlen");
    return {};
}

}  // namespace

Result<void> h_create_mkey(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need_in(m, prm::kCreateMkeyInBytes));
    if (auto name = prm::create_mkey_in_nonzero_reserved(m.in); !name.empty())
        return fw_fail(Status::BAD_PARAM_ERR, syndrome::kReservedNonZero,
                       "reserved field " + std::string(name) + " not zero");
    auto a = prm::decode_create_mkey_in(m.in);
    if (!a) return fw_fail(Status::BAD_INP_LEN_ERR, syndrome::kMkeyKlmInLen, a.error().what);
    MLX5A_CHECK(validate(st, *a));
    MkeyObj obj;
    obj.ctx = m.ctx;
    obj.indirect = a->access_mode == MkeyAccessMode::KLM;
    obj.key = a->mkey_7_0;
    obj.pd = a->pd;
    obj.start = a->start_addr;
    obj.len = a->len;
    obj.umem_id = obj.indirect ? 0 : a->umem_id;
    obj.umem_offset = obj.indirect ? 0 : a->umem_offset;
    obj.klm = a->klm;
    auto id = st.mkeys.insert(obj);
    if (!id) return unexpected(id.error());
    pin(st, obj, +1);
    m.created_id = *id;
    prm::encode_create_mkey_out(*id, m.out);
    return {};
}

void remove_mkey(DeviceState& st, uint32_t id) {
    auto mk = st.mkeys.find(id);
    if (!mk) return;
    pin(st, *mk, -1);
    st.mkeys.erase(id);
}

Result<void> h_destroy_mkey(DeviceState& st, Mailbox& m) {
    MLX5A_CHECK(need_in(m, prm::kDestroyMkeyInBytes));
    uint32_t id = *prm::decode_destroy_mkey_in(m.in);
    auto mk = st.mkeys.find(id);
    if (!mk) return unexpected(mk.error());
    if (mk->refs)
        return fw_fail(Status::RES_BUSY, syndrome::kObjectInUse, "mkey used by a virtq or an mkey");
    remove_mkey(st, id);
    prm::write_general_obj_out({0, 0, 0}, m.out);
    return {};
}

Result<void> h_query_special_contexts(DeviceState&, Mailbox& m) {
    MLX5A_CHECK(need_in(m, prm::kQuerySpecialContextsInBytes));
    if (m.out.size() < prm::kQuerySpecialContextsOutBytes)
        return fw_fail(Status::BAD_OUTP_LEN_ERR, syndrome::kOutLenShort, "outlen");
    prm::SpecialContexts s;
    s.null_mkey = kNullMkey;
    prm::encode_query_special_contexts_out(s, m.out);
    return {};
}

}  // namespace mlx5async::emu
