#include "envkit/pyenv/wheel_install.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <optional>
#include <regex>
#include <set>

#include "envkit/archive/wheel_record.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/specs/package_name.hpp"
#include "envkit/sys/process.hpp"

namespace envkit::pyenv {

// This module builds on the store: its cache, records, links and generations.
using namespace store;

namespace fs = std::filesystem;

namespace {

constexpr auto kCompileTimeout = std::chrono::minutes(30);
// The interpreter generated scripts run: the one the Python step checked.
constexpr std::string_view kScriptInterpreter = "python3";

// distlib's script template, which pip 23's generated scripts hold after their shebang.
constexpr std::string_view kScriptTemplate =
    "# -*- coding: utf-8 -*-\n"
    "import re\n"
    "import sys\n"
    "from {} import {}\n"
    "if __name__ == '__main__':\n"
    "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
    "    sys.exit({}())\n";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// `key = value` lines of an INI section, as importlib.metadata reads entry_points.txt.
std::map<std::string, std::string> ini_section(std::string_view text, std::string_view section) {
  std::map<std::string, std::string> values;
  bool in_section = false;
  for (const auto raw : text::split(text, '\n')) {
    const auto line = text::trim(raw);
    if (line.empty() || line.starts_with('#') || line.starts_with(';')) continue;
    if (line.starts_with('[') && line.ends_with(']')) {
      in_section = text::trim(line.substr(1, line.size() - 2)) == section;
      continue;
    }
    const auto equals = line.find('=');
    if (!in_section || equals == std::string_view::npos) continue;
    values[std::string(text::trim(line.substr(0, equals)))] =
        std::string(text::trim(line.substr(equals + 1)));
  }
  return values;
}

// `module:attr.sub [extras]` -> (module, attr.sub); nullopt without a callable.
std::optional<std::pair<std::string, std::string>> entry_point_target(std::string_view value) {
  if (const auto bracket = value.find('['); bracket != std::string_view::npos)
    value = value.substr(0, bracket);
  value = text::trim(value);
  const auto colon = value.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const auto module = text::trim(value.substr(0, colon));
  const auto function = text::trim(value.substr(colon + 1));
  if (module.empty() || function.empty()) return std::nullopt;
  return std::pair{std::string(module), std::string(function)};
}

std::string script_text(const std::string& module, const std::string& function) {
  const auto import_name = function.substr(0, function.find('.'));
  return relocatable_shebang(kScriptInterpreter) + "\n" +
         fmt::format(fmt::runtime(kScriptTemplate), module, import_name, function);
}

// A path inside `base` (both relative to the root), or nullopt when `relative` leaves it.
std::optional<std::string> inside(const std::string& base, std::string_view relative) {
  const auto joined = (fs::path(base) / fs::path(relative)).lexically_normal();
  const auto back = joined.lexically_relative(fs::path(base).lexically_normal());
  if (back.empty() || back.generic_string().starts_with("..")) return std::nullopt;
  return joined.generic_string();
}

FileRecord generated_record(const std::string& path, const std::string& content, bool executable) {
  return {.path = path,
          .type = archive::EntryType::file,
          .size = content.size(),
          .executable = executable,
          .sha256 = core::sha256_hex(content)};
}

// How a wheel is installed, read from its .dist-info folder.
struct WheelInfo {
  std::string dist_info;  // `alpha-1.0.dist-info`
  std::string version;
  bool purelib = true;
};

Result<WheelInfo> read_wheel_info(const UnpackedWheel& wheel) {
  const auto wanted = specs::canonical_package_name(wheel.name);
  std::set<std::string> found;
  for (const auto& file : *wheel.files) {
    const auto top = file.path.substr(0, file.path.find('/'));
    if (!top.ends_with(".dist-info") || top.size() == file.path.size()) continue;
    const auto stem = top.substr(0, top.size() - std::string_view(".dist-info").size());
    const auto dash = stem.rfind('-');
    if (dash != std::string::npos && specs::canonical_package_name(stem.substr(0, dash)) == wanted)
      found.insert(top);
  }
  if (found.size() != 1) {
    return Error::failed(
               fmt::format("the wheel of {} in {} has {} `.dist-info` folders of its name",
                           wheel.name, text::quoted(wheel.dir.string()), found.size()))
        .hint("a wheel holds one `NAME-VERSION.dist-info` folder (PEP 427); report the wheel");
  }
  WheelInfo info{.dist_info = *found.begin()};
  const auto stem = info.dist_info.substr(0, info.dist_info.size() - 10);
  info.version = stem.substr(stem.rfind('-') + 1);
  const auto metadata = read_file(wheel.dir / info.dist_info / "WHEEL");
  for (const auto raw : text::split(metadata, '\n')) {
    const auto line = text::trim(raw);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    if (text::trim(line.substr(0, colon)) == "Root-Is-Purelib")
      info.purelib = text::to_lower(text::trim(line.substr(colon + 1))) == "true";
  }
  return info;
}

Error bad_entry(const UnpackedWheel& wheel, const std::string& entry, const std::string& why) {
  return Error::failed(fmt::format("cannot install the wheel of {}: {} {}", wheel.name,
                                   text::quoted(entry), why))
      .hint("nothing of it reached the environment; the previous one is untouched");
}

}  // namespace

std::vector<std::pair<std::string, std::string>> console_script_specs(
    std::map<std::string, std::string> console, const std::string& major_minor) {
  std::vector<std::pair<std::string, std::string>> specs;
  const auto major = major_minor.substr(0, major_minor.find('.'));
  // pip and setuptools bake versioned names in at build time; pip 23 writes them
  // for the installing Python instead (get_console_script_specs).
  if (const auto pip = console.find("pip"); pip != console.end()) {
    const auto target = pip->second;
    specs.emplace_back("pip", target);
    specs.emplace_back("pip" + major, target);
    specs.emplace_back("pip" + major_minor, target);
    static const std::regex kVersionedPip(R"(pip(\d+(\.\d+)?)?)");
    std::erase_if(console,
                  [](const auto& entry) { return std::regex_match(entry.first, kVersionedPip); });
  }
  if (const auto easy = console.find("easy_install"); easy != console.end()) {
    const auto target = easy->second;
    specs.emplace_back("easy_install", target);
    specs.emplace_back("easy_install-" + major_minor, target);
    static const std::regex kVersionedEasy(R"(easy_install(-\d+\.\d+)?)");
    std::erase_if(console,
                  [](const auto& entry) { return std::regex_match(entry.first, kVersionedEasy); });
  }
  for (auto& [name, target] : console)
    specs.emplace_back(name, std::move(target));
  return specs;
}

namespace {

// What placing one wheel does, gathered before anything is written.
struct Placement {
  const UnpackedWheel& wheel;
  const WheelInfo& info;
  PlacedWheel& placed;
  std::map<std::string, std::string> scheme_dirs;  // .data scheme key -> folder
  std::map<std::string, std::string> console;      // console_scripts
  std::map<std::string, std::string> gui;          // gui_scripts
  // Archive path -> installed path relative to lib_dir: RECORD's rows are rewritten to these.
  std::map<std::string, std::string> installed;
  std::set<std::string> changed;  // installed paths whose bytes envkit rewrote
  std::vector<GenerationBuilder::Mapped> links;
  std::vector<std::pair<FileRecord, std::string>> written;  // with their content
  std::vector<std::string> generated;                       // written paths the wheel lacks

  [[nodiscard]] std::string record_path(const std::string& destination) const {
    return fs::path(destination).lexically_relative(placed.lib_dir).generic_string();
  }
};

// Where `file` goes: inside lib_dir, or its `.data/<key>/` scheme folder; whether it is a script.
Result<std::pair<std::string, bool>> destination_of(const Placement& placement,
                                                    const FileRecord& file) {
  const auto slash = file.path.find('/');
  const auto top = file.path.substr(0, slash);
  if (!top.ends_with(".data") || slash == std::string::npos) {
    auto destination = inside(placement.placed.lib_dir, file.path);
    if (!destination) return bad_entry(placement.wheel, file.path, "leaves its install folder");
    return std::pair{*destination, false};
  }
  const auto rest = file.path.substr(slash + 1);
  const auto key_end = rest.find('/');
  if (key_end == std::string::npos)
    return bad_entry(placement.wheel, file.path, "is not in a `<name>.data/<scheme key>/` folder");
  const auto key = rest.substr(0, key_end);
  const auto dir = placement.scheme_dirs.find(key);
  if (dir == placement.scheme_dirs.end()) {
    return bad_entry(placement.wheel, file.path,
                     fmt::format("names the scheme key {}; a wheel's .data holds purelib, "
                                 "platlib, headers, scripts and data",
                                 text::quoted(key)));
  }
  auto destination = inside(dir->second, rest.substr(key_end + 1));
  if (!destination) return bad_entry(placement.wheel, file.path, "leaves its install folder");
  return std::pair{*destination, key == "scripts"};
}

// setuptools' own wrappers of entry points, which pip writes itself.
bool wraps_entry_point(const Placement& placement, const std::string& destination) {
  auto name = fs::path(destination).filename().string();
  for (const std::string_view suffix : {".exe", "-script.py", ".pya"}) {
    if (name.size() > suffix.size() && text::to_lower(name).ends_with(suffix))
      name.resize(name.size() - suffix.size());
  }
  return placement.console.contains(name) || placement.gui.contains(name);
}

// Every file of the wheel: linked from the cache, or (a `#!python` script) rewritten.
Result<void> map_files(Placement& placement) {
  const auto& info = placement.info;
  for (const auto& file : *placement.wheel.files) {
    if (file.type == archive::EntryType::directory) continue;
    auto where = destination_of(placement, file);
    if (!where) return std::move(where).error();
    const auto& [destination, script] = *where;
    if (script && wraps_entry_point(placement, destination)) continue;
    placement.installed[file.path] = placement.record_path(destination);
    // Written for this environment by place_wheel.
    if (file.path == info.dist_info + "/RECORD" || file.path == info.dist_info + "/INSTALLER")
      continue;
    if (script && file.type == archive::EntryType::file) {
      const auto content = read_file(placement.wheel.dir / file.path);
      if (content.starts_with("#!python")) {
        const auto newline = content.find('\n');
        const auto rewritten = relocatable_shebang(kScriptInterpreter) +
                               (newline == std::string::npos ? "\n" : content.substr(newline));
        placement.changed.insert(placement.installed[file.path]);
        placement.written.emplace_back(generated_record(destination, rewritten, file.executable),
                                       rewritten);
        continue;
      }
    }
    FileRecord at = file;
    at.path = destination;
    placement.links.push_back({.source = placement.wheel.dir / file.path, .file = std::move(at)});
  }
  return {};
}

// Console scripts (pip's names for pip's own), then GUI scripts, then INSTALLER.
Result<void> add_generated_files(Placement& placement, const std::string& scripts_dir,
                                 const std::string& major_minor) {
  auto scripts = console_script_specs(placement.console, major_minor);
  for (const auto& entry : placement.gui)
    scripts.push_back(entry);
  const auto entry_points = placement.info.dist_info + "/entry_points.txt";
  for (const auto& [name, value] : scripts) {
    const auto target = entry_point_target(value);
    if (!target) {
      return bad_entry(placement.wheel, entry_points,
                       fmt::format("gives the script {} no callable ({}): a script names "
                                   "`module:function`",
                                   text::quoted(name), text::quoted(value)));
    }
    const auto destination = inside(scripts_dir, name);
    if (!destination || name.find('/') != std::string::npos)
      return bad_entry(placement.wheel, entry_points,
                       fmt::format("names the script {}", text::quoted(name)));
    const auto content = script_text(target->first, target->second);
    placement.written.emplace_back(generated_record(*destination, content, true), content);
    placement.generated.push_back(*destination);
  }
  const auto installer = placement.placed.dist_info + "/INSTALLER";
  placement.written.emplace_back(generated_record(installer, "envkit\n", false), "envkit\n");
  placement.generated.push_back(installer);
  return {};
}

// RECORD as pip writes it (get_csv_rows_for_installed): the wheel's rows at
// their installed paths, rehashed where changed; generated files; installed
// files the wheel's RECORD lacks, without a hash.
void write_record_rows(Placement& placement) {
  auto& placed = placement.placed;
  std::map<std::string, const FileRecord*> by_path;
  for (const auto& [record, content] : placement.written)
    by_path[record.path] = &record;
  const auto row_of = [&](const FileRecord& record) {
    return std::pair{archive::record_hash_field(record.sha256), std::to_string(record.size)};
  };
  auto installed = placement.installed;
  const auto wheel_record = read_file(placement.wheel.dir / placement.info.dist_info / "RECORD");
  for (const auto raw : text::split(wheel_record, '\n')) {
    const auto fields = archive::csv_fields(raw);
    if (fields.empty() || fields[0].empty()) continue;
    const auto it = installed.find(fields[0]);
    const auto path = it == installed.end() ? fields[0] : it->second;
    if (it != installed.end()) installed.erase(it);
    if (placement.changed.contains(path)) {
      const auto at = (fs::path(placed.lib_dir) / path).lexically_normal().generic_string();
      placed.rows[path] = row_of(*by_path.at(at));
    } else {
      placed.rows[path] = {fields.size() > 1 ? fields[1] : "", fields.size() > 2 ? fields[2] : ""};
    }
  }
  for (const auto& path : placement.generated)
    placed.rows[placement.record_path(path)] = row_of(*by_path.at(path));
  for (const auto& [archive_path, path] : installed)
    placed.rows.try_emplace(path, std::pair<std::string, std::string>{"", ""});
}

}  // namespace

Result<PlacedWheel> place_wheel(GenerationBuilder& builder, const InterpreterCheck& check,
                                const UnpackedWheel& wheel) {
  auto info = read_wheel_info(wheel);
  if (!info) return std::move(info).error();
  const auto& scheme = check.scheme;
  PlacedWheel placed{.name = wheel.name,
                     .version = info->version,
                     .dist_info = {},
                     .lib_dir = info->purelib ? scheme.purelib : scheme.platlib,
                     .files = {},
                     .rows = {}};
  placed.dist_info = (fs::path(placed.lib_dir) / info->dist_info).generic_string();
  const auto entry_points = read_file(wheel.dir / info->dist_info / "entry_points.txt");
  Placement placement{
      .wheel = wheel,
      .info = *info,
      .placed = placed,
      .scheme_dirs = {{"purelib", scheme.purelib},
                      {"platlib", scheme.platlib},
                      {"scripts", scheme.scripts},
                      {"data", scheme.data},
                      {"headers", (fs::path(scheme.include) / wheel.name).generic_string()}},
      .console = ini_section(entry_points, "console_scripts"),
      .gui = ini_section(entry_points, "gui_scripts")};
  if (auto mapped = map_files(placement); !mapped) return std::move(mapped).error();
  const auto major_minor = check.version.substr(0, check.version.rfind('.'));
  if (auto added = add_generated_files(placement, scheme.scripts, major_minor); !added)
    return std::move(added).error();

  if (auto linked = builder.place(wheel.name, placement.links); !linked)
    return std::move(linked).error();
  for (const auto& [record, content] : placement.written) {
    if (auto wrote = builder.write(wheel.name, record, content); !wrote)
      return std::move(wrote).error();
  }
  write_record_rows(placement);
  for (auto& link : placement.links)
    placed.files.push_back(std::move(link.file));
  for (auto& [record, content] : placement.written)
    placed.files.push_back(record);
  return placed;
}

Result<void> compile_bytecode(const fs::path& root, const InterpreterCheck& check,
                              std::vector<PlacedWheel>& wheels) {
  std::string sources;
  for (const auto& wheel : wheels) {
    for (const auto& file : wheel.files) {
      if (file.type == archive::EntryType::file && file.path.ends_with(".py"))
        sources += (root / file.path).string() + "\n";
    }
  }
  if (sources.empty()) return {};
  const auto python = interpreter(root);
  // -f: a stale .pyc a wheel ships is compiled again, as pip does; a file that
  // does not compile (a template named .py) is skipped, as pip skips it.
  auto output = sys::run_process({python.string(), "-I", "-m", "compileall", "-q", "-f", "-i", "-"},
                                 {.stdin_data = sources, .timeout = kCompileTimeout});
  if (!output) {
    return Error::failed(fmt::format("cannot run {}", text::quoted(python.string())))
        .because(output.error().message());
  }
  if (output->exit_code != 0 && output->exit_code != 1) {
    return Error::failed("the environment's Python could not compile the packages' bytecode")
        .because(fmt::format("python -m compileall exited with status {}", output->exit_code));
  }
  for (auto& wheel : wheels) {
    std::map<std::string, FileRecord> files;
    for (auto& file : wheel.files)
      files[file.path] = std::move(file);
    std::vector<std::string> compiled;
    for (const auto& [path, file] : files) {
      if (file.type != archive::EntryType::file || !path.ends_with(".py")) continue;
      const fs::path source(path);
      const auto pyc = (source.parent_path() / "__pycache__" /
                        (source.stem().string() + "." + check.cache_tag + ".pyc"))
                           .generic_string();
      compiled.push_back(pyc);
    }
    for (const auto& pyc : compiled) {
      std::error_code error;
      if (!fs::is_regular_file(root / pyc, error)) continue;
      const auto sha256 = core::sha256_file(root / pyc);
      if (!sha256) return Error::failed(fmt::format("cannot read {}", text::quoted(pyc)));
      files[pyc] = {.path = pyc,
                    .type = archive::EntryType::file,
                    .size = fs::file_size(root / pyc, error),
                    .sha256 = *sha256};
      wheel.rows[fs::path(pyc).lexically_relative(wheel.lib_dir).generic_string()] = {"", ""};
    }
    wheel.files.clear();
    for (auto& [path, file] : files)
      wheel.files.push_back(std::move(file));
  }
  return {};
}

Result<std::size_t> remove_installed(const fs::path& root, const std::string& lib_dir,
                                     const std::string& name,
                                     std::map<std::string, PackageReceipt>& receipts,
                                     GenerationBuilder& builder) {
  const auto wanted = specs::canonical_package_name(name);
  std::set<std::string> removed;
  std::error_code error;
  std::vector<fs::path> dist_infos;
  for (fs::directory_iterator it(root / lib_dir, error), end; !error && it != end;
       it.increment(error)) {
    const auto folder = it->path().filename().string();
    if (!folder.ends_with(".dist-info")) continue;
    const auto stem = folder.substr(0, folder.size() - std::string_view(".dist-info").size());
    const auto dash = stem.rfind('-');
    if (dash != std::string::npos && specs::canonical_package_name(stem.substr(0, dash)) == wanted)
      dist_infos.push_back(it->path());
  }
  for (const auto& dist_info : dist_infos) {
    const auto record = read_file(dist_info / "RECORD");
    for (const auto raw : text::split(record, '\n')) {
      const auto fields = archive::csv_fields(raw);
      if (fields.empty() || fields[0].empty()) continue;
      const auto path = inside(lib_dir, fields[0]);
      // RECORD's scripts are `../../../bin/pip`: the generation's, not outside it.
      const auto relative = (fs::path(lib_dir) / fields[0]).lexically_normal().generic_string();
      if (!path && (relative.starts_with("..") || fs::path(relative).is_absolute())) continue;
      const auto at = path ? *path : relative;
      if (fs::remove(root / at, error)) removed.insert(at);
    }
    for (fs::recursive_directory_iterator it(dist_info, error), end; !error && it != end;
         it.increment(error))
      removed.insert(it->path().lexically_relative(root).generic_string());
    removed.insert(dist_info.lexically_relative(root).generic_string());
    fs::remove_all(dist_info, error);
  }
  for (auto& [package, receipt] : receipts) {
    std::erase_if(receipt.files,
                  [&](const FileRecord& file) { return removed.contains(file.path); });
  }
  for (const auto& path : removed)
    builder.release(path);
  return removed.size();
}

Result<void> write_record(GenerationBuilder& builder, PlacedWheel& wheel) {
  std::string text;
  for (const auto& [path, row] : wheel.rows)
    text += fmt::format("{},{},{}\r\n", archive::csv_field(path), archive::csv_field(row.first),
                        archive::csv_field(row.second));
  const auto record = generated_record(wheel.dist_info + "/RECORD", text, false);
  if (auto wrote = builder.write(wheel.name, record, text); !wrote) return wrote;
  wheel.files.push_back(record);
  std::sort(wheel.files.begin(), wheel.files.end(),
            [](const FileRecord& a, const FileRecord& b) { return a.path < b.path; });
  return {};
}

}  // namespace envkit::pyenv
