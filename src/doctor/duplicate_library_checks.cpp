// One CUDA per environment: no CUDA, cuDNN or NCCL library in the prefix twice
// (lib/libcudart.so.12.4.127 from NVIDIA's archive and a wheel's
// site-packages/nvidia/cuda_runtime/lib/libcudart.so.12 pinned by torch).
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <optional>

#include "envkit/core/sha256.hpp"
#include "envkit/doctor/prefix_checks.hpp"
#include "envkit/smoke/framework.hpp"

namespace envkit::doctor {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kId = "cuda-duplicate-library";

// A CUDA library file: its stem (the library) and the version its name carries.
struct LibraryFile {
  std::string stem;     // libcudart
  std::string version;  // 12.4.127 for libcudart.so.12.4.127; "" for libcudart.so
  fs::path path;
  dev_t device = 0;
  ino_t inode = 0;
  std::uintmax_t size = 0;
};

// Adds `path` when it is a regular file (not a link to one) of a CUDA library.
void add_if_library(const fs::path& path, std::vector<LibraryFile>& files) {
  const auto name = smoke::cuda_library_name(path.filename().string());
  struct stat status {};
  if (!name || ::lstat(path.c_str(), &status) != 0 || !S_ISREG(status.st_mode)) return;
  files.push_back({.stem = name->first,
                   .version = name->second,
                   .path = path,
                   .device = status.st_dev,
                   .inode = status.st_ino,
                   .size = static_cast<std::uintmax_t>(status.st_size)});
}

void scan_folder(const fs::path& folder, std::vector<LibraryFile>& files) {
  std::error_code error;
  if (fs::is_symlink(folder, error)) return;  // lib64 -> lib: seen as lib
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error))
    add_if_library(it->path(), files);
}

// Every `lib` folder under site-packages/nvidia of each lib/python3.X.
void scan_nvidia_wheels(const fs::path& prefix, std::vector<LibraryFile>& files) {
  std::error_code error;
  for (fs::directory_iterator it(prefix / "lib", error), end; !error && it != end;
       it.increment(error)) {
    if (!it->path().filename().string().starts_with("python")) continue;
    const auto nvidia = it->path() / "site-packages" / "nvidia";
    std::error_code walk_error;
    for (fs::recursive_directory_iterator walk(nvidia, walk_error), stop;
         !walk_error && walk != stop; walk.increment(walk_error)) {
      if (walk->path().filename() == "lib" && walk->is_directory(walk_error))
        scan_folder(walk->path(), files);
    }
  }
}

// The CUDA libraries of the prefix's lib/, lib64/ and its NVIDIA wheels.
std::vector<LibraryFile> cuda_library_files(const fs::path& prefix) {
  std::vector<LibraryFile> files;
  scan_folder(prefix / "lib", files);
  scan_folder(prefix / "lib64", files);
  scan_nvidia_wheels(prefix, files);
  return files;
}

// Files of one library that are really different: one per inode, and of
// those one per content (size, then sha256).
std::vector<const LibraryFile*> distinct_files(const std::vector<const LibraryFile*>& copies) {
  std::vector<const LibraryFile*> distinct;
  std::map<const LibraryFile*, std::optional<std::string>> hashes;
  const auto hash_of = [&](const LibraryFile* file) -> const std::optional<std::string>& {
    auto [it, added] = hashes.try_emplace(file);
    if (added) it->second = core::sha256_file(file->path);
    return it->second;
  };
  for (const auto* file : copies) {
    const bool seen = std::any_of(distinct.begin(), distinct.end(), [&](const LibraryFile* kept) {
      if (kept->device == file->device && kept->inode == file->inode) return true;
      return kept->size == file->size && hash_of(kept) && hash_of(kept) == hash_of(file);
    });
    if (!seen) distinct.push_back(file);
  }
  return distinct;
}

std::string describe(const fs::path& prefix, const LibraryFile& file) {
  const auto shown = fmt::format("`{}`", file.path.lexically_relative(prefix).generic_string());
  return file.version.empty() ? shown : fmt::format("{} ({})", shown, file.version);
}

Finding duplicate(const fs::path& prefix, const std::string& stem,
                  const std::vector<const LibraryFile*>& files) {
  std::vector<std::string> shown;
  for (const auto* file : files)
    shown.push_back(describe(prefix, *file));
  const auto last = shown.back();
  shown.pop_back();
  return error(std::string(kId),
               fmt::format("{} is in the prefix as {} different files: {} and {}; a program that "
                           "loads both has two copies of one CUDA library",
                           stem, files.size(), fmt::join(shown, ", "), last),
               "run `envkit lock` and `envkit install`: the lock must take cuda's components from "
               "one source (NVIDIA's archives or the framework's wheels, not both)");
}

}  // namespace

Findings check_duplicate_libraries(const fs::path& prefix) {
  const auto files = cuda_library_files(prefix);
  std::map<std::string, std::vector<const LibraryFile*>> by_library;
  for (const auto& file : files)
    by_library[file.stem].push_back(&file);
  Findings findings;
  for (auto& [stem, copies] : by_library) {
    std::sort(copies.begin(), copies.end(),
              [](const LibraryFile* a, const LibraryFile* b) { return a->path < b->path; });
    if (const auto distinct = distinct_files(copies); distinct.size() > 1)
      findings.push_back(duplicate(prefix, stem, distinct));
  }
  if (findings.empty()) {
    findings.push_back(
        ok(std::string(kId), by_library.empty()
                                 ? std::string("the prefix holds no CUDA library")
                                 : fmt::format("each of the prefix's {} CUDA libraries is one file",
                                               by_library.size())));
  }
  return findings;
}

}  // namespace envkit::doctor
