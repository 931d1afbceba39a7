// Object store: one typed table per kind. Ids are kind(4) | generation(8) |
// index(12), 24 bits (they fit the PRM's 24-bit pd/tisn fields). A stale id
// (slot reused, generation moved on) or an id of another kind fails with
// BAD_RES_ERR instead of reaching the wrong object. Free slots are reused
// oldest-first so a generation wraps only after many reuses.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "common/base/result.hpp"
#include "common/prm/status.hpp"
#include "syndrome.hpp"

namespace mlx5async::emu {

enum class Kind : uint8_t { Pd = 1, Uar = 2, Var = 3, Umem = 4, Counters = 5, Virtq = 6, Mkey = 7, Td = 8, Tis = 9,
                            Cq = 10, Qp = 11, Sq = 12 };

// A firmware failure (status + syndrome) as an Error.
inline Unexpected<Error> fw_fail(prm::Status s, uint32_t syn, std::string what = {}) {
    Error e;
    e.code = Errc::Firmware;
    e.fw_status = uint8_t(s);
    e.syndrome = syn;
    e.what = std::move(what);
    return unexpected(std::move(e));
}

template <typename T, Kind K>
class ObjectTable {
public:
    static constexpr uint32_t kMaxObjects = 4096;

    static constexpr uint32_t make_id(uint32_t gen, uint32_t idx) {
        return (uint32_t(K) << 20) | ((gen & 0xff) << 12) | (idx & 0xfff);
    }

    Result<uint32_t> insert(T obj) {
        uint32_t idx;
        if (!free_.empty()) {
            idx = free_.front();
            free_.pop_front();
        } else if (slots_.size() < kMaxObjects) {
            idx = uint32_t(slots_.size());
            slots_.emplace_back();
        } else {
            return fw_fail(prm::Status::LIM_ERR, syndrome::kTableFull, "object table full");
        }
        Slot& s = slots_[idx];
        s.obj.emplace(std::move(obj));
        ++count_;
        return make_id(s.gen, idx);
    }

    Result<T&> find(uint32_t id) {
        uint32_t idx = id & 0xfff;
        if ((id >> 20) != uint32_t(K) || idx >= slots_.size() || !slots_[idx].obj ||
            make_id(slots_[idx].gen, idx) != id)
            return fw_fail(prm::Status::BAD_RES_ERR, syndrome::kUnknownObject + uint32_t(K),
                           "unknown object id");
        return *slots_[idx].obj;
    }
    Result<const T&> find(uint32_t id) const {
        auto r = const_cast<ObjectTable*>(this)->find(id);
        if (!r) return unexpected(r.error());
        return *r;
    }

    bool erase(uint32_t id) {
        if (!find(id)) return false;
        Slot& s = slots_[id & 0xfff];
        s.obj.reset();
        ++s.gen;
        free_.push_back(id & 0xfff);
        --count_;
        return true;
    }

    template <typename F>
    void for_each(F&& fn) {
        for (uint32_t i = 0; i < slots_.size(); ++i)
            if (slots_[i].obj) fn(make_id(slots_[i].gen, i), *slots_[i].obj);
    }

    size_t size() const { return count_; }

private:
    struct Slot {
        uint8_t gen = 0;
        std::optional<T> obj;
    };
    std::vector<Slot> slots_;
    std::deque<uint32_t> free_;
    size_t count_ = 0;
};

}  // namespace mlx5async::emu
