#include "envkit/core/csv.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace envkit::csv {

namespace {
const std::string kEmpty;
}

Result<Table> Table::parse(std::string_view text, std::string_view file,
                           std::initializer_list<std::string_view> required) {
  std::vector<Row> records;
  Row current{1, {}};
  std::string cell;
  bool quoted = false, cell_started = false;
  int line = 1, column = 0, quote_line = 0, quote_column = 0;
  const auto end_cell = [&] {
    current.cells.push_back(std::move(cell));
    cell.clear();
    cell_started = false;
  };
  const auto end_record = [&] {
    end_cell();
    const bool blank = current.cells.size() == 1 && current.cells[0].empty();
    if (!blank) records.push_back(std::move(current));
    current = Row{line + 1, {}};
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    ++column;
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') {
          ++line;
          column = 0;
        }
        cell += c;
      }
      continue;
    }
    if (c == '"' && !cell_started) {
      quoted = cell_started = true;
      quote_line = line;
      quote_column = column;
    } else if (c == ',') {
      end_cell();
    } else if (c == '\n') {
      end_record();
      ++line;
      column = 0;
    } else if (c != '\r') {
      cell += c;
      cell_started = true;
    }
  }
  if (quoted) {
    return Error::input("unterminated quoted field")
        .at({std::string(file), quote_line, quote_column});
  }
  if (cell_started || !current.cells.empty()) end_record();
  if (records.empty())
    return Error::input("empty CSV file: expected a header line").at({std::string(file)});

  Table table;
  table.file_ = std::string(file);
  table.header_ = std::move(records.front().cells);
  for (std::size_t i = 0; i < table.header_.size(); ++i)
    table.index_.emplace(table.header_[i], i);
  table.rows_.assign(std::make_move_iterator(records.begin() + 1),
                     std::make_move_iterator(records.end()));
  for (const auto name : required) {
    if (!table.has_column(name)) {
      return Error::input(fmt::format("missing column `{}`", name)).at({std::string(file), 1, 0});
    }
  }
  return table;
}

Error Table::row_error(const Row& row, std::string message) const {
  return std::move(Error::input(std::move(message)).at({file_, row.line, 0}));
}

const std::string& Table::at(const Row& row, std::string_view column) const {
  const auto it = index_.find(column);
  if (it == index_.end()) throw std::out_of_range(fmt::format("no CSV column `{}`", column));
  return it->second < row.cells.size() ? row.cells[it->second] : kEmpty;
}

bool Table::has_column(std::string_view column) const {
  return index_.contains(column);
}

}  // namespace envkit::csv
