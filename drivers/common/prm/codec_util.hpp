// Internal helpers shared by the codec .cpp files (not a public header).
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "../base/result.hpp"
#include "field.hpp"

namespace mlx5async::prm::detail {

// Decoders: a buffer shorter than the layout is an error naming both sizes.
inline Result<void> need_bytes(std::span<const std::byte> buf, size_t want,
                               std::string_view layout) {
    if (buf.size() >= want) return {};
    return fail(Errc::ShortBuffer, std::string(layout) + ": buffer of " +
                                       std::to_string(buf.size()) + " bytes, need " +
                                       std::to_string(want));
}

// Writers returning void: a short output buffer is a caller bug (the sizes
// are compile-time constants in prm headers), so stop loudly.
inline void require_bytes(std::span<std::byte> buf, size_t want, const char* layout) {
    if (buf.size() >= want) return;
    std::fprintf(stderr, "mlx5async prm: %s: buffer of %zu bytes, need %zu\n", layout,
                 buf.size(), want);
    std::abort();
}

inline void zero(std::span<std::byte> buf, size_t n) {
    for (size_t i = 0; i < n; ++i) buf[i] = std::byte{0};
}

// Runtime-field access (the field comes from a table).
inline uint64_t get_field(std::span<const std::byte> buf, const Field& f) {
    return get_bits(buf, f.bit_offset, f.bit_width);
}
inline void set_field(std::span<std::byte> buf, const Field& f, uint64_t v) {
    set_bits(buf, f.bit_offset, f.bit_width, v);
}

// One member of a typed struct S bound to its PRM field. Each codec walks a
// single table of these for both reading and writing, so the two directions
// cannot disagree about which member lives where.
template <typename S>
struct Binding {
    const Field* field;
    uint64_t (*get)(const S&);
    void (*put)(S&, uint64_t);
};

template <typename T>
struct member_of;
template <typename C, typename V>
struct member_of<V C::*> {
    using type = C;
};

template <auto M>
constexpr Binding<typename member_of<decltype(M)>::type> bind(const Field& f) {
    using S = typename member_of<decltype(M)>::type;
    return {&f, [](const S& s) { return static_cast<uint64_t>(s.*M); },
            [](S& s, uint64_t v) { s.*M = static_cast<std::remove_cvref_t<decltype(s.*M)>>(v); }};
}

// The first binding whose value does not fit its field, or nullptr.
template <typename S, size_t N>
const Binding<S>* first_overwide(const Binding<S> (&table)[N], const S& s) {
    for (const Binding<S>& b : table)
        if (b.get(s) & ~width_mask(b.field->bit_width)) return &b;
    return nullptr;
}

template <typename S, size_t N>
void write_bound(const Binding<S> (&table)[N], const S& s, std::span<std::byte> buf) {
    for (const Binding<S>& b : table) set_field(buf, *b.field, b.get(s));
}

template <typename S, size_t N>
S read_bound(const Binding<S> (&table)[N], std::span<const std::byte> buf) {
    S s{};
    for (const Binding<S>& b : table) b.put(s, get_field(buf, *b.field));
    return s;
}

// Every value field of `l` is bound, and the table holds `extra` more
// bindings (DPDK fields the codec carries outside the Linux table).
template <typename S, size_t N>
constexpr bool binds_all_values(const Binding<S> (&table)[N], const Layout& l, size_t extra) {
    size_t values = 0;
    for (const Field* f : l.fields) {
        if (f->reserved()) continue;
        ++values;
        bool found = false;
        for (const Binding<S>& b : table) found = found || b.field->same_as(*f);
        if (!found) return false;
    }
    return values + extra == N;
}

// "0x1f" for error messages.
inline std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

}  // namespace mlx5async::prm::detail
