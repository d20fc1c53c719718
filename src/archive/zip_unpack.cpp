#include "zip_unpack.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>

#include "envkit/core/sha256.hpp"
#include "raw_inflate.hpp"
#include "zip_format.hpp"

namespace envkit::archive::detail {

namespace fs = std::filesystem;

std::optional<Piece> PiecePool::take(const std::atomic<bool>& cancelled) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return cancelled || !free_.empty() || made_ < most_; });
  if (cancelled) return std::nullopt;
  std::unique_ptr<std::byte[]> bytes;
  if (!free_.empty()) {
    bytes = std::move(free_.back());
    free_.pop_back();
  } else {
    ++made_;
    lock.unlock();
    // Not zeroed: every byte is read into before it is used.
    bytes = std::make_unique_for_overwrite<std::byte[]>(piece_size_);
  }
  return Piece{.bytes = {bytes.release(), PieceReturn{this}}};
}

void PiecePool::put_back(std::byte* bytes) {
  {
    const std::scoped_lock lock(mutex_);
    free_.emplace_back(bytes);
  }
  changed_.notify_one();
}

void PieceReturn::operator()(std::byte* bytes) const {
  if (bytes != nullptr) pool->put_back(bytes);
}

void PiecePool::wake() {
  // Under the lock: a taker between its check and its wait is not missed.
  const std::scoped_lock lock(mutex_);
  changed_.notify_all();
}

void PieceChannel::push(Piece piece) {
  {
    const std::scoped_lock lock(mutex_);
    pieces_.push_back(std::move(piece));
  }
  changed_.notify_one();
}

void PieceChannel::close() {
  {
    const std::scoped_lock lock(mutex_);
    closed_ = true;
  }
  changed_.notify_all();
}

std::optional<std::span<const std::byte>> PieceChannel::next() {
  held_ = {};  // back to the pool
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return closed_ || !pieces_.empty(); });
  if (pieces_.empty()) return std::nullopt;
  held_ = std::move(pieces_.front());
  pieces_.pop_front();
  return std::span<const std::byte>(held_.bytes.get(), held_.size);
}

void PieceChannel::release() {
  const std::scoped_lock lock(mutex_);
  held_ = {};
  pieces_.clear();
}

void JobQueue::push(Job* job) {
  {
    const std::scoped_lock lock(mutex_);
    jobs_.push_back(job);
  }
  changed_.notify_one();
}

void JobQueue::close() {
  {
    const std::scoped_lock lock(mutex_);
    closed_ = true;
  }
  changed_.notify_all();
}

Job* JobQueue::pop() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return closed_ || !jobs_.empty(); });
  if (jobs_.empty()) return nullptr;
  auto* job = jobs_.front();
  jobs_.pop_front();
  return job;
}

struct Decoding {
  RawInflater inflater;
  std::vector<std::byte> in = std::vector<std::byte>(kBufferSize);
  std::vector<std::byte> out = std::vector<std::byte>(kBufferSize);
};

namespace {

// Below this many unpacked bytes one thread is done before others would start.
constexpr std::uint64_t kParallelFloor = std::uint64_t{16} << 20;
// With trust_record, files this large take RECORD's hash (settle_hash).
constexpr std::uint64_t kTrustRecordFloor = std::uint64_t{1} << 20;
constexpr std::uint16_t kStored = 0;
constexpr std::uint16_t kDeflated = 8;

// The entry's type and permission bits from its directory record: Unix
// modes where the zip was made on Unix, else a file or (a name ending in '/',
// the MS-DOS directory bit) a folder.
std::pair<mode_t, mode_t> type_and_mode(const ZipMember& member) {
  const auto unix_mode = static_cast<mode_t>(member.external_attributes >> 16);
  const bool unix_made = (member.made_by >> 8) == 3 && unix_mode != 0;
  const bool named_directory = member.path.ends_with('/');
  if (unix_made && (unix_mode & S_IFMT) != 0 && !named_directory) {
    return {unix_mode & S_IFMT, unix_mode & 07777};
  }
  const bool directory = named_directory || (member.external_attributes & 0x10U) != 0;
  const mode_t permissions = unix_made ? (unix_mode & 07777) : (directory ? 0755 : 0644);
  return {directory ? S_IFDIR : S_IFREG, permissions};
}

// A folder's hash, to pick its lock among ZipUnpacker::creating_.
std::size_t hash_of(std::span<const std::string> folder) {
  std::size_t hash = folder.size();
  for (const auto& part : folder)
    hash = hash * 31 + std::hash<std::string>{}(part);
  return hash;
}

// The stored name as RECORD's rows are keyed (split_entry_path has passed it).
std::string record_key(const std::string& stored) {
  auto parts = split_entry_path(stored);
  return parts ? join_path(*parts) : stored;
}

// An entry's data in the zip on disk, read with pread.
class FileRange final : public EntryInput {
 public:
  FileRange(int fd, std::uint64_t at, std::string_view zip, std::string_view entry)
      : fd_(fd), at_(at), zip_(zip), entry_(entry) {}

  Result<std::span<const std::byte>> next(std::span<std::byte> scratch,
                                          std::uint64_t left) override {
    const auto chunk =
        scratch.first(static_cast<std::size_t>(std::min<std::uint64_t>(left, scratch.size())));
    std::size_t done = 0;
    while (done < chunk.size()) {
      const auto n =
          ::pread(fd_, chunk.data() + done, chunk.size() - done, static_cast<off_t>(at_ + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        return Error::failed(fmt::format("cannot read `{}`", zip_)).because(std::strerror(errno));
      }
      if (n == 0) {
        return Error::failed(fmt::format("cannot unpack `{}`", zip_))
            .because(fmt::format("entry `{}`: the archive ends inside its data", entry_))
            .hint("the archive is truncated, damaged, or not a zip archive");
      }
      done += static_cast<std::size_t>(n);
    }
    at_ += chunk.size();
    return std::span<const std::byte>(chunk);
  }

 private:
  int fd_;
  std::uint64_t at_;
  std::string_view zip_;
  std::string_view entry_;
};

// An entry's data handed over from a stream, piece by piece.
class StreamedRange final : public EntryInput {
 public:
  explicit StreamedRange(PieceChannel& pieces) : pieces_(pieces) {}
  // Done (or failed): its last piece goes back at once, not with the wheel.
  ~StreamedRange() override { pieces_.release(); }
  StreamedRange(const StreamedRange&) = delete;
  StreamedRange& operator=(const StreamedRange&) = delete;

  Result<std::span<const std::byte>> next(std::span<std::byte> /*scratch*/,
                                          std::uint64_t /*left*/) override {
    if (auto piece = pieces_.next()) return *piece;
    // Reading stopped: the reader's error (or another thread's) is reported.
    return Error::internal(std::string(kStopped));
  }

 private:
  PieceChannel& pieces_;
};

// An entry's data already in memory (a streamed RECORD), in one piece.
class MemoryRange final : public EntryInput {
 public:
  explicit MemoryRange(std::string_view bytes) : bytes_(bytes) {}
  Result<std::span<const std::byte>> next(std::span<std::byte> /*scratch*/,
                                          std::uint64_t left) override {
    const auto piece = bytes_.substr(0, static_cast<std::size_t>(left));
    bytes_.remove_prefix(piece.size());
    return std::as_bytes(std::span(piece));
  }

 private:
  std::string_view bytes_;
};

}  // namespace

ZipUnpacker::ZipUnpacker(int fd, std::string_view name, fs::path destination,
                         const ExtractOptions& options)
    : fd_(fd),
      name_(name),
      destination_(std::move(destination)),
      options_(options),
      budget_(options.max_bytes) {}

ZipUnpacker::~ZipUnpacker() {
  if (workers_.joinable()) {
    stop_stream();
    workers_.join();
  }
}

Result<ExtractResult> ZipUnpacker::unpack(const ZipLayout& layout) {
  auto writer = TreeWriter::open(destination_);
  if (!writer) return cannot_start(name_, writer.error());
  hash_ = options_.hash_files;
  auto record = read_record(layout.members, [&](std::size_t i) -> std::unique_ptr<EntryInput> {
    return std::make_unique<FileRange>(fd_, layout.data_starts[i], name_, layout.members[i].path);
  });
  if (!record) return std::move(record).error();
  for (std::size_t i = 0; i < layout.members.size(); ++i) {
    if (auto planned = plan(*writer, layout.members[i], layout.data_starts[i]); !planned) {
      return std::move(planned).error();
    }
  }
  // Largest first, each thread taking the next: the longest entry starts at
  // once and the rest fill in around it.
  std::vector<Job*> order;
  std::uint64_t total = 0;
  for (auto& job : files_) {
    order.push_back(&job);
    total += job.member.size;
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const Job* a, const Job* b) { return a->member.size > b->member.size; });
  for (auto* job : order)
    queue_.push(job);
  queue_.close();
  const auto threads =
      total < kParallelFloor
          ? std::size_t{1}
          : std::clamp<std::size_t>(options_.threads, std::size_t{1}, files_.size());
  if (auto worked = run_workers(threads); !worked) return std::move(worked).error();
  return finish(*writer);
}

Result<void> ZipUnpacker::start_stream(PiecePool& pool) {
  auto writer = TreeWriter::open(destination_);
  if (!writer) return cannot_start(name_, writer.error());
  stream_writer_.emplace(std::move(*writer));
  pieces_ = &pool;
  hash_ = true;  // a RECORD, if any, is read at the end
  const auto threads = std::max<std::size_t>(options_.threads, 1);
  workers_ = std::jthread([this, threads] { workers_result_ = run_workers(threads); });
  return {};
}

Result<PieceChannel*> ZipUnpacker::stream_entry(const ZipMember& member) {
  Job* queued = nullptr;
  Streamed streamed;
  auto planned = plan(*stream_writer_, member, 0, &queued, &streamed.placed);
  if (!planned) return std::move(planned).error();
  streamed.job = queued;
  streamed_.push_back(std::move(streamed));
  return queued != nullptr ? queued->pieces.get() : nullptr;
}

// Any thread: the others stop at their next piece; a stream's reader stops
// at its next take.
void ZipUnpacker::halt() {
  stop_ = true;
  queue_.close();
  if (pieces_ != nullptr) pieces_->wake();
}

// The reader's thread (which alone adds jobs): a thread waiting for a piece
// that will never come wakes up.
void ZipUnpacker::stop_stream() {
  halt();
  for (auto& job : files_)
    if (job.pieces) job.pieces->close();
}

Result<void> ZipUnpacker::abandon_stream() {
  stop_stream();
  if (workers_.joinable()) workers_.join();
  if (workers_result_ && !*workers_result_) return std::move(*workers_result_).error();
  return {};
}

Result<std::optional<ExtractResult>> ZipUnpacker::finish_stream(
    const std::vector<ZipMember>& members, const std::vector<std::string>& record_data) {
  queue_.close();
  workers_.join();
  if (!*workers_result_) return std::move(*workers_result_).error();
  if (stop_) return Error::internal(std::string(kStopped));
  auto& writer = *stream_writer_;
  std::vector<std::pair<Job*, mode_t>> mode_fixes;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const auto [type, mode] = type_and_mode(members[i]);
    if (type != (members[i].path.ends_with('/') ? S_IFDIR : S_IFREG)) {
      return std::optional<ExtractResult>();  // a symlink, or a folder not named as one
    }
    const auto& streamed = streamed_[i];
    if (!streamed.placed) continue;
    if (type == S_IFDIR) {
      note_directory_mode(*streamed.placed, mode);
      continue;
    }
    auto& job = *streamed.job;
    const auto bits = file_mode(mode);
    result_.entries[job.record].executable = (bits & 0111) != 0;
    if (bits != job.mode) mode_fixes.emplace_back(&job, bits);
  }
  auto record = read_record(members, [&](std::size_t i) -> std::unique_ptr<EntryInput> {
    return std::make_unique<MemoryRange>(record_data[i]);
  });
  if (!record) return std::move(record).error();
  for (const auto& [job, bits] : mode_fixes) {
    if (auto set = writer.set_file_mode(job->path, bits); !set) {
      return from_writer(job->member.path, set.error());
    }
  }
  auto finished = finish(writer);
  if (!finished) return std::move(finished).error();
  return std::optional<ExtractResult>(std::move(*finished));
}

// A wheel's RECORD: its rows, checked against every file written.
Result<void> ZipUnpacker::read_record(
    const std::vector<ZipMember>& members,
    const std::function<std::unique_ptr<EntryInput>(std::size_t)>& input) {
  std::optional<std::size_t> found;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (!is_wheel_record(members[i].path)) continue;
    // Two dist-info folders: not a wheel RECORD can describe alone.
    if (found) return {};
    found = i;
  }
  if (!found) return {};
  const auto& member = members[*found];
  if (member.size > kMaxRecordBytes) {
    return refused(member.path, fmt::format("a RECORD of {} bytes is more than the {} MiB "
                                            "envkit reads",
                                            member.size, kMaxRecordBytes >> 20));
  }
  if (auto usable = check_usable(member); !usable) return usable;
  std::string text;
  Decoding decoding;
  auto source = input(*found);
  auto decoded =
      decode(member, *source, decoding, [&](std::span<const std::byte> bytes) -> Result<void> {
        text.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        return {};
      });
  if (!decoded) return decoded;
  auto rows = parse_wheel_record(text, name_);
  if (!rows) return std::move(rows).error();
  record_ = std::move(*rows);
  const auto key = record_key(member.path);
  record_folder_ = key.substr(0, key.rfind('/') + 1);
  hash_ = true;
  return {};
}

Result<void> ZipUnpacker::check_usable(const ZipMember& member) const {
  if ((member.flags & 0x01U) != 0) return refused(member.path, "encrypted entries are not read");
  if (member.method != kStored && member.method != kDeflated) {
    return refused(
        member.path,
        fmt::format("compression method {} is not read (only stored and deflate)", member.method));
  }
  return {};
}

// Places one entry, records it in the result (archive order, each path
// once, folders made on the way listed), makes a folder, keeps a file's job.
// A stream's entry (`queued` given) is queued at once, with a channel for
// its data, and where it landed is told in `placed`.
Result<void> ZipUnpacker::plan(TreeWriter& writer, const ZipMember& member,
                               std::uint64_t data_start, Job** queued,
                               std::optional<Components>* placed) {
  if (++entries_seen_ > options_.max_entries) return over_entry_limit(member.path);
  if (member.path.empty()) return refused("(no name)", "the entry has no name");
  auto stored = split_entry_path(member.path);
  if (!stored) return refused(member.path, stored.error().message());
  if (!names_.insert(join_path(*stored)).second) {
    return refused(member.path, "the archive names it twice")
        .hint("a zip made by a zip tool never does this; do not use this archive");
  }
  const auto [type, mode] = type_and_mode(member);
  if (const auto why = forbidden_type(type)) return refused(member.path, *why);
  auto where = place_entry(member.path, type == S_IFDIR, options_);
  if (!where) return refused(member.path, where.error().message());
  if (!*where) return {};  // stripped or left out by the map
  const Components& path = **where;
  if (placed != nullptr) *placed = path;
  if (auto parents = record_parents(path, member.path); !parents) return parents;
  const auto joined = join_path(path);
  if (type == S_IFDIR) {
    if (auto made = writer.make_directory(path); !made)
      return from_writer(member.path, made.error());
    note_directory_mode(path, mode);
    if (!recorded_.contains(joined)) record({.path = joined, .type = EntryType::directory});
    return {};
  }
  if (auto usable = check_usable(member); !usable) return usable;
  if (recorded_.contains(joined)) {
    return refused(member.path, fmt::format("another entry lands on `{}` too", joined));
  }
  Job job{.member = member,
          .data_start = data_start,
          .record = result_.entries.size(),
          .path = path,
          .mode = mode};
  if (type == S_IFLNK) {
    record({.path = joined, .type = EntryType::symlink});
    links_.push_back(std::move(job));
    return {};
  }
  job.mode = file_mode(mode);
  record({.path = joined,
          .type = EntryType::file,
          .size = member.size,
          .executable = (job.mode & 0111) != 0});
  if (queued != nullptr) job.pieces = std::make_unique<PieceChannel>();
  files_.push_back(std::move(job));
  if (queued != nullptr) {
    *queued = &files_.back();
    queue_.push(*queued);
  }
  return {};
}

// A folder's mode is set at the end; a later entry for the same folder decides it.
void ZipUnpacker::note_directory_mode(const Components& path, mode_t stored) {
  const auto joined = join_path(path);
  const auto mode = directory_mode(stored);
  if (mode != 0755 || moded_directories_.contains(joined)) {
    moded_directories_.insert(joined);
    directory_modes_.emplace_back(path, mode);
  }
}

Result<void> ZipUnpacker::record_parents(const Components& path, std::string_view stored) {
  std::size_t known = path.size() - 1;
  while (known > 0 && !recorded_.contains(join_path(std::span(path).first(known))))
    --known;
  for (std::size_t i = known + 1; i < path.size(); ++i) {
    if (++entries_seen_ > options_.max_entries) return over_entry_limit(stored);
    record({.path = join_path(std::span(path).first(i)), .type = EntryType::directory});
  }
  return {};
}

void ZipUnpacker::record(ExtractedEntry entry) {
  recorded_[entry.path] = result_.entries.size();
  result_.entries.push_back(std::move(entry));
}

Result<void> ZipUnpacker::run_workers(std::size_t threads) {
  std::vector<Failure> failures(threads);
  {
    std::vector<std::jthread> others;
    for (std::size_t t = 1; t < threads; ++t)
      others.emplace_back([this, &failures, t] { work(failures[t]); });
    work(failures[0]);
  }
  // The first failure in archive order is the one reported, whatever thread
  // met it first: the same archive always gives the same message.
  Failure* first = nullptr;
  for (auto& failure : failures) {
    if (failure.error && (first == nullptr || failure.record < first->record)) first = &failure;
  }
  if (first != nullptr) return std::move(*first->error);
  return {};
}

void ZipUnpacker::work(Failure& failure) {
  try {
    auto writer = TreeWriter::open(destination_);
    if (!writer) {
      failure.error = cannot_start(name_, writer.error());
      halt();
      return;
    }
    Decoding decoding;
    for (auto* job = queue_.pop(); job != nullptr && !stop_; job = queue_.pop()) {
      auto written = write_file(*writer, *job, decoding);
      if (written) continue;
      // Stopped by another thread's failure (or the stream's): that one is reported.
      if (written.error().message() == kStopped) return;
      failure = {.error = std::move(written).error(), .record = job->record};
      halt();
      return;
    }
  } catch (const std::exception& e) {
    failure.error = Error::internal(fmt::format("unpacking `{}`: {}", name_, e.what()));
    halt();
  }
}

std::unique_ptr<EntryInput> ZipUnpacker::input_of(const Job& job) const {
  if (job.pieces) return std::make_unique<StreamedRange>(*job.pieces);
  return std::make_unique<FileRange>(fd_, job.data_start, name_, job.member.path);
}

Result<void> ZipUnpacker::write_file(TreeWriter& writer, Job& job, Decoding& decoding) {
  const auto& member = job.member;
  // Refuse before writing anything when the header already says too much.
  if (member.size > budget_.remaining()) return over_byte_limit(member.path);
  auto file = [&] {
    const auto folder = std::span<const std::string>(job.path).first(job.path.size() - 1);
    const std::lock_guard creating(creating_[hash_of(folder) % creating_.size()]);
    return writer.create_file(job.path);
  }();
  if (!file) return from_writer(member.path, file.error());
  std::optional<core::Sha256> hash;
  if (hash_ && !(options_.trust_record && member.size >= kTrustRecordFloor)) hash.emplace();
  const auto shown = join_path(job.path);
  auto input = input_of(job);
  auto decoded =
      decode(member, *input, decoding, [&](std::span<const std::byte> bytes) -> Result<void> {
        written_ += bytes.size();
        if (!budget_.take(bytes.size())) return over_byte_limit(member.path);
        if (auto ok = write_all(file->get(), bytes, shown); !ok) {
          return from_writer(member.path, ok.error());
        }
        if (hash) hash->update(bytes);
        return {};
      });
  if (!decoded) return decoded;
  if (::fchmod(file->get(), job.mode) != 0) {
    return from_writer(member.path, Error::failed(fmt::format("cannot set the mode of `{}`", shown))
                                        .because(std::strerror(errno)));
  }
  if (hash) {
    job.sha256 = hash->hex_digest();
    job.hashed = true;
  }
  return {};
}

// A file's sha256 once every file is written: RECORD's where it vouches for
// a file not hashed as written, else the one computed (now, for a large file
// RECORD does not vouch for). A row that disagrees with a file of the package
// is a refusal: the file is not what the wheel's build wrote. One that
// disagrees with a file of the wheel's own .dist-info is a warning: PyPI's
// torch 1.10.2, 1.11.0 and 1.12.1 wheels list their METADATA with the hash and
// size it had before a rewrite, pip and uv install them, and the lock's sha256
// of the wheel is what vouches for its bytes (docs/install.md).
Result<void> ZipUnpacker::settle_hash(Job& job) {
  const auto key = record_key(job.member.path);
  const auto listed = record_.find(key);
  const RecordedFile* row = listed == record_.end() ? nullptr : &listed->second;
  const bool size_agrees = row != nullptr && (!row->size || *row->size == job.member.size);
  if (!job.hashed && row != nullptr && row->sha256 && size_agrees) {
    job.sha256 = *row->sha256;
    return {};
  }
  if (!job.hashed && hash_) {
    const auto written = destination_ / join_path(job.path);
    auto sha = core::sha256_file(written);
    if (!sha)
      return from_writer(job.member.path, Error::failed("cannot read back what was written"));
    job.sha256 = *std::move(sha);
  }
  if (row == nullptr) return {};
  std::string reason;
  if (!size_agrees) {
    reason = fmt::format("it holds {} bytes, RECORD says {}", job.member.size, *row->size);
  } else if (row->sha256 && *row->sha256 != job.sha256) {
    reason = fmt::format("its sha256 is {}, RECORD says {}", job.sha256, *row->sha256);
  }
  if (reason.empty()) return {};
  if (!key.starts_with(record_folder_)) {
    return refused(job.member.path, reason + ": the wheel was changed after it was built")
        .hint("download the wheel again from its index; if it is the same, tell its publisher");
  }
  result_.warnings.push_back(
      fmt::format("`{}`: its RECORD disagrees with entry `{}` ({}); kept as the wheel holds it, "
                  "with the hash of what was written",
                  name_, job.member.path, reason));
  return {};
}

// After every file is written: their hashes into the result (settle_hash);
// links; folders' modes.
Result<ExtractResult> ZipUnpacker::finish(TreeWriter& writer) {
  for (auto& job : files_) {
    if (auto settled = settle_hash(job); !settled) return std::move(settled).error();
    result_.entries[job.record].sha256 = std::move(job.sha256);
  }
  // Links once every file is written: a path through a link would be
  // refused by the writer, whichever came first on another thread.
  Decoding decoding;
  for (const auto& job : links_) {
    if (auto made = make_link(writer, job, decoding); !made) return std::move(made).error();
  }
  // Folders last, once nothing is written into them.
  if (auto set = apply_directory_modes(writer, directory_modes_, name_); !set) {
    return std::move(set).error();
  }
  result_.bytes_written = written_.load();
  return std::move(result_);
}

Result<void> ZipUnpacker::make_link(TreeWriter& writer, const Job& job, Decoding& decoding) {
  const auto& member = job.member;
  if (member.size >= kMaxPath) return refused(member.path, "the symlink's target is too long");
  std::string target;
  FileRange input(fd_, job.data_start, name_, member.path);
  auto decoded =
      decode(member, input, decoding, [&](std::span<const std::byte> bytes) -> Result<void> {
        target.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        return {};
      });
  if (!decoded) return decoded;
  const auto dir = std::span<const std::string>(job.path).first(job.path.size() - 1);
  if (auto allowed = check_link_target(dir, target); !allowed) {
    return refused(member.path, allowed.error().message());
  }
  if (auto made = writer.make_symlink(job.path, target); !made) {
    return from_writer(member.path, made.error());
  }
  result_.entries[job.record].link_target = target;
  return {};
}

// Reads the entry's data from `input` and gives what it decodes to `sink`,
// piece by piece; checks its size and CRC-32 against `member`'s.
Result<void> ZipUnpacker::decode(const ZipMember& member, EntryInput& input, Decoding& decoding,
                                 const Sink& sink) const {
  std::uint64_t left = member.compressed_size;
  std::uint64_t produced = 0;
  std::uint32_t crc = 0;
  bool finished = false;
  const auto take = [&](std::span<const std::byte> bytes) -> Result<void> {
    produced += bytes.size();
    if (produced > member.size) {
      return damaged(member.path, fmt::format("its data holds more than the {} bytes its "
                                              "header says",
                                              member.size));
    }
    return sink(bytes);
  };
  if (member.method == kDeflated) decoding.inflater.reset();
  while (left > 0 && !finished) {
    if (stop_) return Error::internal(std::string(kStopped));
    auto piece = input.next(decoding.in, left);
    if (!piece) return std::move(piece).error();
    // An input with nothing more (a RECORD too large to have been kept) would
    // otherwise be asked again forever.
    if (piece->empty()) return damaged(member.path, "the archive ends inside its data");
    const auto chunk =
        piece->first(static_cast<std::size_t>(std::min<std::uint64_t>(left, piece->size())));
    left -= chunk.size();
    if (member.method == kStored) {
      crc = crc32_update(crc, chunk);
      if (auto taken = take(chunk); !taken) return taken;
      continue;
    }
    decoding.inflater.feed(chunk);
    while (true) {
      const auto step = decoding.inflater.inflate(decoding.out);
      if (step.corrupt) return damaged(member.path, "its deflate data is corrupt");
      if (step.produced > 0) {
        if (auto taken = take(std::span(decoding.out).first(step.produced)); !taken) {
          return taken;
        }
      }
      if (step.finished) {
        finished = true;
        break;
      }
      if (step.produced == 0) {
        if (decoding.inflater.consumed()) break;  // the next chunk
        return damaged(member.path, "its deflate data is corrupt");
      }
    }
  }
  if (member.method == kDeflated) {
    if (!finished) return damaged(member.path, "its deflate data ends before its last block");
    crc = decoding.inflater.crc32();
  }
  if (produced != member.size) {
    return damaged(member.path,
                   fmt::format("it holds {} bytes, its header says {}", produced, member.size));
  }
  if (crc != member.crc32) {
    return damaged(member.path, fmt::format("CRC-32 mismatch: its data gives {:08x}, its header "
                                            "says {:08x}",
                                            crc, member.crc32));
  }
  return {};
}

Error ZipUnpacker::refused(std::string_view entry, std::string_view reason) const {
  return Error::failed(fmt::format("refused to unpack `{}`", name_))
      .because(fmt::format("entry `{}`: {}", entry, reason));
}

Error ZipUnpacker::damaged(std::string_view entry, std::string_view reason) const {
  return Error::failed(fmt::format("cannot unpack `{}`", name_))
      .because(fmt::format("entry `{}`: {}", entry, reason))
      .hint("the archive is truncated, damaged, or not a zip archive");
}

Error ZipUnpacker::over_entry_limit(std::string_view entry) const {
  return refused(
      entry, fmt::format("the archive has more than {} entries, the limit", options_.max_entries));
}

Error ZipUnpacker::over_byte_limit(std::string_view entry) const {
  return refused(
      entry, fmt::format("the archive unpacks to more than {} bytes, the limit", budget_.limit()));
}

// TreeWriter's errors: a refusal has no cause, an OS failure has one.
Error ZipUnpacker::from_writer(std::string_view entry, const Error& error) const {
  if (error.causes().empty()) return refused(entry, error.message());
  Error failed = Error::failed(fmt::format("cannot unpack `{}`", name_));
  failed.because(fmt::format("entry `{}`: {}", entry, error.message()));
  for (const auto& cause : error.causes())
    failed.because(cause);
  return failed;
}

Result<ExtractResult> unpack_zip(int fd, const ZipLayout& layout, std::string_view name,
                                 const fs::path& destination, const ExtractOptions& options) {
  ZipUnpacker unpacker(fd, name, destination, options);
  return unpacker.unpack(layout);
}

}  // namespace envkit::archive::detail
