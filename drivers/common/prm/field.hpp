// Bit-exact PRM field access.
//
// PRM convention (as mlx5_ifc.h / mlx5_prm.h): a layout is a sequence of
// big-endian 32-bit words; bit offset 0 is the most significant bit of the
// first word, and a field of width w at offset o occupies bits o..o+w-1 in that
// order. Fields of 64 bits are 64-bit aligned, fields < 32 bits never cross a
// dword. Each layout is a constexpr table of Field{name, bit_offset, bit_width}
// named as in tests/unit/prm/reference/prm-virtq-fields.tsv; padding is
// reserved_at_<hex offset>. static_asserts check that each table tiles its
// struct exactly.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace mlx5async::prm {

struct Field {
    std::string_view name;
    uint32_t bit_offset;
    uint32_t bit_width;

    constexpr uint32_t end() const { return bit_offset + bit_width; }
    // By value, not by address: GCC's -fsanitize=undefined makes comparing
    // the addresses of two constants non-constant.
    constexpr bool same_as(const Field& o) const {
        return bit_offset == o.bit_offset && bit_width == o.bit_width && name == o.name;
    }
    // Padding: the last name component is reserved_at_<hex> (also for union
    // views such as "op_param.create.reserved_at_1").
    constexpr bool reserved() const {
        size_t dot = name.rfind('.');
        return name.substr(dot == std::string_view::npos ? 0 : dot + 1).starts_with("reserved_at_");
    }
    // A field of the same layout shifted by `base` bits (a nested struct).
    constexpr Field at(uint32_t base) const { return {name, bit_offset + base, bit_width}; }
};

// A layout: its size in bits and its fields in offset order.
struct Layout {
    std::string_view name;
    uint32_t bits;
    std::span<const Field* const> fields;

    constexpr size_t bytes() const { return bits / 8; }
};

constexpr uint64_t width_mask(uint32_t w) { return w >= 64 ? ~0ull : ((1ull << w) - 1); }

// A field is legal when it lies in one dword, or is a dword-aligned whole
// number of dwords up to 64 bits (the only shapes the PRM uses for values).
constexpr bool field_shape_ok(const Field& f) {
    if (f.bit_width == 0) return false;
    if (f.reserved()) return true;  // padding may span anything
    if (f.bit_width <= 32) return (f.bit_offset / 32) == ((f.end() - 1) / 32);
    return f.bit_width == 64 && f.bit_offset % 32 == 0;
}

// True when fields are sorted, contiguous from bit 0, and end at `bits`,
// which is a whole number of dwords.
template <size_t N>
constexpr bool tiles(const Field* const (&fields)[N], uint32_t bits) {
    if (bits % 32 != 0) return false;
    uint32_t pos = 0;
    for (const Field* f : fields) {
        if (f->bit_offset != pos || !field_shape_ok(*f)) return false;
        pos = f->end();
    }
    return pos == bits;
}

// Raw access by (offset, width). Buffers are big-endian PRM images.
inline uint32_t load_be32(const std::byte* p) {
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}
inline void store_be32(std::byte* p, uint32_t v) {
    p[0] = std::byte(v >> 24);
    p[1] = std::byte(v >> 16);
    p[2] = std::byte(v >> 8);
    p[3] = std::byte(v);
}

// Fields wider than 64 bits are reserved padding; get_bits reads at most 64.
inline uint64_t get_bits(std::span<const std::byte> buf, uint32_t off, uint32_t width) {
    if (width > 32) {
        // 64-bit dword-aligned value (or the first 64 bits of wide padding).
        const std::byte* p = buf.data() + off / 8;
        return (uint64_t(load_be32(p)) << 32) | load_be32(p + 4);
    }
    const std::byte* p = buf.data() + (off / 32) * 4;
    uint32_t shift = 32 - width - (off % 32);
    return (load_be32(p) >> shift) & width_mask(width);
}

inline void set_bits(std::span<std::byte> buf, uint32_t off, uint32_t width, uint64_t v) {
    if (width > 32) {
        std::byte* p = buf.data() + off / 8;
        store_be32(p, uint32_t(v >> 32));
        store_be32(p + 4, uint32_t(v));
        return;
    }
    std::byte* p = buf.data() + (off / 32) * 4;
    uint32_t shift = 32 - width - (off % 32);
    uint32_t mask = uint32_t(width_mask(width)) << shift;
    store_be32(p, (load_be32(p) & ~mask) | ((uint32_t(v) << shift) & mask));
}

// True when every bit of a (possibly wide) field is zero.
inline bool bits_zero(std::span<const std::byte> buf, const Field& f) {
    for (uint32_t o = f.bit_offset; o < f.end();) {
        uint32_t w = std::min<uint32_t>(f.end() - o, 32 - (o % 32));
        if (get_bits(buf, o, w) != 0) return false;
        o += w;
    }
    return true;
}

// Typed access with the field known at compile time. Callers check that
// the buffer holds the layout (typed encoders/decoders do it once).
template <const Field& F>
uint64_t get(std::span<const std::byte> buf) {
    static_assert(field_shape_ok(F) && F.bit_width <= 64, "not a value field");
    return get_bits(buf, F.bit_offset, F.bit_width);
}

// Runtime values are truncated to the field width; fits<F>(v) tells whether
// that would lose bits (encoders validate with it before writing).
template <const Field& F>
void set(std::span<std::byte> buf, uint64_t v) {
    static_assert(field_shape_ok(F) && F.bit_width <= 64, "not a value field");
    set_bits(buf, F.bit_offset, F.bit_width, v);
}

template <const Field& F>
constexpr bool fits(uint64_t v) {
    return (v & ~width_mask(F.bit_width)) == 0;
}

// Compile-time constants are rejected when wider than the field.
template <const Field& F, uint64_t V>
void set_const(std::span<std::byte> buf) {
    static_assert(fits<F>(V), "constant wider than the PRM field");
    set<F>(buf, V);
}

// The field of `l` named `name` (first match), or nullptr.
constexpr const Field* find_field(const Layout& l, std::string_view name) {
    for (const Field* f : l.fields)
        if (f->name == name) return f;
    return nullptr;
}

// The first reserved field with a non-zero bit, or nullptr.
inline const Field* first_nonzero_reserved(const Layout& l, std::span<const std::byte> buf) {
    for (const Field* f : l.fields)
        if (f->reserved() && !bits_zero(buf, *f)) return f;
    return nullptr;
}

}  // namespace mlx5async::prm
