#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "console.hpp"

namespace envkit::cli {

// The global flags every command accepts (CLI.md), after parsing.
struct GlobalOptions {
  std::filesystem::path directory = ".";  // -C DIR
  bool json = false;
  bool quiet = false;
  int verbosity = 0;
  std::string color = "auto";
  std::optional<std::filesystem::path> recipes;
  std::optional<std::filesystem::path> cache_dir;
};

// What a command gets: the global options and a console built from them.
struct Context {
  GlobalOptions options;
  Console console{ColorMode::auto_detect, false, 0};
};

}  // namespace envkit::cli
