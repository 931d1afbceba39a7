#include "guest_mem.hpp"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace vug {

namespace {

constexpr uint64_t kPage = 4096;
constexpr uint32_t kBufSize = 2048;
constexpr uint32_t kNetHdr = 12;  // virtio_net_hdr with num_buffers (VERSION_1)

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

int make_memfd(const char* name, uint64_t size) {
    int fd = ::memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) throw VugError(std::string("memfd_create: ") + std::strerror(errno));
    if (::ftruncate(fd, off_t(size)) != 0) {
        int e = errno;
        ::close(fd);
        throw VugError(std::string("ftruncate memfd: ") + std::strerror(e));
    }
    return fd;
}

uint8_t* map_shared(int fd, uint64_t size) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) throw VugError(std::string("mmap guest memory: ") + std::strerror(errno));
    return static_cast<uint8_t*>(p);
}

template <typename T>
std::atomic_ref<T> at(uint8_t* p) {
    return std::atomic_ref<T>(*reinterpret_cast<T*>(p));
}

}  // namespace

// ---------------------------------------------------------------- memory

GuestMemory::GuestMemory(uint64_t base_gpa, uint64_t total, int nregions, int64_t gap) {
    if (nregions < 1 || nregions > kMaxRegions) throw VugError("regions: expected 1..8");
    if (base_gpa % kPage) throw VugError("guest base address must be 4 KiB aligned");
    uint64_t each = align_up(total / uint64_t(nregions), 1 << 20);
    uint64_t gpa = base_gpa;
    for (int i = 0; i < nregions; i++) {
        Region r;
        r.fd = make_memfd("vug-guest-mem", each);
        r.host = map_shared(r.fd, each);
        r.gpa = gpa;
        r.size = each;
        regions_.push_back(r);
        gpa += each + uint64_t(gap);
    }
    next_ = kPage;  // keep GPA base+0 unused: address 0 means "no address" to vhost
}

GuestMemory::~GuestMemory() {
    for (auto& r : regions_) {
        ::munmap(r.host, r.size);
        ::close(r.fd);
    }
}

uint64_t GuestMemory::alloc(uint64_t size, uint64_t align) {
    while (cur_ < regions_.size()) {
        uint64_t off = align_up(next_, align);
        if (off + size <= regions_[cur_].size) {
            next_ = off + size;
            return regions_[cur_].gpa + off;
        }
        cur_++;
        next_ = 0;
    }
    throw VugError("guest memory exhausted (use a larger --mem-mb)");
}

uint8_t* GuestMemory::host(uint64_t gpa, uint64_t len) const {
    for (const auto& r : regions_)
        if (gpa >= r.gpa && gpa - r.gpa + len <= r.size) return r.host + (gpa - r.gpa);
    throw VugError("guest address " + std::to_string(gpa) + " is outside guest memory");
}

std::vector<MemRegion> GuestMemory::table() const {
    std::vector<MemRegion> t;
    for (const auto& r : regions_)
        t.push_back({r.gpa, r.size, reinterpret_cast<uint64_t>(r.host), 0});
    return t;
}

std::vector<int> GuestMemory::fds() const {
    std::vector<int> f;
    for (const auto& r : regions_) f.push_back(r.fd);
    return f;
}

// ---------------------------------------------------------------- ring

namespace {

// Each part on its own pages: a dirty page names one ring part.
SplitRingDriver layout(GuestMemory& mem, uint16_t size) {
    if (size == 0 || (size & (size - 1))) throw VugError("ring size must be a power of 2");
    const uint64_t desc = mem.alloc(16ull * size, kPage);
    const uint64_t avail = mem.alloc(4 + 2ull * size + 2, kPage);
    const uint64_t used = mem.alloc(SplitRingDriver::used_bytes(size), kPage);
    return SplitRingDriver([&mem](uint64_t gpa, uint64_t len) { return mem.host(gpa, len); }, desc, avail,
                           used, size);
}

}  // namespace

Ring::Ring(GuestMemory& mem, uint32_t index, uint16_t size)
    : mem_(mem), index_(index), ring_(layout(mem, size)), bufs_(size, 0) {
    for (int i = size - 1; i >= 0; i--) free_.push_back(uint16_t(i));
}

Ring::~Ring() {
    if (kick_ >= 0) ::close(kick_);
    if (call_ >= 0) ::close(call_);
}

VringAddr Ring::addr(bool log) const {
    return {index_, log ? kVringFlagLog : 0u, mem_.hva(desc_gpa()), mem_.hva(used_gpa()),
            mem_.hva(avail_gpa()), used_gpa()};
}

void Ring::set_base(uint16_t b, bool rewrite) {
    base_ = b;
    if (!rewrite) return;
    last_used_ = b;
    ring_.set_indexes(b);
}

void Ring::new_eventfds() {
    if (kick_ >= 0) ::close(kick_);
    if (call_ >= 0) ::close(call_);
    kick_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    call_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (kick_ < 0 || call_ < 0) throw VugError(std::string("eventfd: ") + std::strerror(errno));
}

void Ring::kick() const {
    uint64_t one = 1;
    if (kick_ < 0 || ::write(kick_, &one, sizeof one) != sizeof one)
        throw VugError("kick ring " + std::to_string(index_) + ": no kick eventfd");
}

uint16_t Ring::avail_idx() const { return ring_.avail_idx(); }
uint16_t Ring::used_idx() const { return ring_.used_idx(); }
bool Ring::no_interrupt() const { return ring_.no_interrupt(); }
void Ring::set_no_interrupt(bool on) { ring_.set_no_interrupt(on); }

uint64_t Ring::buffer(uint16_t id) {
    if (!bufs_[id]) bufs_[id] = mem_.alloc(kBufSize, 64);
    return bufs_[id];
}

int Ring::add(uint64_t addr, uint32_t len, uint16_t flags) {
    if (free_.empty()) return -1;
    uint16_t id = free_.back();
    free_.pop_back();
    ring_.write_desc(id, VringDesc{addr, len, flags, 0});
    ring_.push_avail(id);
    return id;
}

int Ring::post_tx(int n, uint32_t len) {
    if (len < 14 || len + kNetHdr > kBufSize) throw VugError("tx length must be 14..2036");
    int k = 0;
    for (; k < n; k++) {
        if (free_.empty()) break;
        uint16_t id = free_.back();
        uint64_t b = buffer(id);
        uint8_t* p = mem_.host(b, kNetHdr + len);
        std::memset(p, 0, kNetHdr);  // no offloads, num_buffers 0
        uint8_t* f = p + kNetHdr;
        std::memset(f, 0xff, 6);                                        // broadcast
        const uint8_t src[6] = {0x02, 0, 0, 0, uint8_t(index_), 1};  // local MAC
        std::memcpy(f + 6, src, 6);
        f[12] = 0x88, f[13] = 0xb5;  // local experimental ethertype
        for (uint32_t i = 14; i < len; i++) f[i] = uint8_t(i + ring_.next_avail());
        add(b, kNetHdr + len, 0);
    }
    ring_.publish();
    return k;
}

int Ring::post_rx(int n) {
    int k = 0;
    for (; k < n; k++) {
        if (free_.empty()) break;
        add(buffer(free_.back()), kBufSize, kDescWrite);
    }
    ring_.publish();
    return k;
}

int Ring::post_bad(uint64_t addr, uint32_t len) {
    int id = add(addr, len, 0);
    if (id >= 0) ring_.publish();
    return id;
}

std::vector<UsedElem> Ring::reap() {
    std::vector<UsedElem> out;
    const uint16_t end = used_idx();
    for (; last_used_ != end; last_used_++) {
        UsedElem e = ring_.used_elem(last_used_);
        out.push_back(e);
        if (e.id < size()) free_.push_back(uint16_t(e.id));
    }
    return out;
}


// ---------------------------------------------------------------- dirty log

DirtyLog::DirtyLog(uint64_t mem_end, Shape shape) {
    uint64_t pages = (mem_end + kLogPage - 1) / kLogPage;
    size_ = align_up((pages + 7) / 8, 8);
    if (shape == Shape::Small) size_ = align_up(size_ / 2, 8);
    // Short: whole pages missing from the file (none at all for a log of
    // less than two pages), where the backend's mapping would fault.
    mapped_ = shape == Shape::Short ? (size_ / 2) & ~(kLogPage - 1) : size_;
    fd_ = make_memfd("vug-dirty-log", mapped_);
    if (mapped_) map_ = map_shared(fd_, mapped_);
}

DirtyLog::~DirtyLog() {
    if (map_) ::munmap(map_, mapped_);
    ::close(fd_);
}

std::vector<uint64_t> DirtyLog::dirty_pages() const {
    std::vector<uint64_t> pages;
    for (uint64_t i = 0; i < mapped_; i++) {
        uint8_t b = at<uint8_t>(map_ + i).load(std::memory_order_relaxed);
        for (int bit = 0; b && bit < 8; bit++)
            if (b >> bit & 1) pages.push_back(i * 8 + uint64_t(bit));
    }
    return pages;
}

bool DirtyLog::dirty(uint64_t gpa, uint64_t len) const {
    for (uint64_t p = gpa / kLogPage; p <= (gpa + len - 1) / kLogPage; p++) {
        if (p / 8 >= mapped_) return false;
        if (at<uint8_t>(map_ + p / 8).load(std::memory_order_relaxed) >> (p % 8) & 1) return true;
    }
    return false;
}

void DirtyLog::truncate() {
    if (map_) ::munmap(map_, mapped_);
    map_ = nullptr;
    mapped_ = 0;
    if (::ftruncate(fd_, 0) != 0) throw VugError(std::string("ftruncate log: ") + std::strerror(errno));
}

void DirtyLog::clear() {
    for (uint64_t i = 0; i < mapped_; i++) at<uint8_t>(map_ + i).store(0, std::memory_order_relaxed);
}

}  // namespace vug
