#include "entry_record_reader.hpp"

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

namespace envkit::store {

namespace {

using nlohmann::json;

// The SAX handler of read_entry_record_fast: each event either fits the record's
// shape or stops the parse.
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

}  // namespace

archive::EntryType parse_type(const std::string& name) {
  if (name == "directory") return archive::EntryType::directory;
  if (name == "symlink") return archive::EntryType::symlink;
  return archive::EntryType::file;
}

std::optional<EntryRecord> read_entry_record_fast(std::string_view text) {
  EntryRecord record;
  RecordReader reader(record);
  if (json::sax_parse(text, &reader, json::input_format_t::json, true) && reader.complete())
    return record;
  return std::nullopt;
}

}  // namespace envkit::store
