#include "entry_files.hpp"

#include <sys/stat.h>

#include <map>
#include <string>

namespace envkit::store {

namespace fs = std::filesystem;

void make_read_only(const fs::path& root, const std::vector<FileRecord>& files) {
  for (const auto& file : files) {
    if (file.type != archive::EntryType::file) continue;
    const auto path = root / file.path;
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) continue;
    ::chmod(path.c_str(), info.st_mode & 0555);
  }
}

std::vector<FileRecord> records_of(const std::vector<archive::ExtractedEntry>& entries) {
  std::map<std::string, FileRecord> by_path;
  for (const auto& entry : entries) {
    by_path[entry.path] = FileRecord{.path = entry.path,
                                     .type = entry.type,
                                     .size = entry.size,
                                     .executable = entry.executable,
                                     .sha256 = entry.sha256,
                                     .link_target = entry.link_target};
  }
  std::vector<FileRecord> files;
  files.reserve(by_path.size());
  for (auto& [path, record] : by_path)
    files.push_back(std::move(record));
  return files;
}

}  // namespace envkit::store
