// The device's semantic state: object tables and event routing, under one
// lock. Handlers (dispatch.cpp, handlers_*.cpp) run with `mu` held.
#pragma once

#include <mutex>

#include "events.hpp"
#include "objects.hpp"
#include "profile.hpp"
#include "store.hpp"

namespace mlx5async::emu {

namespace dp { class Datapath; }

struct DeviceState {
    explicit DeviceState(const Profile& p) : profile(p) {}
    const Profile& profile;

    std::mutex mu;  // the tables below (events has its own lock)
    ObjectTable<PdObj, Kind::Pd> pds;
    ObjectTable<PageObj, Kind::Uar> uars;
    ObjectTable<PageObj, Kind::Var> vars;
    ObjectTable<UmemObj, Kind::Umem> umems;
    ObjectTable<CountersObj, Kind::Counters> counters;
    ObjectTable<VirtqObj, Kind::Virtq> virtqs;
    ObjectTable<MkeyObj, Kind::Mkey> mkeys;
    ObjectTable<TdObj, Kind::Td> tds;
    ObjectTable<TisObj, Kind::Tis> tises;
    ObjectTable<CqObj, Kind::Cq> cqs;
    ObjectTable<QpObj, Kind::Qp> qps;
    ObjectTable<SqObj, Kind::Sq> sqs;
    EventHub events;
    dp::Datapath* datapath = nullptr;  // woken when a virtq enters RDY
};

}  // namespace mlx5async::emu
