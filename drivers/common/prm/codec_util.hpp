// Internal helpers shared by the codec .cpp files (not a public header).
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

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

}  // namespace mlx5async::prm::detail
