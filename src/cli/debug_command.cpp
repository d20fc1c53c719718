// `envkit debug ...`: tools for recipe authors and bug reports.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "command.hpp"
#include "envkit/archive/extract.hpp"
#include "envkit/archive/runfile.hpp"
#include "envkit/elf/fatbin.hpp"
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

// `debug fatbin FILE`: what the fatbin reader read, for bug reports
// (docs/fatbin.md). A file it cannot read exits 2 with the file, offset and fault.
int run_fatbin(Context& context, const std::string& file) {
  const auto path = user_path(context, file);
  auto fatbins = elf::read_fatbins(path);
  if (!fatbins) return report(context, fatbins.error());
  const elf::KernelCoverage coverage = elf::coverage_of(*fatbins);
  const auto capabilities = [](const std::vector<elf::Arch>& archs) {
    std::vector<std::string> out;
    for (const elf::Arch arch : archs)
      out.push_back(elf::capability_text(arch));
    return out;
  };
  std::size_t entries = 0, compressed = 0;
  for (const auto& fatbin : *fatbins) {
    entries += fatbin.entries.size();
    for (const auto& entry : fatbin.entries)
      compressed += entry.compressed ? 1 : 0;
  }
  if (context.options.json) {
    auto list = nlohmann::json::array();
    for (const auto& fatbin : *fatbins) {
      auto items = nlohmann::json::array();
      for (const auto& entry : fatbin.entries) {
        nlohmann::json item{{"kind", entry.kind == elf::FatbinEntry::Kind::ptx ? "ptx" : "sass"},
                            {"target", elf::target_name(entry)},
                            {"capability", elf::capability_text(entry.arch)},
                            {"arch_specific", entry.arch_specific},
                            {"family_specific", entry.family_specific},
                            {"compressed", entry.compressed}};
        if (entry.kind == elf::FatbinEntry::Kind::ptx) item["ptx_isa"] = entry.ptx_isa;
        items.push_back(std::move(item));
      }
      list.push_back({{"offset", fatbin.offset},
                      {"section", fatbin.section},
                      {"entries", std::move(items)},
                      {"other_entries", fatbin.other_entries}});
    }
    std::cout << nlohmann::json{{"file", path.string()},
                                {"fatbins", std::move(list)},
                                {"sass", capabilities(coverage.sass)},
                                {"sass_arch_specific", capabilities(coverage.sass_arch_specific)},
                                {"ptx", capabilities(coverage.ptx)},
                                {"ptx_arch_specific", capabilities(coverage.ptx_arch_specific)},
                                {"ptx_family_specific", capabilities(coverage.ptx_family_specific)},
                                {"newest_ptx_isa", coverage.newest_ptx_isa}}
                     .dump()
              << '\n';
    return 0;
  }
  std::string out;
  for (const auto& fatbin : *fatbins) {
    out += fmt::format("fatbin at {:#x} ({}):", fatbin.offset, fatbin.section);
    for (const auto& entry : fatbin.entries) {
      out += ' ' + elf::target_name(entry);
      if (entry.kind == elf::FatbinEntry::Kind::ptx) out += fmt::format(" (PTX {})", entry.ptx_isa);
    }
    if (fatbin.other_entries > 0) out += fmt::format(" +{} other (LTO IR)", fatbin.other_entries);
    out += '\n';
  }
  // Each arch once, with "a" or "f" where that is as far as its targets reach.
  const auto targets = [](const std::vector<elf::Arch>& archs, std::string_view prefix,
                          const std::vector<elf::Arch>& specific,
                          const std::vector<elf::Arch>& family) {
    const auto has = [](const std::vector<elf::Arch>& list, elf::Arch arch) {
      return std::find(list.begin(), list.end(), arch) != list.end();
    };
    std::string text;
    for (const elf::Arch arch : archs) {
      text += fmt::format(" {}_{}{}", prefix, arch,
                          has(specific, arch) ? "a"
                          : has(family, arch) ? "f"
                                              : "");
    }
    return text.empty() ? std::string(" none") : text;
  };
  out += fmt::format(
      "{}: {} fatbinaries, {} entries ({} compressed); SASS:{}; PTX:{}", path.string(),
      fatbins->size(), entries, compressed,
      targets(coverage.sass, "sm", coverage.sass_arch_specific, {}),
      targets(coverage.ptx, "compute", coverage.ptx_arch_specific, coverage.ptx_family_specific));
  if (!coverage.newest_ptx_isa.empty()) {
    out += fmt::format(" (newest PTX ISA {})", coverage.newest_ptx_isa);
  }
  std::cout << out << '\n';
  return 0;
}

void register_fatbin(CLI::App& debug, Commands& out) {
  auto file = std::make_shared<std::string>();
  auto* command = debug.add_subcommand(
      "fatbin",
      "List the CUDA kernels an ELF file holds, as envkit reads them: each embedded fatbinary "
      "(its offset and section) with its SASS sm_XY and PTX compute_XY (with the PTX ISA), "
      "then a summary. --json gives the same as JSON");
  command->add_option("FILE", *file, "A shared library or executable (e.g. libtorch_cuda.so)")
      ->required();
  out.push_back({command, [file](Context& context) { return run_fatbin(context, *file); }});
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
  register_fatbin(*debug, out);
}

}  // namespace envkit::cli
