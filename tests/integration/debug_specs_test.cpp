// `envkit debug specs` over stdin/stdout, as recipe authors and bug reports use it.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/envkit_runner.hpp"

using envkit::test::run_envkit;
using nlohmann::json;

namespace {
std::vector<json> answers(const std::string& out) {
  std::vector<json> lines;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    lines.push_back(json::parse(line));
  return lines;
}
}  // namespace

TEST_CASE("debug specs answers one JSON line per request", "[cli][debug]") {
  const auto r =
      run_envkit({.args = {"debug", "specs"}, .stdin_data = R"({"op":"normalize","version":"1.0RC1"}
{"op":"compare","a":"450.80.02","b":"450.80.2"}

{"op":"contains","spec":"==1.6.*","version":"1.6.0","prereleases":null}
{"op":"parse_spec","spec":">= 1.0 , <2"}
{"op":"parse_spec","spec":"12.1","syntax":"envkit","id":7}
{"op":"normalize","version":"1.0.x"}
not json
{"op":"explode"}
)"});
  CHECK(r.exit_code == 0);
  const auto got = answers(r.out);
  REQUIRE(got.size() == 8);  // the blank line gets no answer
  CHECK(got[0] == json::parse(R"({"ok":true,"value":"1.0rc1"})"));
  CHECK(got[1] == json::parse(R"({"ok":true,"value":0})"));
  CHECK(got[2] == json::parse(R"({"ok":true,"value":true})"));
  CHECK(got[3] == json::parse(R"({"ok":true,"value":"<2,>=1.0"})"));
  CHECK(got[4] == json::parse(R"({"ok":true,"value":"==12.1.*","id":7})"));
  CHECK(got[5]["ok"] == false);
  CHECK(got[5]["error"] == "`1.0.x` is not a valid version: unexpected `.x` after `1.0`");
  CHECK(got[6]["ok"] == false);
  CHECK(got[7]["error"] ==
        "unknown op `explode`: expected normalize, compare, contains, parse_spec or filter");
}

TEST_CASE("debug specs agrees with packaging through the command line", "[cli][debug][vectors]") {
  std::ifstream in(envkit::test::test_data_dir() / "specs" / "pep440_vectors.jsonl");
  std::string line;
  std::getline(in, line);  // header
  std::string requests;
  std::vector<json> expected;
  while (std::getline(in, line)) {
    auto entry = json::parse(line);
    requests += entry["request"].dump() + "\n";
    expected.push_back(entry["expect"]);
  }
  const auto r = run_envkit({.args = {"debug", "specs"}, .stdin_data = requests});
  REQUIRE(r.exit_code == 0);
  const auto got = answers(r.out);
  REQUIRE(got.size() == expected.size());
  std::size_t disagreements = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool same = got[i]["ok"] == expected[i]["ok"] &&
                      (!expected[i]["ok"].get<bool>() || got[i]["value"] == expected[i]["value"]);
    if (!same) ++disagreements;
  }
  CHECK(disagreements == 0);
}
