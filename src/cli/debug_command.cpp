// `envkit debug ...`: tools for recipe authors and bug reports.
#include <iostream>
#include <string>

#include "command.hpp"
#include "envkit/specs/query.hpp"

namespace envkit::cli {

namespace {

int run_specs(Context&) {
  std::ios::sync_with_stdio(false);
  std::string line;
  std::string out;
  while (true) {
    // Answer in batches, but never hold answers back while waiting for input,
    // so a program that writes a line and reads the answer does not stall.
    if (std::cin.rdbuf()->in_avail() <= 0 && !out.empty()) {
      std::cout << out << std::flush;
      out.clear();
    }
    if (!std::getline(std::cin, line)) break;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    out += specs::answer_query(line);
    out += '\n';
  }
  std::cout << out << std::flush;
  return 0;
}

}  // namespace

void register_debug(CLI::App& root, Commands& out) {
  auto* debug = root.add_subcommand("debug", "Tools for recipe authors and bug reports");
  debug->require_subcommand(1);
  out.push_back({debug, nullptr});

  auto* specs_cmd = debug->add_subcommand(
      "specs",
      "Answer PEP 440 questions, one JSON object per line on stdin, one answer per line on "
      "stdout.\n"
      "  {\"op\":\"normalize\",\"version\":V}\n"
      "  {\"op\":\"compare\",\"a\":A,\"b\":B}                  -> -1, 0 or 1\n"
      "  {\"op\":\"contains\",\"spec\":S,\"version\":V,\"prereleases\":null|true|false}\n"
      "  {\"op\":\"parse_spec\",\"spec\":S}                  -> normalized specifier\n"
      "  {\"op\":\"filter\",\"spec\":S,\"versions\":[...]}      -> PEP 440 selection\n"
      "Add \"syntax\":\"envkit\" to read a bare version as envkit files do (12.1 means ==12.1.*).");
  out.push_back({specs_cmd, run_specs});
}

}  // namespace envkit::cli
