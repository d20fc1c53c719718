// The safe extractor's core: libarchive reads and decompresses, and decides
// nothing else. Every decision about what may be written, and the writing
// itself (TreeWriter, POSIX calls relative to folder descriptors), is
// envkit's, so a libarchive option or default can never widen what an archive
// may do.
#include "extractor.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "envkit/archive/runfile.hpp"
#include "envkit/core/sha256.hpp"
#include "libarchive.hpp"
#include "runfile_stream.hpp"

namespace envkit::archive::detail {

Result<Reader> new_reader(ReaderFor what) {
  if (auto missing = libarchive_load_error()) return Error::failed(std::move(*missing));
  Reader reader(archive_read_new());
  if (!reader) throw std::bad_alloc();
  // No compression filter: decoder.hpp decompresses and checks every
  // stream to its end, which libarchive's filters do not (its gzip filter
  // never checks the CRC). tar covers ustar, GNU tar and pax. A zip on disk
  // is read through its central directory only: that is where the modes and
  // symlinks are, and a zip without one is truncated (the streaming reader
  // would take every entry before the cut as the whole archive).
  archive_read_support_format_tar(reader.get());
  if (what == ReaderFor::zip_file) archive_read_support_format_zip_seekable(reader.get());
  if (what == ReaderFor::stream) archive_read_support_format_zip_streamable(reader.get());
  return reader;
}

namespace {

locale_t utf8_locale() {
  // C.UTF-8 is built into glibc since 2.35.
  static const locale_t utf8 = [] {
    locale_t made = ::newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
    if (made == static_cast<locale_t>(nullptr)) {
      made = ::newlocale(LC_CTYPE_MASK, "en_US.UTF-8", static_cast<locale_t>(nullptr));
    }
    return made;
  }();
  return utf8;
}

}  // namespace

Utf8Names::Utf8Names() {
  if (const auto utf8 = utf8_locale(); utf8 != static_cast<locale_t>(nullptr)) {
    previous_ = ::uselocale(utf8);
  }
}

Utf8Names::~Utf8Names() {
  if (previous_ != static_cast<locale_t>(nullptr)) ::uselocale(previous_);
}

mode_t file_mode(mode_t stored) {
  return (stored & 0755) | 0600;
}

mode_t directory_mode(mode_t stored) {
  return (stored & 0755) | 0700;
}

Result<void> apply_directory_modes(TreeWriter& writer,
                                   const std::vector<std::pair<Components, mode_t>>& modes,
                                   std::string_view name) {
  for (const auto& [path, mode] : modes) {
    if (auto set = writer.set_directory_mode(path, mode); !set)
      return cannot_start(name, set.error());
  }
  return {};
}

std::string entry_name(struct archive_entry* entry) {
  const char* name = archive_entry_pathname(entry);
  if (name == nullptr) name = archive_entry_pathname_utf8(entry);
  return name == nullptr ? std::string() : std::string(name);
}

std::string link_target(struct archive_entry* entry) {
  const char* target = archive_entry_symlink(entry);
  if (target == nullptr) target = archive_entry_symlink_utf8(entry);
  return target == nullptr ? std::string() : std::string(target);
}

Error cannot_start(std::string_view name, const Error& error) {
  Error wrapped = Error::failed(fmt::format("cannot unpack `{}`", name));
  wrapped.because(error.message());
  for (const auto& cause : error.causes())
    wrapped.because(cause);
  return wrapped;
}

std::optional<std::string_view> forbidden_type(mode_t type) {
  switch (type) {
    case AE_IFREG:
    case AE_IFDIR:
    case AE_IFLNK:
      return std::nullopt;
    case AE_IFCHR:
    case AE_IFBLK:
      return "device files are not allowed";
    case AE_IFIFO:
      return "fifos are not allowed";
    case AE_IFSOCK:
      return "sockets are not allowed";
    default:
      return "entries of this type are not allowed";
  }
}

Result<std::optional<Components>> place_entry(const std::string& stored, bool directory,
                                              const ExtractOptions& options) {
  auto parts = split_entry_path(stored);
  if (!parts) return std::move(parts).error();
  if (parts->empty()) {
    // `./` names the destination itself: nothing to create.
    if (directory) return std::optional<Components>();
    return Error::failed("the entry has no name");
  }
  const auto strip = static_cast<std::size_t>(std::max(options.strip_components, 0));
  if (parts->size() <= strip) return std::optional<Components>();
  Components rest(parts->begin() + static_cast<std::ptrdiff_t>(strip), parts->end());
  if (!options.map) return std::optional<Components>(std::move(rest));
  auto relative = join_path(rest);
  if (directory) relative += '/';
  const auto mapped = options.map(relative);
  if (!mapped) return std::optional<Components>();
  auto final_parts = split_entry_path(*mapped);
  if (!final_parts) {
    return Error::failed(
        fmt::format("the layout maps it to `{}`: {}", *mapped, final_parts.error().message()));
  }
  if (final_parts->empty()) return std::optional<Components>();
  return std::optional<Components>(std::move(*final_parts));
}

Extractor::Extractor(struct archive* reader, std::string name, const ExtractOptions& options,
                     TreeWriter writer, ByteBudget& budget)
    : reader_(reader),
      name_(std::move(name)),
      options_(options),
      writer_(std::move(writer)),
      budget_(budget),
      buffer_(kBufferSize) {}

Result<ExtractResult> Extractor::run() {
  for (index_ = 0;; ++index_) {
    if (stop_ != nullptr && stop_->load()) break;
    struct archive_entry* entry = nullptr;
    const int status = archive_read_next_header(reader_, &entry);
    if (status == ARCHIVE_EOF) break;
    // ARCHIVE_WARN still gives a whole entry (an unknown pax keyword, say).
    if (status < ARCHIVE_WARN) return damaged(true);
    current_ = entry_name(entry);
    if (++entries_seen_ > options_.max_entries) return over_entry_limit();
    // Another thread's: the next header skips its data.
    if (wanted_ != nullptr && (index_ >= wanted_->size() || !(*wanted_)[index_])) continue;
    if (auto unpacked = unpack(entry); !unpacked) return std::move(unpacked).error();
  }
  drop_stale_records();
  if (!defer_directory_modes_) {
    if (auto set = apply_directory_modes(writer_, directory_modes_, name_); !set) {
      return std::move(set).error();
    }
  }
  return std::move(result_);
}

Result<void> Extractor::unpack(struct archive_entry* entry) {
  if (current_.empty()) return refused("the entry has no name");
  const auto type = static_cast<mode_t>(archive_entry_filetype(entry));
  const char* hardlink = archive_entry_hardlink(entry);
  if (hardlink == nullptr) {
    if (const auto why = forbidden_type(type)) return refused(*why);
  }
  // A nested runfile is decided before the map: its entries are mapped, not it.
  if (hardlink == nullptr && type == AE_IFREG && nested_runfile(current_)) {
    return unpack_maybe_runfile(entry);
  }
  auto where = place_entry(current_, hardlink == nullptr && type == AE_IFDIR, options_);
  if (!where) return refused(where.error().message());
  if (!*where) return {};  // stripped or left out by the map
  const Components& path = **where;
  if (hardlink != nullptr) return unpack_hardlink(path, hardlink);
  if (type == AE_IFDIR) {
    return unpack_directory(path, directory_mode(static_cast<mode_t>(archive_entry_perm(entry))));
  }
  if (type == AE_IFLNK) return unpack_symlink(path, link_target(entry));
  return unpack_file(path, entry);
}

namespace {

// The rest of the entry being unpacked: a nested runfile's data.
class EntrySource final : public Source {
 public:
  EntrySource(struct archive* reader, std::string name) : reader_(reader), name_(std::move(name)) {}
  Result<std::size_t> read(std::span<std::byte> buffer) override {
    const auto n = archive_read_data(reader_, buffer.data(), buffer.size());
    if (n >= 0) return static_cast<std::size_t>(n);
    const char* message = archive_error_string(reader_);
    return Error::failed(fmt::format("cannot read `{}`", name_))
        .because(message != nullptr ? message : "unreadable archive");
  }
  [[nodiscard]] std::string name() const override { return name_; }

 private:
  struct archive* reader_;
  std::string name_;
};

}  // namespace

// The entry's path as nested_runfile sees it: after strip_components, before the
// map; nullopt when it is unsafe or stripped away.
std::optional<std::string> Extractor::stripped_path(const std::string& stored) const {
  auto parts = split_entry_path(stored);
  const auto strip = static_cast<std::size_t>(std::max(options_.strip_components, 0));
  if (!parts || parts->size() <= strip) return std::nullopt;
  return join_path(std::span<const std::string>(*parts).subspan(strip));
}

bool Extractor::nested_runfile(const std::string& stored) const {
  if (!options_.nested_runfile || destination_.empty()) return false;
  const auto path = stripped_path(stored);
  return path && options_.nested_runfile(*path);
}

// Reads the entry's start; a makeself runfile is unpacked in place (its
// entries under `<path without .run>/`, mapped and checked like any other),
// anything else is written as a file.
Result<void> Extractor::unpack_maybe_runfile(struct archive_entry* entry) {
  std::string start;
  while (start.size() < 4096) {
    const auto n = archive_read_data(reader_, buffer_.data(), buffer_.size());
    if (n < 0) return damaged(false);
    if (n == 0) break;
    start.append(reinterpret_cast<const char*>(buffer_.data()), static_cast<std::size_t>(n));
  }
  if (!looks_like_makeself(start)) {
    auto where = place_entry(current_, false, options_);
    if (!where) return refused(where.error().message());
    if (!*where) return {};
    return unpack_file(**where, entry, start);
  }

  auto stem = stripped_path(current_).value_or(current_);  // nested_runfile checked it
  if (stem.ends_with(".run")) stem.resize(stem.size() - 4);
  ExtractOptions inner;
  inner.map = [outer = options_.map, stem](std::string_view inner_path) {
    auto full = fmt::format("{}/{}", stem, inner_path);
    return outer ? outer(full) : std::optional<std::string>(std::move(full));
  };
  inner.max_bytes = budget_.remaining();
  inner.max_entries = options_.max_entries - std::min(options_.max_entries, entries_seen_);
  inner.hash_files = options_.hash_files;
  // One level deep: nested_runfile stays empty, so a runfile inside is a file.
  EntrySource source(reader_, fmt::format("{}!/{}", name_, current_));
  auto unpacked = extract_runfile_after(source, std::move(start), destination_, inner);
  if (!unpacked) return std::move(unpacked).error();
  result_.bytes_written += unpacked->bytes_written;
  if (!budget_.take(unpacked->bytes_written)) return over_byte_limit();
  entries_seen_ += unpacked->entries.size();
  for (auto& nested : unpacked->entries) {
    const auto known = recorded_.find(nested.path);
    if (nested.type == EntryType::directory && known != recorded_.end() &&
        result_.entries[known->second].type == EntryType::directory) {
      continue;
    }
    record(std::move(nested));
  }
  return {};
}

Result<void> Extractor::unpack_directory(const Components& path, mode_t mode) {
  if (auto parents = record_parents(path); !parents) return parents;
  if (auto made = writer_.make_directory(path); !made) return from_writer(made.error());
  // Set at the end: a folder the archive lists before its files stays
  // writable for them until then.
  // A later entry for the same folder decides its mode.
  if (mode != 0755 || moded_directories_.contains(join_path(path))) {
    moded_directories_.insert(join_path(path));
    directory_modes_.emplace_back(path, mode);
  }
  if (!recorded_.contains(join_path(path))) {
    record({.path = join_path(path), .type = EntryType::directory});
  }
  return {};
}

Result<void> Extractor::unpack_symlink(const Components& path, const std::string& target) {
  const auto dir = std::span<const std::string>(path).first(path.size() - 1);
  if (auto allowed = check_link_target(dir, target); !allowed) {
    return refused(allowed.error().message());
  }
  if (auto parents = record_parents(path); !parents) return parents;
  if (auto made = writer_.make_symlink(path, target); !made) return from_writer(made.error());
  record({.path = join_path(path), .type = EntryType::symlink, .link_target = target});
  return {};
}

Result<void> Extractor::unpack_hardlink(const Components& path, const std::string& stored_target) {
  auto target = place_entry(stored_target, false, options_);
  if (!target) {
    return refused(fmt::format("hard link to `{}`: {}", stored_target, target.error().message()));
  }
  const auto found = *target ? recorded_.find(join_path(**target)) : recorded_.end();
  if (found == recorded_.end() || result_.entries[found->second].type != EntryType::file) {
    return refused(
        fmt::format("hard link to `{}`, which is not a file unpacked before it", stored_target));
  }
  if (**target == path) return {};  // a link to itself changes nothing
  ExtractedEntry linked = result_.entries[found->second];
  linked.path = join_path(path);
  if (auto parents = record_parents(path); !parents) return parents;
  auto copied = writer_.make_hardlink(path, **target);
  if (!copied) return from_writer(copied.error());
  // A copy (no hard links on this file system) counts like any write.
  result_.bytes_written += *copied;
  if (!budget_.take(*copied)) return over_byte_limit();
  record(std::move(linked));
  return {};
}

Result<void> Extractor::unpack_file(const Components& path, struct archive_entry* entry,
                                    std::string_view first_bytes) {
  // Refuse before writing anything when the header already says too much.
  if (archive_entry_size_is_set(entry) != 0) {
    const auto declared =
        static_cast<std::uint64_t>(std::max<la_int64_t>(archive_entry_size(entry), 0));
    if (declared > budget_.remaining()) return over_byte_limit();
  }
  if (auto parents = record_parents(path); !parents) return parents;
  auto file = writer_.create_file(path);
  if (!file) return from_writer(file.error());
  ExtractedEntry written{.path = join_path(path), .type = EntryType::file};
  std::optional<core::Sha256> hash;
  if (options_.hash_files) hash.emplace();
  // `first_bytes`: the entry's start, already read (unpack_maybe_runfile).
  bool first = !first_bytes.empty();
  while (true) {
    std::span<const std::byte> chunk;
    if (first) {
      chunk = std::as_bytes(std::span(first_bytes));
      first = false;
    } else {
      const auto n = archive_read_data(reader_, buffer_.data(), buffer_.size());
      if (n == 0) break;
      if (n < 0) return damaged(false);
      chunk = std::span<const std::byte>(buffer_).first(static_cast<std::size_t>(n));
    }
    result_.bytes_written += chunk.size();
    if (!budget_.take(chunk.size())) return over_byte_limit();
    if (auto ok = write_all(file->get(), chunk, written.path); !ok) {
      return from_writer(ok.error());
    }
    if (hash) hash->update(chunk);
    written.size += chunk.size();
  }
  const auto mode = file_mode(static_cast<mode_t>(archive_entry_perm(entry)));
  written.executable = (mode & 0111) != 0;
  if (::fchmod(file->get(), mode) != 0) {
    return from_writer(Error::failed(fmt::format("cannot set the mode of `{}`", written.path))
                           .because(std::strerror(errno)));
  }
  if (hash) written.sha256 = hash->hex_digest();
  record(std::move(written));
  return {};
}

// Folders created on the way to `path`, recorded once each. They count
// against max_entries like entries of their own: each costs an inode.
Result<void> Extractor::record_parents(const Components& path) {
  // Every recorded folder has its parents recorded, so the deepest recorded
  // one ends the search; usually that is the immediate parent.
  std::size_t known = path.size() - 1;
  while (known > 0 && !recorded_.contains(join_path(std::span(path).first(known))))
    --known;
  for (std::size_t i = known + 1; i < path.size(); ++i) {
    if (++entries_seen_ > options_.max_entries) return over_entry_limit();
    record({.path = join_path(std::span(path).first(i)), .type = EntryType::directory});
  }
  return {};
}

// A later entry for the same path replaces the earlier record (TreeWriter has
// replaced the file or refused), so entries describe what is on disk. The
// earlier one is only marked here: erasing it from the middle each time would
// make an archive of many duplicates quadratic.
void Extractor::record(ExtractedEntry entry) {
  if (const auto earlier = recorded_.find(entry.path); earlier != recorded_.end()) {
    stale_[earlier->second] = true;
    any_stale_ = true;
  }
  recorded_[entry.path] = result_.entries.size();
  result_.entries.push_back(std::move(entry));
  origins_.push_back(index_);
  stale_.push_back(false);
}

void Extractor::drop_stale_records() {
  if (!any_stale_) return;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < result_.entries.size(); ++i) {
    if (stale_[i]) continue;
    result_.entries[kept] = std::move(result_.entries[i]);
    origins_[kept] = origins_[i];
    ++kept;
  }
  result_.entries.resize(kept);
  origins_.resize(kept);
}

Error Extractor::refused(std::string_view reason) const {
  return Error::failed(fmt::format("refused to unpack `{}`", name_))
      .because(fmt::format("entry `{}`: {}", shown_entry(), reason));
}

Error Extractor::over_entry_limit() const {
  return refused(
      fmt::format("the archive has more than {} entries, the limit", options_.max_entries));
}

Error Extractor::over_byte_limit() const {
  return refused(
      fmt::format("the archive unpacks to more than {} bytes, the limit", budget_.limit()));
}

// TreeWriter's errors: a refusal has no cause, an OS failure has one.
Error Extractor::from_writer(const Error& error) const {
  if (error.causes().empty()) return refused(error.message());
  Error failed = Error::failed(fmt::format("cannot unpack `{}`", name_));
  failed.because(fmt::format("entry `{}`: {}", shown_entry(), error.message()));
  for (const auto& cause : error.causes())
    failed.because(cause);
  return failed;
}

// libarchive could not read on: a truncated or corrupt archive, or the Source
// failed. `between_entries`: the failure came reading a header, so the last
// entry named was complete.
Error Extractor::damaged(bool between_entries) const {
  const auto where =
      current_.empty()
          ? std::string()
          : fmt::format("{} `{}`", between_entries ? "after entry" : "entry", current_);
  if (source_error_ != nullptr && source_error_->has_value()) {
    // libarchive's message is the source's own, already said; the decoder's
    // errors name the archive already.
    Error error = **source_error_;
    const bool named = error.to_string().find("`" + name_ + "`") != std::string::npos;
    std::string context = named ? "" : fmt::format("while unpacking `{}`", name_);
    if (!where.empty()) context = context.empty() ? where : fmt::format("{} ({})", context, where);
    if (!context.empty()) error.because(context);
    return error;
  }
  const char* message = archive_error_string(reader_);
  std::string reason = message != nullptr ? message : "unreadable archive";
  if (!where.empty()) reason = fmt::format("{}: {}", where, reason);
  return Error::failed(fmt::format("cannot unpack `{}`", name_))
      .because(reason)
      .hint("the archive is truncated, damaged, or not a tar or zip archive");
}

std::string_view Extractor::shown_entry() const {
  return current_.empty() ? std::string_view("(no name)") : std::string_view(current_);
}

}  // namespace envkit::archive::detail
