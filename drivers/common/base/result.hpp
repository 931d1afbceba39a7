// A small std::expected stand-in (libstdc++ 12 ships std::expected only in
// C++23 mode). Same API subset: has_value, value, error, operator*, ->, bool.
#pragma once

#include <cassert>
#include <type_traits>
#include <utility>
#include <variant>

#include "error.hpp"

namespace mlx5async {

template <typename E>
struct Unexpected {
    E error;
};

inline Unexpected<Error> unexpected(Error e) { return {std::move(e)}; }
inline Unexpected<Error> fail(Errc c, std::string msg) {
    return {Error::make(c, std::move(msg))};
}

template <typename T>
class [[nodiscard]] Result {
public:
    Result(T v) : v_(std::in_place_index<0>, std::move(v)) {}
    Result(Unexpected<Error> e) : v_(std::in_place_index<1>, std::move(e.error)) {}

    bool has_value() const noexcept { return v_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }

    T& value() & { assert(has_value()); return std::get<0>(v_); }
    const T& value() const& { assert(has_value()); return std::get<0>(v_); }
    T&& value() && { assert(has_value()); return std::get<0>(std::move(v_)); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    template <typename U>
    T value_or(U&& d) const& { return has_value() ? value() : T(std::forward<U>(d)); }

    const Error& error() const& { assert(!has_value()); return std::get<1>(v_); }
    Error& error() & { assert(!has_value()); return std::get<1>(v_); }

private:
    std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Unexpected<Error> e) : err_(std::move(e.error)), ok_(false) {}

    bool has_value() const noexcept { return ok_; }
    explicit operator bool() const noexcept { return ok_; }
    void value() const { assert(ok_); }
    const Error& error() const& { assert(!ok_); return err_; }
    Error& error() & { assert(!ok_); return err_; }

private:
    Error err_;
    bool ok_ = true;
};

// Result<T&> for lookups: a pointer underneath.
template <typename T>
class [[nodiscard]] Result<T&> {
public:
    Result(T& v) : p_(&v) {}
    Result(Unexpected<Error> e) : err_(std::move(e.error)) {}
    bool has_value() const noexcept { return p_ != nullptr; }
    explicit operator bool() const noexcept { return p_ != nullptr; }
    T& value() const { assert(p_); return *p_; }
    T& operator*() const { return value(); }
    T* operator->() const { return p_; }
    const Error& error() const& { assert(!p_); return err_; }

private:
    T* p_ = nullptr;
    Error err_;
};

}  // namespace mlx5async

// Propagate an error: `MLX5A_TRY(r, expr);` then use *r.
#define MLX5A_CHECK(expr)                                             \
    do {                                                              \
        auto&& mlx5a_r_ = (expr);                                     \
        if (!mlx5a_r_) return ::mlx5async::unexpected(mlx5a_r_.error()); \
    } while (0)
