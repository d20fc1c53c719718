// Every vector in tests/data/specs/pep440_vectors.jsonl was answered by the
// `packaging` library (scripts/gen-spec-vectors.py); envkit must agree.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "envkit/specs/query.hpp"
#include "support/envkit_runner.hpp"

using nlohmann::json;

namespace {

struct Vector {
  json request;
  json expect;
};

std::vector<Vector> load_vectors() {
  std::ifstream in(envkit::test::test_data_dir() / "specs" / "pep440_vectors.jsonl");
  REQUIRE(in);
  std::vector<Vector> vectors;
  std::string line;
  std::getline(in, line);  // header: generator and packaging version
  REQUIRE(json::parse(line).contains("packaging"));
  while (std::getline(in, line)) {
    auto entry = json::parse(line);
    vectors.push_back({entry["request"], entry["expect"]});
  }
  return vectors;
}

// Compares the fields that `packaging` decides: ok, and value when ok.
bool agrees(const json& expect, const json& answer) {
  if (answer["ok"] != expect["ok"]) return false;
  return !expect["ok"].get<bool>() || answer["value"] == expect["value"];
}

}  // namespace

TEST_CASE("envkit agrees with packaging on every PEP 440 vector", "[specs][vectors]") {
  const auto vectors = load_vectors();
  REQUIRE(vectors.size() > 500);
  std::map<std::string, int> per_op;
  std::vector<std::string> disagreements;
  for (const auto& v : vectors) {
    const auto answer = json::parse(envkit::specs::answer_query(v.request.dump()));
    per_op[v.request["op"].get<std::string>()]++;
    if (!agrees(v.expect, answer)) {
      disagreements.push_back(v.request.dump() + "\n    packaging: " + v.expect.dump() +
                              "\n    envkit:    " + answer.dump());
    }
  }
  for (const auto& d : disagreements)
    UNSCOPED_INFO(d);
  CHECK(disagreements.empty());
  // Each operation is exercised.
  for (const char* op : {"normalize", "compare", "contains", "parse_spec", "filter"}) {
    INFO(op);
    CHECK(per_op[op] > 0);
  }
}
