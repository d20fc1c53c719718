#pragma once

// Internal to archive: envkit's own zip reader, for wheels on disk
// (unpack_zip) and as they download (zip_stream.cpp). The central directory
// says what is there; each entry's data is inflated by ISA-L (raw_inflate.hpp),
// its CRC-32 and size checked, hashed (sha256) as it is written or, a large
// file of a wheel, given its RECORD row's hash (ExtractOptions::trust_record;
// wheel_record.hpp). Files are spread over
// threads. Every rule of the libarchive Extractor holds: the same placement
// (place_entry: no absolute path, no `..`, strip and map), the same modes,
// the same byte and entry limits, the same TreeWriter; and more is refused:
// a name stored twice, an encrypted entry, a method other than stored and
// deflate.

#include <sys/types.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "envkit/archive/extract.hpp"
#include "envkit/archive/wheel_record.hpp"
#include "extractor.hpp"
#include "zip_layout.hpp"

namespace envkit::archive::detail {

// Unpacks the zip open as `fd`, whose layout check_zip_layout has read, under
// `destination` (which exists). `name` names the zip in errors.
[[nodiscard]] Result<ExtractResult> unpack_zip(int fd, const ZipLayout& layout,
                                               std::string_view name,
                                               const std::filesystem::path& destination,
                                               const ExtractOptions& options);

// An error that only says a thread stopped because another failed (or the
// stream stopped): the first failure is the one reported.
inline constexpr std::string_view kStopped = "stopped: another thread failed";

class PiecePool;

// Hands a piece's buffer back to its pool, however the piece goes away (used,
// dropped by an error, left in a stopped channel).
struct PieceReturn {
  PiecePool* pool = nullptr;
  void operator()(std::byte* bytes) const;
};

// A larger RECORD (torch's is 3 MB) is refused, not read.
inline constexpr std::uint64_t kMaxRecordBytes = std::uint64_t{64} << 20;

// Bytes of a stream read ahead of the threads inflating them.
struct Piece {
  std::unique_ptr<std::byte[], PieceReturn> bytes;
  std::size_t size = 0;
};

// Buffers for bytes read and not yet inflated: at most `count` of
// `piece_size` bytes, whatever the downloads' sizes and however many run at
// once; a thread reading waits for the inflating ones to let one go. Kept
// and reused: malloc's arenas would keep freed ones from other threads.
class PiecePool {
 public:
  PiecePool(std::size_t piece_size, std::size_t count) : piece_size_(piece_size), most_(count) {}
  // A buffer of piece_size() bytes (Piece::size 0) once one is free; nullopt
  // once `cancelled` (wake() tells the waiting threads to look).
  [[nodiscard]] std::optional<Piece> take(const std::atomic<bool>& cancelled);
  void wake();
  [[nodiscard]] std::size_t piece_size() const { return piece_size_; }

 private:
  friend struct PieceReturn;
  void put_back(std::byte* bytes);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t piece_size_;
  std::size_t most_;
  std::size_t made_ = 0;
  std::vector<std::unique_ptr<std::byte[]>> free_;
};

// One entry's data, piece by piece, from the thread reading the stream to
// the thread inflating the entry.
class PieceChannel {
 public:
  void push(Piece piece);
  // Nothing more comes: the entry's data is all there, or reading stopped.
  void close();
  // The next piece, once there; the one given before goes back to the pool.
  // nullopt when closed and empty.
  [[nodiscard]] std::optional<std::span<const std::byte>> next();
  // The entry is done with: every piece it holds goes back to the pool.
  void release();
  ~PieceChannel() { release(); }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Piece> pieces_;
  Piece held_;
  bool closed_ = false;
};

// A file or symlink whose data is decoded: the entry, where its record is in
// the result, and what the thread that wrote it found.
struct Job {
  ZipMember member;
  std::uint64_t data_start = 0;
  std::size_t record = 0;
  Components path;
  mode_t mode = 0;
  std::string sha256;
  bool hashed = false;                   // sha256 computed as it was written
  std::unique_ptr<PieceChannel> pieces;  // a stream's; none for a file on disk
};

// Jobs handed to the threads as they are found (all at once for a whole file,
// one by one as a stream is read).
class JobQueue {
 public:
  void push(Job* job);
  void close();
  // The next job; nullptr once closed and empty.
  [[nodiscard]] Job* pop();

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job*> jobs_;
  bool closed_ = false;
};

// What one thread decodes with: memory per thread is these two buffers and
// ISA-L's state, whatever the entry's size.
struct Decoding;

// Where an entry's compressed bytes come from, a piece at a time.
class EntryInput {
 public:
  virtual ~EntryInput() = default;
  // The next piece (in `scratch`, or the input's own memory); an error when
  // there is none.
  [[nodiscard]] virtual Result<std::span<const std::byte>> next(std::span<std::byte> scratch,
                                                                std::uint64_t left) = 0;
};

class ZipUnpacker {
 public:
  // `fd`: the zip on disk, or -1 for a stream.
  ZipUnpacker(int fd, std::string_view name, std::filesystem::path destination,
              const ExtractOptions& options);
  ~ZipUnpacker();
  ZipUnpacker(const ZipUnpacker&) = delete;
  ZipUnpacker& operator=(const ZipUnpacker&) = delete;

  // A whole file, as check_zip_layout read it.
  [[nodiscard]] Result<ExtractResult> unpack(const ZipLayout& layout);

  // A stream: start_stream, then each local header as it is read
  // (stream_entry), then the central directory (finish_stream).
  [[nodiscard]] Result<void> start_stream(PiecePool& pool);
  // Plans the entry: the channel to hand its data to, or nullptr where
  // nothing is written from it (a folder, an entry left out).
  [[nodiscard]] Result<PieceChannel*> stream_entry(const ZipMember& member);
  // The stream failed or surprised: the threads stop. Their own error, if
  // they met one, explains a kStopped from the stream's reader.
  [[nodiscard]] Result<void> abandon_stream();
  // Waits for the threads, then takes modes from `members` (the central
  // directory, one record per streamed entry, in order) and checks the
  // wheel's RECORD (`record_data`: the compressed data of each member that
  // is a RECORD, by index; empty for others). nullopt where the directory
  // surprises (a symlink, a folder the local header named a file): the
  // caller unpacks the whole file instead.
  [[nodiscard]] Result<std::optional<ExtractResult>> finish_stream(
      const std::vector<ZipMember>& members, const std::vector<std::string>& record_data);

  [[nodiscard]] const ExtractOptions& options() const { return options_; }
  // Set once a thread failed or the stream stopped.
  [[nodiscard]] const std::atomic<bool>& stopped() const { return stop_; }

 private:
  struct Failure {
    std::optional<Error> error;
    std::size_t record = 0;
  };

  Result<void> read_record(const std::vector<ZipMember>& members,
                           const std::function<std::unique_ptr<EntryInput>(std::size_t)>& input);
  Result<void> check_usable(const ZipMember& member) const;
  Result<void> plan(TreeWriter& writer, const ZipMember& member, std::uint64_t data_start,
                    Job** queued = nullptr, std::optional<Components>* placed = nullptr);
  void note_directory_mode(const Components& path, mode_t stored);
  Result<void> record_parents(const Components& path, std::string_view stored);
  void record(ExtractedEntry entry);
  Result<void> run_workers(std::size_t threads);
  void work(Failure& failure);
  Result<void> write_file(TreeWriter& writer, Job& job, Decoding& decoding);
  Result<ExtractResult> finish(TreeWriter& writer);
  Result<void> settle_hash(Job& job);
  Result<void> make_link(TreeWriter& writer, const Job& job, Decoding& decoding);
  std::unique_ptr<EntryInput> input_of(const Job& job) const;
  using Sink = std::function<Result<void>(std::span<const std::byte>)>;
  Result<void> decode(const ZipMember& member, EntryInput& input, Decoding& decoding,
                      const Sink& sink) const;
  void halt();
  void stop_stream();

  Error refused(std::string_view entry, std::string_view reason) const;
  Error damaged(std::string_view entry, std::string_view reason) const;
  Error over_entry_limit(std::string_view entry) const;
  Error over_byte_limit(std::string_view entry) const;
  Error from_writer(std::string_view entry, const Error& error) const;

  // A streamed local header: where its entry landed, if anywhere.
  struct Streamed {
    std::optional<Components> placed;
    Job* job = nullptr;  // a file's
  };

  int fd_;
  std::string name_;
  std::filesystem::path destination_;
  const ExtractOptions& options_;
  ByteBudget budget_;
  bool hash_ = false;
  ExtractResult result_;
  std::unordered_map<std::string, std::size_t> recorded_;  // path -> index in entries
  std::unordered_set<std::string> names_;                  // stored names seen
  std::unordered_map<std::string, RecordedFile> record_;   // the wheel's RECORD, by path
  std::string record_folder_;                              // "<name>.dist-info/", where RECORD is
  std::deque<Job> files_;  // a deque: queued jobs keep their address as more come
  std::vector<Job> links_;
  std::vector<std::pair<Components, mode_t>> directory_modes_;
  std::unordered_set<std::string> moded_directories_;
  std::uint64_t entries_seen_ = 0;
  JobQueue queue_;
  std::atomic<std::uint64_t> written_{0};
  std::atomic<bool> stop_{false};
  // One is held while a thread creates a file in a folder, chosen by the
  // folder. The kernel creates one file in a folder at a time, and a thread
  // waiting for that folder's lock spins on a core while the holder allocates
  // the inode, which after a mass deletion on ext4 is a scan of recently freed
  // inodes: 14 % of a torch closure's CPU, taken from inflating. Waiting here
  // sleeps instead; files in other folders are created side by side.
  std::array<std::mutex, 16> creating_;
  // A stream's: the writer, the pieces' pool, each header read, the threads.
  std::optional<TreeWriter> stream_writer_;
  PiecePool* pieces_ = nullptr;
  std::vector<Streamed> streamed_;
  std::optional<Result<void>> workers_result_;
  std::jthread workers_;
};

}  // namespace envkit::archive::detail
