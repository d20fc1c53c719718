#include "zip_parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <thread>
#include <unordered_set>

#include "extractor.hpp"

namespace envkit::archive::detail {

namespace {

namespace fs = std::filesystem;

// Below this many unpacked bytes one thread is done before others would start.
constexpr std::uint64_t kParallelFloor = std::uint64_t{16} << 20;

struct SurveyedFile {
  std::uint64_t index = 0;
  std::uint64_t size = 0;
};

struct Survey {
  std::vector<SurveyedFile> files;
  std::vector<std::uint64_t> directories;
  std::uint64_t entries = 0;
};

// Reads every header (the zip's central directory; no data is inflated).
// nullopt: leave the archive to the one-thread path.
std::optional<Survey> survey_zip(const fs::path& archive, const ExtractOptions& options) {
  const Utf8Names utf8;
  auto reader = new_reader(ReaderFor::zip_file);
  if (archive_read_open_filename(reader.get(), archive.c_str(), kBufferSize) != ARCHIVE_OK) {
    return std::nullopt;
  }
  Survey survey;
  std::unordered_set<std::string> placed;
  for (std::uint64_t index = 0;; ++index) {
    struct archive_entry* entry = nullptr;
    const int status = archive_read_next_header(reader.get(), &entry);
    if (status == ARCHIVE_EOF) break;
    if (status < ARCHIVE_WARN) return std::nullopt;
    if ((archive_format(reader.get()) & ARCHIVE_FORMAT_BASE_MASK) != ARCHIVE_FORMAT_ZIP) {
      return std::nullopt;
    }
    if (++survey.entries > options.max_entries) return std::nullopt;
    const auto type = static_cast<mode_t>(archive_entry_filetype(entry));
    if (archive_entry_hardlink(entry) != nullptr || (type != AE_IFREG && type != AE_IFDIR)) {
      return std::nullopt;
    }
    auto where = place_entry(entry_name(entry), type == AE_IFDIR, options);
    if (!where) return std::nullopt;
    if (!*where) continue;  // left out: no thread needs it
    if (type == AE_IFDIR) {
      survey.directories.push_back(index);
      continue;
    }
    if (!placed.insert(join_path(**where)).second) return std::nullopt;
    const auto size = std::max<la_int64_t>(archive_entry_size(entry), 0);
    survey.files.push_back({index, static_cast<std::uint64_t>(size)});
  }
  return survey;
}

// Largest first, each to the thread with the least so far: the longest
// entry starts at once and the rest fill in around it.
ZipThreadPlan balance(const Survey& survey, std::size_t threads) {
  ZipThreadPlan plan(threads, std::vector<bool>(survey.entries, false));
  std::vector<SurveyedFile> files = survey.files;
  std::sort(files.begin(), files.end(),
            [](const SurveyedFile& a, const SurveyedFile& b) { return a.size > b.size; });
  std::vector<std::uint64_t> load(threads, 0);
  for (const auto& file : files) {
    const auto least = static_cast<std::size_t>(
        std::distance(load.begin(), std::min_element(load.begin(), load.end())));
    plan[least][file.index] = true;
    load[least] += file.size;
  }
  // Folders of their own are few and cheap: the first thread makes them.
  for (const auto index : survey.directories)
    plan[0][index] = true;
  return plan;
}

struct WorkerOutcome {
  std::optional<Result<ExtractResult>> result;
  std::vector<std::uint64_t> origins;
  std::vector<std::pair<Components, mode_t>> directory_modes;
};

void run_worker(const fs::path& archive, const fs::path& destination, const ExtractOptions& options,
                const std::vector<bool>& wanted, ByteBudget& budget, std::atomic<bool>& stop,
                WorkerOutcome& outcome) {
  try {
    const Utf8Names utf8;
    auto writer = TreeWriter::open(destination);
    if (!writer) {
      outcome.result = cannot_start(archive.string(), writer.error());
    } else {
      auto reader = new_reader(ReaderFor::zip_file);
      Extractor extractor(reader.get(), archive.string(), options, std::move(*writer), budget);
      extractor.only(&wanted);
      extractor.defer_directory_modes();
      extractor.stop_when(&stop);
      if (archive_read_open_filename(reader.get(), archive.c_str(), kBufferSize) != ARCHIVE_OK) {
        outcome.result = extractor.opening_failed();
      } else {
        outcome.result = extractor.run();
        outcome.origins = extractor.origins();
        outcome.directory_modes = extractor.directory_modes();
      }
    }
  } catch (const std::exception& e) {
    outcome.result = Error::internal(fmt::format("unpacking `{}`: {}", archive.string(), e.what()));
  }
  if (!*outcome.result) stop = true;
}

// One result from the threads' results, in archive order, each path once (a
// folder made by two threads on the way to their files is listed once).
ExtractResult merge(std::vector<WorkerOutcome>& outcomes) {
  struct Placed {
    std::uint64_t origin;
    std::size_t worker;
    std::size_t position;
  };
  std::vector<Placed> order;
  ExtractResult merged;
  for (std::size_t w = 0; w < outcomes.size(); ++w) {
    const auto& result = **outcomes[w].result;
    merged.bytes_written += result.bytes_written;
    for (std::size_t i = 0; i < result.entries.size(); ++i)
      order.push_back({outcomes[w].origins[i], w, i});
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const Placed& a, const Placed& b) { return a.origin < b.origin; });
  std::unordered_set<std::string> seen;
  merged.entries.reserve(order.size());
  for (const auto& placed : order) {
    auto& entry = (*outcomes[placed.worker].result)->entries[placed.position];
    if (seen.insert(entry.path).second) merged.entries.push_back(std::move(entry));
  }
  return merged;
}

}  // namespace

std::optional<ZipThreadPlan> plan_zip_threads(const fs::path& archive,
                                              const ExtractOptions& options) {
  const auto survey = survey_zip(archive, options);
  if (!survey || survey->files.size() < 2) return std::nullopt;
  const auto total =
      std::accumulate(survey->files.begin(), survey->files.end(), std::uint64_t{0},
                      [](std::uint64_t sum, const SurveyedFile& file) { return sum + file.size; });
  if (total < kParallelFloor) return std::nullopt;
  const auto threads = std::min<std::size_t>(options.threads, survey->files.size());
  return balance(*survey, threads);
}

Result<ExtractResult> extract_zip_parallel(const fs::path& archive, const fs::path& destination,
                                           const ExtractOptions& options,
                                           const ZipThreadPlan& plan) {
  ByteBudget budget(options.max_bytes);
  std::atomic<bool> stop{false};
  std::vector<WorkerOutcome> outcomes(plan.size());
  {
    std::vector<std::jthread> threads;
    for (std::size_t w = 1; w < plan.size(); ++w) {
      threads.emplace_back([&, w] {
        run_worker(archive, destination, options, plan[w], budget, stop, outcomes[w]);
      });
    }
    run_worker(archive, destination, options, plan[0], budget, stop, outcomes[0]);
  }
  for (auto& outcome : outcomes) {
    if (!*outcome.result) return std::move(*outcome.result).error();
  }
  // Folders last, once no thread writes into them: the first thread has them all.
  auto writer = TreeWriter::open(destination);
  if (!writer) return cannot_start(archive.string(), writer.error());
  if (auto set = apply_directory_modes(*writer, outcomes[0].directory_modes, archive.string());
      !set) {
    return std::move(set).error();
  }
  return merge(outcomes);
}

}  // namespace envkit::archive::detail
