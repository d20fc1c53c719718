#include "envkit/core/text.hpp"

#include <catch2/catch.hpp>

using namespace envkit::text;

TEST_CASE("did_you_mean finds likely typos only", "[core][text]") {
  constexpr std::string_view keys[] = {"name",      "framework", "requires", "external",
                                       "platforms", "system",    "smoke",    "python-requirements"};
  CHECK(did_you_mean("framwork", keys) == "framework");
  CHECK(did_you_mean("Framework", keys) == "framework");
  CHECK(did_you_mean("platform", keys) == "platforms");
  CHECK(did_you_mean("requries", keys) == "requires");
  CHECK(did_you_mean("smkoe", keys) == "smoke");
  CHECK_FALSE(did_you_mean("dependencies", keys));
  CHECK_FALSE(did_you_mean("x", keys));
}

TEST_CASE("edit distance counts swaps as one edit", "[core][text]") {
  CHECK(edit_distance("abc", "abc") == 0);
  CHECK(edit_distance("abc", "acb") == 1);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("", "abc") == 3);
}

TEST_CASE("small string helpers", "[core][text]") {
  CHECK(trim("  a b \t\n") == "a b");
  CHECK(to_lower("CuDNN") == "cudnn");
  CHECK(iequals("Linux", "lINUX"));
  CHECK(split("a,,b", ',') == std::vector<std::string_view>{"a", "", "b"});
  const std::vector<std::string> parts{"x", "y"};
  CHECK(join(parts, ", ") == "x, y");
  CHECK(quoted("cuda") == "`cuda`");
}

TEST_CASE("did_you_mean prefers a candidate that extends the word on a tie", "[core][text]") {
  constexpr std::string_view packages[] = {"cuda", "cudnn", "python", "zlib"};
  CHECK(did_you_mean("cudn", packages) == "cudnn");
  CHECK(did_you_mean("cuda", packages) == "cuda");
  CHECK(did_you_mean("cdua", packages) == "cuda");
}

TEST_CASE("columns line cells up however long a name is", "[core][text]") {
  CHECK(
      columns({{"name", "version"}, {"nvidia-cuda-runtime-cu12", "12.1.105"}, {"six", "1.17.0"}}) ==
      "name                      version\n"
      "nvidia-cuda-runtime-cu12  12.1.105\n"
      "six                       1.17.0\n");
  CHECK(columns({}).empty());
}
