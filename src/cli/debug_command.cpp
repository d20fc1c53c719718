// `envkit debug ...`: tools for recipe authors and bug reports.
#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "command.hpp"
#include "envkit/archive/extract.hpp"
#include "envkit/archive/runfile.hpp"
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

struct ExtractArgs {
  std::string archive;
  std::string destination;
  int strip_components = 0;
  std::uint64_t max_bytes = archive::ExtractOptions{}.max_bytes;
  unsigned threads = 1;
};

// `path` as the user meant it: relative to -C DIR when one is given.
std::filesystem::path user_path(const Context& context, const std::string& path) {
  const std::filesystem::path given(path);
  if (given.is_absolute() || context.options.directory == ".") return given;
  return context.options.directory / given;
}

// The same extractor `install` uses, on one archive: a refusal exits 1 and
// names the entry and the reason; a missing archive is an input error (2).
int run_extract(Context& context, const ExtractArgs& args) {
  archive::ExtractOptions options;
  options.strip_components = args.strip_components;
  options.max_bytes = args.max_bytes;
  options.threads = args.threads;
  const auto destination = user_path(context, args.destination);
  const auto source = user_path(context, args.archive);
  // A makeself runfile (NVIDIA's installers) is told by its content: its
  // payload is unpacked, never its script run, and so are the runfiles
  // inside it (NVIDIA's run_files/*.run).
  const bool runfile = archive::is_runfile(source);
  if (runfile) {
    options.nested_runfile = [](std::string_view entry) { return entry.ends_with(".run"); };
  }
  auto result = runfile ? archive::extract_runfile_file(source, destination, options)
                        : archive::extract_file(source, destination, options);
  if (!result) return report(context, result.error());
  for (const auto& warning : result->warnings)
    context.console.warn(warning);  // a wheel's RECORD row that disagrees with its METADATA
  context.console.info(fmt::format("unpacked {} entries ({} bytes) into {}", result->entries.size(),
                                   result->bytes_written, destination.string()));
  if (context.options.json) {
    std::cout << nlohmann::json{{"entries", result->entries.size()},
                                {"bytes", result->bytes_written},
                                {"warnings", result->warnings},
                                {"destination", destination.string()}}
                     .dump()
              << '\n';
  }
  return 0;
}

void register_extract(CLI::App& debug, Commands& out) {
  auto args = std::make_shared<ExtractArgs>();
  auto* command = debug.add_subcommand(
      "extract",
      "Unpack one archive with envkit's safe extractor (the same code `install` uses): exit 0 "
      "when extracted, 1 when refused, with the entry and the reason. A makeself runfile "
      "(NVIDIA's .run installers) is unpacked without running it, nested .run files included");
  command
      ->add_option("ARCHIVE", args->archive,
                   "tar, tar.gz, tar.xz, tar.bz2, tar.zst, zip, whl or a makeself .run")
      ->required();
  command->add_option("DEST", args->destination, "The folder to unpack into (created if missing)")
      ->required();
  command
      ->add_option("--strip-components", args->strip_components,
                   "Drop this many leading folders from each entry's path, as tar does")
      ->option_text("N")
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--max-bytes", args->max_bytes,
                   "Refuse the archive when it unpacks to more than this many bytes")
      ->option_text("N")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--threads", args->threads,
                   "Unpack a large zip's entries on up to N threads (install uses one per core)")
      ->option_text("N")
      ->check(CLI::PositiveNumber);
  out.push_back({command, [args](Context& context) { return run_extract(context, *args); }});
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
  register_extract(*debug, out);
}

}  // namespace envkit::cli
