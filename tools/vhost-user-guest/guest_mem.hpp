// Guest memory (memfd regions, MAP_SHARED), split virtqueues laid out in it
// (virtio 1.x 2.7), packet buffers, and the dirty log.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol.hpp"
#include "split_ring_driver.hpp"

namespace vug {

struct Region {
    int fd = -1;
    uint8_t* host = nullptr;
    uint64_t gpa = 0;
    uint64_t size = 0;
};

class GuestMemory {
public:
    // total bytes split into n equal regions, contiguous guest physical
    // addresses from base_gpa.
    // `gap`: bytes between one region's end and the next one's guest
    // address (negative: they overlap; fault injection for the backend).
    GuestMemory(uint64_t base_gpa, uint64_t total, int nregions, int64_t gap = 0);
    ~GuestMemory();
    GuestMemory(const GuestMemory&) = delete;
    GuestMemory& operator=(const GuestMemory&) = delete;

    // Bump allocation of zeroed guest memory inside one region; returns the GPA.
    uint64_t alloc(uint64_t size, uint64_t align);
    uint8_t* host(uint64_t gpa, uint64_t len = 1) const;  // throws when outside
    uint64_t hva(uint64_t gpa) const { return reinterpret_cast<uint64_t>(host(gpa)); }
    uint64_t base() const { return regions_.front().gpa; }
    uint64_t end() const { return regions_.back().gpa + regions_.back().size; }
    const std::vector<Region>& regions() const { return regions_; }
    std::vector<MemRegion> table() const;
    std::vector<int> fds() const;

private:
    std::vector<Region> regions_;
    size_t cur_ = 0;       // region being allocated from
    uint64_t next_ = 0;    // offset in it
};

class Ring {
public:
    Ring(GuestMemory& mem, uint32_t index, uint16_t size);
    ~Ring();
    Ring(const Ring&) = delete;
    Ring& operator=(const Ring&) = delete;

    uint32_t index() const { return index_; }
    uint16_t size() const { return ring_.size(); }
    uint64_t desc_gpa() const { return ring_.desc_gpa(); }
    uint64_t avail_gpa() const { return ring_.avail_gpa(); }
    uint64_t used_gpa() const { return ring_.used_gpa(); }
    uint64_t used_bytes() const { return SplitRingDriver::used_bytes(size()); }
    // The SET_VRING_ADDR payload: user addresses are this process's mapping
    // (as QEMU sends its HVAs), the log address is the used ring's GPA.
    VringAddr addr(bool log) const;

    // Where the ring (re)starts: SET_VRING_BASE. Before the first start the
    // guest indexes in memory are set to it too (an idle ring at that index).
    uint16_t base() const { return base_; }
    void set_base(uint16_t b, bool rewrite_ring_indexes);

    // Fresh kick/call eventfds for a new start; the old ones are closed.
    void new_eventfds();
    int kickfd() const { return kick_; }
    int callfd() const { return call_; }
    void kick() const;

    uint16_t avail_idx() const;
    uint16_t used_idx() const;
    // VRING_AVAIL_F_NO_INTERRUPT in avail->flags (guest memory, so it stays
    // across stop, reconnect and new callfds). Off at first, as a Linux guest.
    bool no_interrupt() const;
    void set_no_interrupt(bool on);
    // Datapath helpers: each returns how many descriptors were posted.
    int post_tx(int n, uint32_t len);
    int post_rx(int n);
    // A descriptor whose address lies outside guest memory; returns its id.
    int post_bad(uint64_t addr, uint32_t len);
    // Consumed entries since the last call, descriptors freed for reuse.
    std::vector<UsedElem> reap();
    int free_descs() const { return int(free_.size()); }

private:
    int add(uint64_t addr, uint32_t len, uint16_t flags);
    uint64_t buffer(uint16_t id);

    GuestMemory& mem_;
    uint32_t index_;
    SplitRingDriver ring_;
    std::vector<uint64_t> bufs_;  // per descriptor id, allocated on first use
    std::vector<uint16_t> free_;
    uint16_t last_used_ = 0;
    uint16_t base_ = 0;
    int kick_ = -1, call_ = -1;
};

// The dirty log handed over with SET_LOG_BASE: one bit per 4 KiB page of
// guest physical memory, bit (gpa / 4096) set by the backend.
class DirtyLog {
public:
    // What a careless frontend hands over: a log covering the memory (Full),
    // one whose file is shorter than the size it claims (Short), or one too
    // small for the memory (Small).
    enum class Shape { Full, Short, Small };
    explicit DirtyLog(uint64_t mem_end, Shape shape = Shape::Full);
    ~DirtyLog();
    DirtyLog(const DirtyLog&) = delete;
    DirtyLog& operator=(const DirtyLog&) = delete;
    int fd() const { return fd_; }
    uint64_t size() const { return size_; }  // as SET_LOG_BASE gives it
    std::vector<uint64_t> dirty_pages() const;
    bool dirty(uint64_t gpa, uint64_t len) const;  // any page of the range
    void clear();
    // The file cut to nothing under the backend (a careless frontend); this
    // side's view goes with it.
    void truncate();

private:
    int fd_ = -1;
    uint8_t* map_ = nullptr;
    uint64_t size_ = 0;
    uint64_t mapped_ = 0;  // what the file holds (Short: whole pages fewer than size_)
};

constexpr uint64_t kLogPage = 4096;

}  // namespace vug
