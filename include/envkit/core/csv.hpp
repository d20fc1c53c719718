#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"

namespace envkit::csv {

// One data row of a CSV table with a header line; `line` is 1-based in the file.
struct Row {
  int line = 0;
  std::vector<std::string> cells;
};

// An RFC 4180 table: comma-separated, double-quoted fields may hold commas,
// newlines and doubled quotes. The first row is the header.
class Table {
 public:
  // `file` names the source in errors (`file:line:column: unterminated quote`).
  // Each of `required` must be a column of the header (`file:1: missing column `x``).
  [[nodiscard]] static Result<Table> parse(std::string_view text, std::string_view file,
                                           std::initializer_list<std::string_view> required = {});

  // An input error located at `row` (`file:line: message`).
  [[nodiscard]] Error row_error(const Row& row, std::string message) const;

  [[nodiscard]] const std::vector<std::string>& header() const { return header_; }
  [[nodiscard]] const std::vector<Row>& rows() const { return rows_; }
  // The cell of `row` under `column`; "" when the row is short. Throws
  // std::out_of_range for a column the header lacks (a programming error).
  [[nodiscard]] const std::string& at(const Row& row, std::string_view column) const;
  [[nodiscard]] bool has_column(std::string_view column) const;

 private:
  std::string file_;
  std::vector<std::string> header_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::vector<Row> rows_;
};

}  // namespace envkit::csv
