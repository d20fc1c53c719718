#pragma once

#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

#include "envkit/core/error.hpp"

namespace envkit {

// Either a value or an Error. Expected failures travel as values; reading the
// value of a failed Result is a broken invariant and throws.
template <class T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<std::remove_cvref_t<T>, Error>);

 public:
  Result(T value)
      : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  [[nodiscard]] bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  [[nodiscard]] T& value() & { return check(), std::get<0>(state_); }
  [[nodiscard]] const T& value() const& { return check(), std::get<0>(state_); }
  [[nodiscard]] T&& value() && { return check(), std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

  [[nodiscard]] const Error& error() const& { return std::get<1>(state_); }
  [[nodiscard]] Error&& error() && { return std::get<1>(std::move(state_)); }

 private:
  void check() const {
    if (!ok()) throw std::logic_error("value() of a failed Result: " + error().headline());
  }
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT: implicit by design

  [[nodiscard]] bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  [[nodiscard]] const Error& error() const& { return *error_; }
  [[nodiscard]] Error&& error() && { return std::move(*error_); }

 private:
  std::optional<Error> error_;
};

}  // namespace envkit
