// A library loaded at first use: its functions when it is there, and when it is
// not, an error naming it, why, and what to install.
#include "envkit/sys/lazy_library.hpp"

#include <catch2/catch.hpp>

namespace {

using Catch::Matchers::Contains;

TEST_CASE("a lazily loaded library gives its functions on first use", "[sys]") {
  envkit::sys::LazyLibrary libm("libm.so.6", "libm");
  CHECK_FALSE(libm.load_error().has_value());
  const auto square_root = reinterpret_cast<double (*)(double)>(libm.symbol("sqrt"));
  REQUIRE(square_root != nullptr);
  CHECK(square_root(16.0) == 4.0);
  CHECK(libm.symbol("envkit_no_such_function") == nullptr);
}

TEST_CASE("a library that cannot be loaded says which, why, and what to install", "[sys]") {
  envkit::sys::LazyLibrary missing("libenvkit-absent.so.9", "envkit-absent (Debian: libabsent9)");
  CHECK(missing.symbol("anything") == nullptr);
  const auto error = missing.load_error();
  REQUIRE(error.has_value());
  CHECK_THAT(*error, Contains("envkit cannot load libenvkit-absent.so.9 (") &&
                         Contains("No such file") &&
                         Contains("install envkit-absent (Debian: libabsent9)"));
}

}  // namespace
