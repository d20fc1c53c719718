#include "envkit/store/records.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "entry_record_reader.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/store/kernel_scan.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::store {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string_view type_name(archive::EntryType type) {
  switch (type) {
    case archive::EntryType::file:
      return "file";
    case archive::EntryType::directory:
      return "directory";
    case archive::EntryType::symlink:
      return "symlink";
  }
  return "file";
}

json files_json(const std::vector<FileRecord>& files) {
  json out = json::array();
  for (const auto& file : files) {
    json item = {{"path", file.path}, {"type", type_name(file.type)}};
    if (file.type == archive::EntryType::file) {
      item["size"] = file.size;
      item["sha256"] = file.sha256;
      if (file.executable) item["executable"] = true;
    }
    if (file.type == archive::EntryType::symlink) item["target"] = file.link_target;
    out.push_back(std::move(item));
  }
  return out;
}

std::vector<FileRecord> files_from(const json& array) {
  std::vector<FileRecord> files;
  for (const auto& item : array) {
    FileRecord file;
    file.path = item.at("path").get<std::string>();
    file.type = parse_type(item.value("type", "file"));
    file.size = item.value("size", std::uint64_t{0});
    file.sha256 = item.value("sha256", "");
    file.executable = item.value("executable", false);
    file.link_target = item.value("target", "");
    files.push_back(std::move(file));
  }
  return files;
}

json patches_json(const std::vector<PatchRecord>& patches) {
  json out = json::array();
  for (const auto& patch : patches)
    out.push_back({{"sha256", patch.sha256}, {"url", patch.url}});
  return out;
}

std::vector<PatchRecord> patches_from(const json& object) {
  std::vector<PatchRecord> patches;
  if (!object.contains("patches")) return patches;
  for (const auto& item : object.at("patches")) {
    patches.push_back(
        {.sha256 = item.at("sha256").get<std::string>(), .url = item.value("url", "")});
  }
  return patches;
}

json stamps_json(const std::map<std::string, FileStamp>& stamps) {
  json out = json::object();
  for (const auto& [path, stamp] : stamps) {
    out[path] = {{"size", stamp.size},
                 {"inode", stamp.inode},
                 {"mtime-ns", stamp.mtime_ns},
                 {"ctime-ns", stamp.ctime_ns}};
  }
  return out;
}

std::map<std::string, FileStamp> stamps_from(const json& object) {
  std::map<std::string, FileStamp> stamps;
  if (!object.contains("stamps")) return stamps;
  for (const auto& [path, item] : object.at("stamps").items()) {
    stamps[path] = {.size = item.at("size").get<std::uint64_t>(),
                    .inode = item.at("inode").get<std::uint64_t>(),
                    .mtime_ns = item.at("mtime-ns").get<std::int64_t>(),
                    .ctime_ns = item.at("ctime-ns").get<std::int64_t>()};
  }
  return stamps;
}

json coverage_json(const elf::KernelCoverage& coverage) {
  json out = {{"sass", sass_targets(coverage)}, {"ptx", ptx_targets(coverage)}};
  if (!coverage.newest_ptx_isa.empty()) out["ptx-isa"] = coverage.newest_ptx_isa;
  return out;
}

elf::KernelCoverage coverage_from(const json& object) {
  const auto names = [&](const char* key) {
    return object.value(key, json::array()).get<std::vector<std::string>>();
  };
  auto coverage = coverage_of_targets(names("sass"), names("ptx"), object.value("ptx-isa", ""));
  if (!coverage) throw std::invalid_argument("a kernel target is not sm_XY[a] or compute_XY[a|f]");
  return *std::move(coverage);
}

json kernels_json(const PackageKernels& kernels) {
  json files = json::array();
  for (const auto& file : kernels.files) {
    json item = coverage_json(file.coverage);
    item["path"] = file.path;
    if (!file.error.empty()) item["error"] = file.error;
    files.push_back(std::move(item));
  }
  json out = coverage_json(kernels.coverage);
  out["files"] = std::move(files);
  return out;
}

PackageKernels kernels_from(const json& object) {
  PackageKernels kernels{.coverage = coverage_from(object), .files = {}};
  for (const auto& item : object.at("files")) {
    kernels.files.push_back({.path = item.at("path").get<std::string>(),
                             .coverage = coverage_from(item),
                             .error = item.value("error", "")});
  }
  return kernels;
}

json receipt_json(const PackageReceipt& receipt) {
  json artifacts = json::array();
  for (const auto& artifact : receipt.artifacts) {
    json item = {{"component", artifact.component},
                 {"sha256", artifact.sha256},
                 {"url", artifact.url},
                 {"entry", artifact.entry}};
    if (!artifact.patches.empty()) item["patches"] = patches_json(artifact.patches);
    artifacts.push_back(std::move(item));
  }
  json object = {{"name", receipt.name},   {"version", receipt.version},
                 {"build", receipt.build}, {"packaging", receipt.packaging},
                 {"artifacts", artifacts}, {"files", files_json(receipt.files)}};
  if (receipt.kernels) object["kernels"] = kernels_json(*receipt.kernels);
  return object;
}

PackageReceipt receipt_from(const json& object) {
  PackageReceipt receipt;
  receipt.name = object.at("name").get<std::string>();
  receipt.version = object.at("version").get<std::string>();
  receipt.build = object.value("build", "");
  receipt.packaging = object.value("packaging", "");
  for (const auto& item : object.at("artifacts")) {
    receipt.artifacts.push_back({.component = item.value("component", ""),
                                 .sha256 = item.at("sha256").get<std::string>(),
                                 .url = item.value("url", ""),
                                 .entry = item.value("entry", ""),
                                 .patches = patches_from(item)});
  }
  receipt.files = files_from(object.at("files"));
  // Absent in receipts of an envkit that did not read kernels yet.
  if (object.contains("kernels")) receipt.kernels = kernels_from(object.at("kernels"));
  return receipt;
}

Error unreadable(const fs::path& file, const std::exception& error) {
  return Error::failed(fmt::format("{} is damaged", text::quoted(file.string())))
      .because(error.what())
      .hint("run `envkit install` again: it rebuilds what it cannot read");
}

fs::path state_file(const fs::path& root) {
  return root / ".envkit" / "state.json";
}
fs::path receipts_dir(const fs::path& root) {
  return root / ".envkit" / "receipts";
}

}  // namespace

std::string to_json(const EntryRecord& record) {
  json object = {{"id", record.id},
                 {"sha256", record.sha256},
                 {"url", record.url},
                 {"package", record.package},
                 {"component", record.component},
                 {"layout", record.layout},
                 {"files", files_json(record.files)}};
  if (!record.patches.empty()) object["patches"] = patches_json(record.patches);
  if (!record.stamps.empty()) object["stamps"] = stamps_json(record.stamps);
  return object.dump(1) + "\n";
}

Result<EntryRecord> parse_entry_record(std::string_view text, const fs::path& file) {
  if (auto fast = read_entry_record_fast(text)) return *std::move(fast);
  try {
    const json object = json::parse(text);
    return EntryRecord{.id = object.at("id").get<std::string>(),
                       .sha256 = object.at("sha256").get<std::string>(),
                       .url = object.value("url", ""),
                       .package = object.value("package", ""),
                       .component = object.value("component", ""),
                       .layout = object.value("layout", ""),
                       .patches = patches_from(object),
                       .files = files_from(object.at("files")),
                       .stamps = stamps_from(object)};
  } catch (const json::exception& error) {
    return unreadable(file, error);
  }
}

Result<void> write_state(const fs::path& root, const PrefixState& state) {
  std::error_code error;
  fs::create_directories(receipts_dir(root), error);
  if (error) {
    return Error::failed("cannot write the receipts in " + text::quoted(root.string()))
        .because(error.message());
  }
  json names = json::array();
  std::vector<std::string> contents;
  std::vector<fs::path> paths;
  for (const auto& receipt : state.packages) {
    names.push_back(receipt.name);
    paths.push_back(receipts_dir(root) / (receipt.name + ".json"));
    contents.push_back(receipt_json(receipt).dump(1) + "\n");
  }
  const json object = {{"generation", state.generation},
                       {"platform", state.platform},
                       {"link-mode", state.link_mode},
                       {"packages", names},
                       {"links", files_json(state.links)}};
  // Renamed last: a generation without state.json is not finished.
  paths.push_back(state_file(root));
  contents.push_back(object.dump(1) + "\n");
  std::vector<sys::FileContent> files;
  for (std::size_t i = 0; i < paths.size(); ++i)
    files.push_back({paths[i], contents[i]});
  return sys::write_files_atomic(files);
}

Result<std::optional<PrefixState>> read_state(const fs::path& root) {
  std::error_code ignored;
  if (!fs::exists(state_file(root), ignored)) return std::optional<PrefixState>{};
  auto text = sys::read_file(state_file(root));
  if (!text) return std::move(text).error();
  PrefixState state;
  std::vector<std::string> names;
  try {
    const json object = json::parse(*text);
    state.generation = object.at("generation").get<int>();
    state.platform = object.value("platform", "");
    state.link_mode = object.value("link-mode", "");
    names = object.at("packages").get<std::vector<std::string>>();
    state.links = files_from(object.value("links", json::array()));
  } catch (const json::exception& error) {
    return unreadable(state_file(root), error);
  }
  for (const auto& name : names) {
    const auto file = receipts_dir(root) / (name + ".json");
    auto receipt_text = sys::read_file(file);
    if (!receipt_text) return std::move(receipt_text).error();
    try {
      state.packages.push_back(receipt_from(json::parse(*receipt_text)));
    } catch (const json::exception& error) {
      return unreadable(file, error);
    } catch (const std::invalid_argument& error) {
      return unreadable(file, error);
    }
  }
  return std::optional<PrefixState>(std::move(state));
}

Result<std::vector<FileRecord>> record_tree(const fs::path& root) {
  std::vector<FileRecord> files;
  std::error_code error;
  fs::recursive_directory_iterator it(root, error);
  for (const fs::recursive_directory_iterator end; !error && it != end; it.increment(error)) {
    const auto path = it->path();
    FileRecord file{.path = path.lexically_relative(root).generic_string()};
    const auto status = it->symlink_status(error);
    if (error) break;
    if (fs::is_symlink(status)) {
      file.type = archive::EntryType::symlink;
      file.link_target = fs::read_symlink(path, error).string();
    } else if (fs::is_directory(status)) {
      file.type = archive::EntryType::directory;
    } else if (fs::is_regular_file(status)) {
      auto sha256 = core::sha256_file(path);
      if (!sha256) return Error::failed(fmt::format("cannot read {}", text::quoted(path.string())));
      file.sha256 = *std::move(sha256);
      file.size = fs::file_size(path, error);
      file.executable = (status.permissions() & fs::perms::owner_exec) != fs::perms::none;
    } else {
      return Error::failed(
          fmt::format("{} is neither a file, a folder nor a symlink", text::quoted(path.string())));
    }
    if (error) break;
    files.push_back(std::move(file));
  }
  if (error) {
    return Error::failed(fmt::format("cannot read {}", text::quoted(root.string())))
        .because(error.message());
  }
  std::sort(files.begin(), files.end(),
            [](const FileRecord& a, const FileRecord& b) { return a.path < b.path; });
  return files;
}

}  // namespace envkit::store
