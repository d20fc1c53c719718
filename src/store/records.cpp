#include "envkit/store/records.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
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

archive::EntryType parse_type(const std::string& name) {
  if (name == "directory") return archive::EntryType::directory;
  if (name == "symlink") return archive::EntryType::symlink;
  return archive::EntryType::file;
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
  return {{"name", receipt.name},   {"version", receipt.version},
          {"build", receipt.build}, {"packaging", receipt.packaging},
          {"artifacts", artifacts}, {"files", files_json(receipt.files)}};
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
  return receipt;
}

// Reads a well-formed entry record straight from the parser's events into an
// EntryRecord, without the JSON tree (CCCL's record, 1,851 files and their stamps,
// took a sixth of a warm install as a tree). It gives up on anything it does not
// expect (an unknown key, a missing field, a wrong type); parse_entry_record then
// reads the text as a tree, which reports what is wrong.
class RecordReader : public nlohmann::json_sax<json> {
 public:
  explicit RecordReader(EntryRecord& record) : record_(record) {}

  [[nodiscard]] bool complete() const {
    return has_id_ && has_sha256_ && has_files_ && where_.empty();
  }

  bool null() override { return false; }
  bool boolean(bool value) override {
    if (at() != Where::file || key_ != "executable") return false;
    file_.executable = value;
    return true;
  }
  bool number_integer(number_integer_t value) override {
    if (at() != Where::stamp) return false;
    return stamp_time(value);
  }
  bool number_unsigned(number_unsigned_t value) override {
    if (at() == Where::file && key_ == "size") {
      file_.size = value;
      return true;
    }
    if (at() != Where::stamp) return false;
    if (key_ == "size") return mark(kSize), stamp_.size = value, true;
    if (key_ == "inode") return mark(kInode), stamp_.inode = value, true;
    if (value > static_cast<number_unsigned_t>(std::numeric_limits<std::int64_t>::max()))
      return false;
    return stamp_time(static_cast<std::int64_t>(value));
  }
  bool number_float(number_float_t, const string_t&) override { return false; }
  bool binary(binary_t&) override { return false; }
  bool string(string_t& value) override {
    switch (at()) {
      case Where::top:
        return top_string(value);
      case Where::file:
        if (key_ == "path") return file_has_path_ = true, file_.path = std::move(value), true;
        if (key_ == "type") return file_.type = parse_type(value), true;
        if (key_ == "sha256") return file_.sha256 = std::move(value), true;
        if (key_ == "target") return file_.link_target = std::move(value), true;
        return false;
      case Where::patch:
        if (key_ == "sha256")
          return patch_has_sha256_ = true, patch_.sha256 = std::move(value), true;
        if (key_ == "url") return patch_.url = std::move(value), true;
        return false;
      default:
        return false;
    }
  }
  bool start_object(std::size_t) override {
    switch (at()) {
      case Where::none:
        where_.push_back(Where::top);
        return true;
      case Where::files:
        file_ = {};
        file_has_path_ = false;
        where_.push_back(Where::file);
        return true;
      case Where::patches:
        patch_ = {};
        patch_has_sha256_ = false;
        where_.push_back(Where::patch);
        return true;
      case Where::top:
        if (key_ != "stamps") return false;
        where_.push_back(Where::stamps);
        return true;
      case Where::stamps:
        stamp_ = {};
        stamp_fields_ = 0;
        where_.push_back(Where::stamp);
        return true;
      default:
        return false;
    }
  }
  bool key(string_t& value) override {
    key_ = std::move(value);
    if (at() == Where::stamps) stamp_path_ = key_;
    return true;
  }
  bool end_object() override {
    switch (at()) {
      case Where::file:
        if (!file_has_path_) return false;
        record_.files.push_back(std::move(file_));
        break;
      case Where::patch:
        if (!patch_has_sha256_) return false;
        record_.patches.push_back(std::move(patch_));
        break;
      case Where::stamp:
        if (stamp_fields_ != kAllStampFields) return false;
        record_.stamps[stamp_path_] = stamp_;
        break;
      case Where::top:
      case Where::stamps:
        break;
      default:
        return false;
    }
    where_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    if (at() != Where::top) return false;
    if (key_ == "files") return has_files_ = true, where_.push_back(Where::files), true;
    if (key_ == "patches") return where_.push_back(Where::patches), true;
    return false;
  }
  bool end_array() override {
    if (at() != Where::files && at() != Where::patches) return false;
    where_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  enum class Where : std::uint8_t { none, top, files, file, patches, patch, stamps, stamp };
  static constexpr unsigned kSize = 1, kInode = 2, kMtime = 4, kCtime = 8;
  static constexpr unsigned kAllStampFields = kSize | kInode | kMtime | kCtime;

  [[nodiscard]] Where at() const { return where_.empty() ? Where::none : where_.back(); }
  void mark(unsigned field) { stamp_fields_ |= field; }
  bool stamp_time(std::int64_t value) {
    if (key_ == "mtime-ns") return mark(kMtime), stamp_.mtime_ns = value, true;
    if (key_ == "ctime-ns") return mark(kCtime), stamp_.ctime_ns = value, true;
    return false;
  }
  bool top_string(std::string& value) {
    if (key_ == "id") return has_id_ = true, record_.id = std::move(value), true;
    if (key_ == "sha256") return has_sha256_ = true, record_.sha256 = std::move(value), true;
    if (key_ == "url") return record_.url = std::move(value), true;
    if (key_ == "package") return record_.package = std::move(value), true;
    if (key_ == "component") return record_.component = std::move(value), true;
    if (key_ == "layout") return record_.layout = std::move(value), true;
    return false;
  }

  EntryRecord& record_;
  std::vector<Where> where_;
  std::string key_;
  FileRecord file_;
  bool file_has_path_ = false;
  PatchRecord patch_;
  bool patch_has_sha256_ = false;
  std::string stamp_path_;
  FileStamp stamp_;
  unsigned stamp_fields_ = 0;
  bool has_id_ = false, has_sha256_ = false, has_files_ = false;
};

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
  EntryRecord fast;
  RecordReader reader(fast);
  if (json::sax_parse(text, &reader, json::input_format_t::json, true) && reader.complete()) {
    return fast;
  }
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
