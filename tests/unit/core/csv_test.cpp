#include "envkit/core/csv.hpp"

#include <catch2/catch.hpp>

using envkit::csv::Table;

TEST_CASE("CSV tables with quoted fields", "[core][csv]") {
  auto table = Table::parse(
      "cuda_version,min_driver_linux,source\n"
      "12.4.1,550.54.15,\"Table 3, copy\"\n"
      "\n"
      "11.8.0,520.61.05,\"multi\nline \"\"quoted\"\"\"\r\n"
      "9.0.76,384.81\n",
      "drivers.csv");
  REQUIRE(table);
  CHECK(table->header() == std::vector<std::string>{"cuda_version", "min_driver_linux", "source"});
  REQUIRE(table->rows().size() == 3);
  const auto& rows = table->rows();
  CHECK(table->at(rows[0], "source") == "Table 3, copy");
  CHECK(rows[0].line == 2);
  CHECK(table->at(rows[1], "source") == "multi\nline \"quoted\"");
  CHECK(rows[1].line == 4);
  CHECK(table->at(rows[2], "source").empty());  // short row
  CHECK(rows[2].line == 6);
  CHECK(table->has_column("cuda_version"));
  CHECK_FALSE(table->has_column("nope"));
}

TEST_CASE("CSV errors name file, line and column", "[core][csv]") {
  auto bad = Table::parse("a,b\n1,\"open\n", "t.csv");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().headline() == "t.csv:2:3: unterminated quoted field");
  auto empty = Table::parse("", "e.csv");
  REQUIRE_FALSE(empty);
  CHECK(empty.error().headline() == "e.csv: empty CSV file: expected a header line");
}

TEST_CASE("CSV tables check required columns and locate row errors", "[core][csv]") {
  auto missing = Table::parse("a,b\n1,2\n", "t.csv", {"a", "c"});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().headline() == "t.csv:1: missing column `c`");
  auto table = Table::parse("a,b\n1,2\n3,4\n", "t.csv", {"a", "b"});
  REQUIRE(table);
  CHECK(table->row_error(table->rows()[1], "bad row").headline() == "t.csv:3: bad row");
}
