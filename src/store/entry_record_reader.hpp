#pragma once

// Internal to store: reading a cache entry's record (records.hpp) quickly.

#include <optional>
#include <string>
#include <string_view>

#include "envkit/store/records.hpp"

namespace envkit::store {

// The entry type a record names ("file", "directory", "symlink"); anything else is a file.
[[nodiscard]] archive::EntryType parse_type(const std::string& name);

// Reads a well-formed entry record straight from the parser's events into an
// EntryRecord, without the JSON tree (CCCL's record, 1,851 files and their stamps,
// took a sixth of a warm install as a tree). nullopt on anything it does not
// expect (an unknown key, a missing field, a wrong type): parse_entry_record then
// reads the text as a tree, which reports what is wrong.
[[nodiscard]] std::optional<EntryRecord> read_entry_record_fast(std::string_view text);

}  // namespace envkit::store
