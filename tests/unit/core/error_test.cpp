#include "envkit/core/error.hpp"

#include <catch2/catch.hpp>

#include "envkit/core/result.hpp"

using envkit::Error;
using envkit::ErrorCode;
using envkit::Result;
using envkit::SourceLocation;

TEST_CASE("errors render in envkit's one style", "[core][error]") {
  const auto error = Error::input("unknown key `framwork`")
                         .at({"envkit.yaml", 3, 1})
                         .because("the manifest knows name, framework, requires, ...")
                         .hint("did you mean `framework`?");
  CHECK(error.headline() == "envkit.yaml:3:1: unknown key `framwork`");
  CHECK(error.to_string() ==
        "error: envkit.yaml:3:1: unknown key `framwork`\n"
        "  caused by: the manifest knows name, framework, requires, ...\n"
        "hint: did you mean `framework`?\n");
  CHECK(error.exit_code() == 2);
  CHECK(Error::failed("x").exit_code() == 1);
  CHECK(Error::internal("x").exit_code() == 3);
}

TEST_CASE("source locations print what is known", "[core][error]") {
  CHECK(SourceLocation{"a.yaml", 0, 0}.to_string() == "a.yaml");
  CHECK(SourceLocation{"a.yaml", 4, 0}.to_string() == "a.yaml:4");
  CHECK(SourceLocation{"a.yaml", 4, 7}.to_string() == "a.yaml:4:7");
}

TEST_CASE("a Result holds a value or an error", "[core][result]") {
  Result<int> good = 42;
  REQUIRE(good.ok());
  CHECK(*good == 42);
  Result<int> bad = Error::failed("no");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message() == "no");
  CHECK_THROWS_WITH(bad.value(), "value() of a failed Result: no");
  Result<void> done;
  CHECK(done.ok());
  Result<void> failed = Error::input("bad");
  CHECK(failed.error().code() == ErrorCode::input);
}
