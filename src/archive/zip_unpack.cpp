#include "zip_unpack.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "envkit/archive/wheel_record.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/sys/unique_fd.hpp"
#include "extractor.hpp"
#include "raw_inflate.hpp"
#include "zip_format.hpp"

namespace envkit::archive {

void ArrivingFile::grew(std::uint64_t bytes) {
  {
    const std::scoped_lock lock(mutex_);
    bytes_ = std::max(bytes_, bytes);
    exists_ = true;
  }
  changed_.notify_all();
}

void ArrivingFile::finished(bool whole) {
  {
    const std::scoped_lock lock(mutex_);
    done_ = true;
    whole_ = whole;
  }
  changed_.notify_all();
}

bool ArrivingFile::wait_for(std::uint64_t end) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return (exists_ && bytes_ >= end) || done_; });
  return exists_ && bytes_ >= end;
}

std::optional<std::uint64_t> ArrivingFile::wait_finished() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return done_; });
  if (!whole_) return std::nullopt;
  return bytes_;
}

}  // namespace envkit::archive

namespace envkit::archive::detail {

namespace {

namespace fs = std::filesystem;

// Below this many unpacked bytes one thread is done before others would start.
constexpr std::uint64_t kParallelFloor = std::uint64_t{16} << 20;
// A larger RECORD (torch's is 3 MB) is refused, not read.
constexpr std::uint64_t kMaxRecordBytes = std::uint64_t{64} << 20;
constexpr std::uint16_t kStored = 0;
constexpr std::uint16_t kDeflated = 8;
constexpr std::string_view kStopped = "stopped: another thread failed";

// A file or symlink whose data is decoded: the entry, where its record is in
// the result, and what the thread that wrote it found.
struct Job {
  ZipMember member;
  std::uint64_t data_start = 0;
  std::size_t record = 0;
  Components path;
  mode_t mode = 0;
  std::string sha256;
};

// Jobs handed to the threads as they are found (all at once for a whole file,
// one by one as a download arrives).
class JobQueue {
 public:
  void push(Job* job) {
    {
      const std::scoped_lock lock(mutex_);
      jobs_.push_back(job);
    }
    changed_.notify_one();
  }
  void close() {
    {
      const std::scoped_lock lock(mutex_);
      closed_ = true;
    }
    changed_.notify_all();
  }
  // The next job; nullptr once closed and empty.
  Job* pop() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return closed_ || !jobs_.empty(); });
    if (jobs_.empty()) return nullptr;
    auto* job = jobs_.front();
    jobs_.pop_front();
    return job;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job*> jobs_;
  bool closed_ = false;
};

// What one thread decodes with: memory per thread is these two buffers and
// ISA-L's state, whatever the entry's size.
struct Decoding {
  RawInflater inflater;
  std::vector<std::byte> in = std::vector<std::byte>(kBufferSize);
  std::vector<std::byte> out = std::vector<std::byte>(kBufferSize);
};

using Sink = std::function<Result<void>(std::span<const std::byte>)>;

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

// The stored name as RECORD's rows are keyed (split_entry_path has passed it).
std::string record_key(const std::string& stored) {
  auto parts = split_entry_path(stored);
  return parts ? join_path(*parts) : stored;
}

class ZipUnpacker {
 public:
  ZipUnpacker(int fd, std::string_view name, fs::path destination, const ExtractOptions& options,
              ArrivingFile* arriving)
      : fd_(fd),
        name_(name),
        destination_(std::move(destination)),
        options_(options),
        arriving_(arriving),
        budget_(options.max_bytes) {}

  // A whole file, as check_zip_layout read it.
  Result<ExtractResult> unpack(const ZipLayout& layout) {
    auto writer = TreeWriter::open(destination_);
    if (!writer) return cannot_start(name_, writer.error());
    hash_ = options_.hash_files;
    if (auto record = read_record(layout); !record) return std::move(record).error();
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

  // Outcome of unpack_arriving when the central directory surprises: the
  // caller unpacks the whole file again.
  struct Surprise {};

  // A file still arriving (extract_zip_arriving).
  Result<std::optional<ExtractResult>> unpack_arriving() {
    auto writer = TreeWriter::open(destination_);
    if (!writer) return cannot_start(name_, writer.error());
    hash_ = true;  // a RECORD, if any, is read at the end
    const auto threads = std::max<std::size_t>(options_.threads, 1);
    std::optional<Result<void>> worked;
    std::jthread workers([&] { worked = run_workers(threads); });
    auto result = scan_then_finish(*writer);
    queue_.close();
    workers.join();
    if (!*worked && (result || result.error().message() == kStopped)) {
      return std::move(*worked).error();
    }
    return result;
  }

 private:
  Result<std::optional<ExtractResult>> scan_then_finish(TreeWriter& writer) {
    auto scanned = scan(writer);
    if (!scanned) return fail(std::move(scanned).error());
    const auto size = arriving_->wait_finished();
    if (!size)
      return fail(Error::failed(fmt::format("cannot unpack `{}`", name_))
                      .because("the download ended before the archive did"));
    auto layout = check_zip_layout(fd_, *size, name_, options_.max_entries);
    if (!layout) return fail(std::move(layout).error());
    // Each local header read is the directory's record of the same place, in
    // the same order (check_zip_layout checked what each header says).
    std::unordered_map<std::uint64_t, std::size_t> by_offset;
    for (std::size_t i = 0; i < layout->members.size(); ++i)
      by_offset.emplace(layout->members[i].offset, i);
    for (std::size_t k = 0; k < scanned_.size(); ++k) {
      const auto found = by_offset.find(scanned_[k].offset);
      if (found == by_offset.end()) {
        return fail(refused(scanned_[k].path,
                            "its local header is one the central directory "
                            "does not list")
                        .hint("a zip made by a zip tool never does this; do not use this "
                              "archive"));
      }
      if (found->second != k) return surprise();
      const auto& member = layout->members[k];
      const auto [type, mode] = type_and_mode(member);
      if (type != (scanned_[k].path.ends_with('/') ? S_IFDIR : S_IFREG)) return surprise();
      if (!scanned_[k].placed) continue;
      if (type == S_IFDIR) {
        note_directory_mode(*scanned_[k].placed, mode);
        continue;
      }
      auto& job = *scanned_[k].job;
      const auto bits = file_mode(mode);
      result_.entries[job.record].executable = (bits & 0111) != 0;
      if (bits != job.mode) mode_fixes_.emplace_back(&job, bits);
    }
    for (std::size_t i = scanned_.size(); i < layout->members.size(); ++i) {
      if (auto planned = plan(writer, layout->members[i], layout->data_starts[i]); !planned) {
        return fail(std::move(planned).error());
      }
    }
    queue_.close();
    std::unique_lock lock(workers_done_mutex_);
    workers_done_changed_.wait(lock, [&] { return workers_done_; });
    lock.unlock();
    if (stop_) return Error::internal(std::string(kStopped));  // the workers' error is reported
    if (auto record = read_record(*layout); !record) return std::move(record).error();
    for (const auto& [job, bits] : mode_fixes_) {
      if (auto set = writer.set_file_mode(job->path, bits); !set) {
        return from_writer(job->member.path, set.error());
      }
    }
    auto finished = finish(writer);
    if (!finished) return std::move(finished).error();
    return std::optional<ExtractResult>(std::move(*finished));
  }

  // An error met while the workers may still run: they stop, and this is
  // the error reported.
  Error fail(Error error) {
    stop_ = true;
    queue_.close();
    return error;
  }

  Result<std::optional<ExtractResult>> surprise() {
    stop_ = true;
    queue_.close();
    return std::optional<ExtractResult>();
  }

  struct Scanned {
    std::uint64_t offset = 0;
    std::string path;                  // as stored
    std::optional<Components> placed;  // where it landed, if anywhere
    Job* job = nullptr;                // a file's
  };

  // Reads local headers as they arrive, each entry's job queued at once; stops
  // at the central directory or at an entry whose sizes follow its data.
  Result<void> scan(TreeWriter& writer) {
    using namespace zip;
    std::uint64_t offset = 0;
    std::string fixed(kLocalHeaderSize, '\0');
    while (!stop_) {
      if (!arriving_->wait_for(offset + kLocalHeaderSize)) return {};
      if (auto read = read_exact(as_writable(fixed), offset, "(a local header)"); !read)
        return read;
      if (le(fixed, 0, 4) != kLocalSignature) return {};
      std::string rest(local_header_rest(fixed), '\0');
      if (!arriving_->wait_for(offset + kLocalHeaderSize + rest.size())) return {};
      if (auto read = read_exact(as_writable(rest), offset + kLocalHeaderSize, "(a local header)");
          !read) {
        return read;
      }
      auto local = parse_local_header(fixed, rest, name_);
      if (!local) return {};
      if (local->sizes_follow() || (local->flags & 0x01U) != 0 ||
          (local->method != kStored && local->method != kDeflated)) {
        return {};
      }
      const ZipMember member{.path = local->path,
                             .offset = offset,
                             .compressed_size = local->compressed_size,
                             .size = local->size,
                             .method = local->method,
                             .flags = local->flags,
                             .crc32 = local->crc32};
      const auto data_start = offset + local->header_size;
      scanned_.push_back({.offset = offset, .path = member.path});
      auto planned = plan(writer, member, data_start, &scanned_.back());
      if (!planned) return std::move(planned).error();
      offset = data_start + local->compressed_size;
    }
    return {};
  }

  static std::span<std::byte> as_writable(std::string& bytes) {
    return std::as_writable_bytes(std::span(bytes));
  }

  // A wheel's RECORD: its rows, checked against every file written.
  Result<void> read_record(const ZipLayout& layout) {
    std::optional<std::size_t> found;
    for (std::size_t i = 0; i < layout.members.size(); ++i) {
      if (!is_wheel_record(layout.members[i].path)) continue;
      // Two dist-info folders: not a wheel RECORD can describe alone.
      if (found) return {};
      found = i;
    }
    if (!found) return {};
    const auto& member = layout.members[*found];
    if (member.size > kMaxRecordBytes) {
      return refused(member.path, fmt::format("a RECORD of {} bytes is more than the {} MiB "
                                              "envkit reads",
                                              member.size, kMaxRecordBytes >> 20));
    }
    if (auto usable = check_usable(member); !usable) return usable;
    std::string text;
    Decoding decoding;
    auto decoded = decode(member, layout.data_starts[*found], decoding,
                          [&](std::span<const std::byte> bytes) -> Result<void> {
                            text.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
                            return {};
                          });
    if (!decoded) return decoded;
    auto rows = parse_wheel_record(text, name_);
    if (!rows) return std::move(rows).error();
    record_ = std::move(*rows);
    hash_ = true;
    return {};
  }

  Result<void> check_usable(const ZipMember& member) const {
    if ((member.flags & 0x01U) != 0) return refused(member.path, "encrypted entries are not read");
    if (member.method != kStored && member.method != kDeflated) {
      return refused(member.path,
                     fmt::format("compression method {} is not read (only stored and deflate)",
                                 member.method));
    }
    return {};
  }

  // Places one entry, records it in the result (archive order, each path
  // once, folders made on the way listed), makes a folder, queues a file.
  // `scanned`: the entry is a local header read as the file arrived.
  Result<void> plan(TreeWriter& writer, const ZipMember& member, std::uint64_t data_start,
                    Scanned* scanned = nullptr) {
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
    if (scanned != nullptr) scanned->placed = path;
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
    files_.push_back(std::move(job));
    if (scanned != nullptr) scanned->job = &files_.back();
    // A whole file's jobs are queued at once, largest first (unpack).
    if (arriving_ != nullptr) queue_.push(&files_.back());
    return {};
  }

  // A folder's mode is set at the end; a later entry for the same folder decides it.
  void note_directory_mode(const Components& path, mode_t stored) {
    const auto joined = join_path(path);
    const auto mode = directory_mode(stored);
    if (mode != 0755 || moded_directories_.contains(joined)) {
      moded_directories_.insert(joined);
      directory_modes_.emplace_back(path, mode);
    }
  }

  Result<void> record_parents(const Components& path, std::string_view stored) {
    std::size_t known = path.size() - 1;
    while (known > 0 && !recorded_.contains(join_path(std::span(path).first(known))))
      --known;
    for (std::size_t i = known + 1; i < path.size(); ++i) {
      if (++entries_seen_ > options_.max_entries) return over_entry_limit(stored);
      record({.path = join_path(std::span(path).first(i)), .type = EntryType::directory});
    }
    return {};
  }

  void record(ExtractedEntry entry) {
    recorded_[entry.path] = result_.entries.size();
    result_.entries.push_back(std::move(entry));
  }

  struct Failure {
    std::optional<Error> error;
    std::size_t record = 0;
  };

  Result<void> run_workers(std::size_t threads) {
    std::vector<Failure> failures(threads);
    {
      std::vector<std::jthread> others;
      for (std::size_t t = 1; t < threads; ++t)
        others.emplace_back([this, &failures, t] { work(failures[t]); });
      work(failures[0]);
    }
    {
      const std::scoped_lock lock(workers_done_mutex_);
      workers_done_ = true;
    }
    workers_done_changed_.notify_all();
    // The first failure in archive order is the one reported, whatever thread
    // met it first: the same archive always gives the same message.
    Failure* first = nullptr;
    for (auto& failure : failures) {
      if (failure.error && (first == nullptr || failure.record < first->record)) first = &failure;
    }
    if (first != nullptr) return std::move(*first->error);
    return {};
  }

  void work(Failure& failure) {
    try {
      auto writer = TreeWriter::open(destination_);
      if (!writer) {
        failure.error = cannot_start(name_, writer.error());
        stop_ = true;
        queue_.close();
        return;
      }
      Decoding decoding;
      for (auto* job = queue_.pop(); job != nullptr && !stop_; job = queue_.pop()) {
        auto written = write_file(*writer, *job, decoding);
        if (written) continue;
        // Stopped by another thread's failure: that one is reported.
        if (written.error().message() == kStopped) return;
        failure = {.error = std::move(written).error(), .record = job->record};
        stop_ = true;
        queue_.close();
        return;
      }
    } catch (const std::exception& e) {
      failure.error = Error::internal(fmt::format("unpacking `{}`: {}", name_, e.what()));
      stop_ = true;
      queue_.close();
    }
  }

  Result<void> write_file(TreeWriter& writer, Job& job, Decoding& decoding) {
    const auto& member = job.member;
    // Refuse before writing anything when the header already says too much.
    if (member.size > budget_.remaining()) return over_byte_limit(member.path);
    auto file = writer.create_file(job.path);
    if (!file) return from_writer(member.path, file.error());
    std::optional<core::Sha256> hash;
    if (hash_) hash.emplace();
    const auto shown = join_path(job.path);
    auto decoded = decode(member, job.data_start, decoding,
                          [&](std::span<const std::byte> bytes) -> Result<void> {
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
      return from_writer(member.path,
                         Error::failed(fmt::format("cannot set the mode of `{}`", shown))
                             .because(std::strerror(errno)));
    }
    if (hash) job.sha256 = hash->hex_digest();
    return {};
  }

  // After every file is written: their hashes into the result, each checked
  // against the RECORD; links; folders' modes.
  Result<ExtractResult> finish(TreeWriter& writer) {
    for (auto& job : files_) {
      auto& entry = result_.entries[job.record];
      const auto listed = record_.find(record_key(job.member.path));
      if (listed != record_.end()) {
        const auto& [want_sha, want_size] = listed->second;
        if (want_size && *want_size != job.member.size) {
          return refused_by_record(job.member.path,
                                   fmt::format("it holds {} bytes, the wheel's RECORD says {}",
                                               job.member.size, *want_size));
        }
        if (want_sha && *want_sha != job.sha256) {
          return refused_by_record(
              job.member.path,
              fmt::format("its sha256 is {}, the wheel's RECORD says {}", job.sha256, *want_sha));
        }
      }
      entry.sha256 = std::move(job.sha256);
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

  Result<void> make_link(TreeWriter& writer, const Job& job, Decoding& decoding) {
    const auto& member = job.member;
    if (member.size >= kMaxPath) return refused(member.path, "the symlink's target is too long");
    std::string target;
    auto decoded = decode(
        member, job.data_start, decoding, [&](std::span<const std::byte> bytes) -> Result<void> {
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

  // Reads the entry's data from `at` and gives what it decodes to `sink`,
  // piece by piece; checks its size and CRC-32 against `member`'s.
  Result<void> decode(const ZipMember& member, std::uint64_t at, Decoding& decoding,
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
      const auto chunk =
          std::span(decoding.in)
              .first(static_cast<std::size_t>(std::min<std::uint64_t>(left, decoding.in.size())));
      if (auto read = read_exact(chunk, at, member.path); !read) return read;
      at += chunk.size();
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

  // Exactly buffer.size() bytes at `offset`, waiting for them to arrive.
  Result<void> read_exact(std::span<std::byte> buffer, std::uint64_t offset,
                          std::string_view entry) const {
    if (arriving_ != nullptr && !arriving_->wait_for(offset + buffer.size())) {
      return damaged(entry, "the download ended inside its data");
    }
    std::size_t done = 0;
    while (done < buffer.size()) {
      const auto n = ::pread(fd_, buffer.data() + done, buffer.size() - done,
                             static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        return Error::failed(fmt::format("cannot read `{}`", name_)).because(std::strerror(errno));
      }
      if (n == 0) return damaged(entry, "the archive ends inside its data");
      done += static_cast<std::size_t>(n);
    }
    return {};
  }

  Error refused(std::string_view entry, std::string_view reason) const {
    return Error::failed(fmt::format("refused to unpack `{}`", name_))
        .because(fmt::format("entry `{}`: {}", entry, reason));
  }

  Error refused_by_record(std::string_view entry, std::string_view reason) const {
    return refused(entry, reason)
        .hint("the wheel was changed after it was built; do not install it");
  }

  Error damaged(std::string_view entry, std::string_view reason) const {
    return Error::failed(fmt::format("cannot unpack `{}`", name_))
        .because(fmt::format("entry `{}`: {}", entry, reason))
        .hint("the archive is truncated, damaged, or not a zip archive");
  }

  Error over_entry_limit(std::string_view entry) const {
    return refused(entry, fmt::format("the archive has more than {} entries, the limit",
                                      options_.max_entries));
  }

  Error over_byte_limit(std::string_view entry) const {
    return refused(entry, fmt::format("the archive unpacks to more than {} bytes, the limit",
                                      budget_.limit()));
  }

  // TreeWriter's errors: a refusal has no cause, an OS failure has one.
  Error from_writer(std::string_view entry, const Error& error) const {
    if (error.causes().empty()) return refused(entry, error.message());
    Error failed = Error::failed(fmt::format("cannot unpack `{}`", name_));
    failed.because(fmt::format("entry `{}`: {}", entry, error.message()));
    for (const auto& cause : error.causes())
      failed.because(cause);
    return failed;
  }

  int fd_;
  std::string name_;
  fs::path destination_;
  const ExtractOptions& options_;
  ArrivingFile* arriving_;
  ByteBudget budget_;
  bool hash_ = false;
  ExtractResult result_;
  std::unordered_map<std::string, std::size_t> recorded_;  // path -> index in entries
  std::unordered_set<std::string> names_;                  // stored names seen
  std::unordered_map<std::string, RecordedFile> record_;   // the wheel's RECORD, by path
  std::deque<Job> files_;  // a deque: queued jobs keep their address as more come
  std::vector<Job> links_;
  std::vector<Scanned> scanned_;  // local headers read as the file arrived
  std::vector<std::pair<Job*, mode_t>> mode_fixes_;
  std::vector<std::pair<Components, mode_t>> directory_modes_;
  std::unordered_set<std::string> moded_directories_;
  std::uint64_t entries_seen_ = 0;
  JobQueue queue_;
  std::atomic<std::uint64_t> written_{0};
  std::atomic<bool> stop_{false};
  std::mutex workers_done_mutex_;
  std::condition_variable workers_done_changed_;
  bool workers_done_ = false;
};

}  // namespace

Result<ExtractResult> unpack_zip(int fd, const ZipLayout& layout, std::string_view name,
                                 const fs::path& destination, const ExtractOptions& options) {
  ZipUnpacker unpacker(fd, name, destination, options, nullptr);
  return unpacker.unpack(layout);
}

}  // namespace envkit::archive::detail

namespace envkit::archive {

Result<ExtractResult> extract_zip_arriving(const std::filesystem::path& archive, ArrivingFile& file,
                                           const std::filesystem::path& destination,
                                           const ExtractOptions& options) {
  const auto name = archive.string();
  // The writer has made the file once it says it grew.
  if (!file.wait_for(0)) {
    return Error::failed(fmt::format("cannot unpack `{}`", name))
        .because("the download ended before the archive did");
  }
  sys::UniqueFd fd(::open(archive.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return Error::failed(fmt::format("cannot open `{}`", name)).because(std::strerror(errno));
  }
  std::optional<ExtractResult> unpacked;
  {
    detail::ZipUnpacker unpacker(fd.get(), name, destination, options, &file);
    auto result = unpacker.unpack_arriving();
    if (!result) return std::move(result).error();
    unpacked = std::move(*result);
  }
  if (unpacked) return std::move(*unpacked);
  // Surprised: everything again from the whole file, into an empty folder.
  if (!file.wait_finished()) {
    return Error::failed(fmt::format("cannot unpack `{}`", name))
        .because("the download ended before the archive did");
  }
  std::error_code error;
  std::filesystem::remove_all(destination, error);
  return extract_file(archive, destination, options);
}

}  // namespace envkit::archive
