#include "envkit/store/generation_builder.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <span>
#include <thread>

#include "envkit/core/text.hpp"
#include "envkit/store/fs_error.hpp"
#include "envkit/sys/parallel.hpp"
#include "envkit/sys/unique_fd.hpp"

namespace envkit::store {

namespace fs = std::filesystem;

namespace {

std::string fingerprint(const FileRecord& file) {
  switch (file.type) {
    case archive::EntryType::file:
      return "file:" + file.sha256;
    case archive::EntryType::symlink:
      return "link:" + file.link_target;
    case archive::EntryType::directory:
      return "directory";
  }
  return {};
}

// Where CUDA's nvcc.profile expects headers and libraries, per platform.
std::optional<std::string> cuda_target_dir(specs::Platform platform) {
  switch (platform) {
    case specs::Platform::linux_x86_64:
      return "targets/x86_64-linux";
    case specs::Platform::linux_aarch64:
      return "targets/sbsa-linux";
    case specs::Platform::windows_x86_64:
      return std::nullopt;
  }
  return std::nullopt;
}

// Threads for `count` independent file-system calls: one below a few dozen
// (starting a thread costs more than it saves), else up to 4.
int jobs_for(std::size_t count) {
  constexpr std::size_t kPerThread = 32;
  const auto cores = std::max(1U, std::thread::hardware_concurrency());
  return static_cast<int>(std::min<std::size_t>({count / kPerThread + 1, cores, 4}));
}

}  // namespace

GenerationBuilder::GenerationBuilder(fs::path root, std::optional<LinkMode> link_mode)
    : root_(std::move(root)), linker_(link_mode) {
  made_dirs_.insert(root_);
}

Result<bool> GenerationBuilder::claim(const std::string& package, const FileRecord& file) {
  const auto print = fingerprint(file);
  const auto [it, inserted] = owners_.try_emplace(file.path, Owner{package, print});
  if (inserted) return true;
  if (it->second.fingerprint == print) return false;  // the same bytes twice: fine
  if (file.type == archive::EntryType::directory || it->second.fingerprint == "directory") {
    return Error::failed(
        fmt::format("`{}` and `{}` disagree about {}: a folder in one, a file "
                    "in the other",
                    it->second.package, package, text::quoted(file.path)));
  }
  return Error::failed(fmt::format("`{}` and `{}` both install {} with different content",
                                   it->second.package, package, text::quoted(file.path)))
      .hint("the lock combines packages that cannot share a prefix; report this with the lock");
}

Result<void> GenerationBuilder::make_parent(const fs::path& path) {
  const auto parent = path.parent_path();
  if (made_dirs_.contains(parent)) return {};
  std::error_code error;
  fs::create_directories(parent, error);
  if (error) return cannot("create", parent, error);
  for (auto dir = parent; dir != root_ && made_dirs_.insert(dir).second; dir = dir.parent_path()) {
  }
  return {};
}

Result<void> GenerationBuilder::make_symlink(const std::string& target, const fs::path& path) {
  if (auto parent = make_parent(path); !parent) return parent;
  if (::symlink(target.c_str(), path.c_str()) != 0) {
    return cannot("create", path, std::error_code(errno, std::generic_category()));
  }
  return {};
}

Result<void> GenerationBuilder::place(const std::string& package, const fs::path& source,
                                      const std::vector<FileRecord>& files) {
  std::vector<Placing> placing;
  placing.reserve(files.size());
  for (const auto& file : files)
    placing.push_back({source / file.path, &file});
  return place_all(package, placing);
}

Result<void> GenerationBuilder::place(const std::string& package,
                                      const std::vector<Mapped>& files) {
  std::vector<Placing> placing;
  placing.reserve(files.size());
  for (const auto& mapped : files)
    placing.push_back({mapped.source, &mapped.file});
  return place_all(package, placing);
}

Result<void> GenerationBuilder::place_all(const std::string& package,
                                          const std::vector<Placing>& files) {
  // The files (most of the work: a link each) are linked after the folders, on a few
  // threads; the folders are made a depth at a time, on threads too, unless the package
  // has symlinks (a folder may be reached through one): then in order, as listed.
  const bool ordered = std::any_of(files.begin(), files.end(), [](const Placing& placing) {
    return placing.file->type == archive::EntryType::symlink;
  });
  std::vector<fs::path> dirs;  // to make before the files, when not ordered
  std::vector<const Placing*> to_link;
  for (const auto& placing : files) {
    const auto& file = *placing.file;
    auto claimed = claim(package, file);
    if (!claimed) return std::move(claimed).error();
    if (!*claimed) continue;
    const auto to = root_ / file.path;
    switch (file.type) {
      case archive::EntryType::directory: {
        if (!ordered) {
          note_dirs(to, dirs);
          break;
        }
        std::error_code error;
        fs::create_directories(to, error);
        if (error) return cannot("create", to, error);
        made_dirs_.insert(to);
        break;
      }
      case archive::EntryType::symlink:
        if (auto made = make_symlink(file.link_target, to); !made) return made;
        break;
      case archive::EntryType::file:
        if (!ordered) {
          note_dirs(to.parent_path(), dirs);
        } else if (auto parent = make_parent(to); !parent) {
          return parent;
        }
        to_link.push_back(&placing);
        break;
    }
  }
  if (auto made = make_dirs(dirs); !made) return made;
  return link_files(to_link);
}

// Notes `dir` and its ancestors below the root that are not made yet.
void GenerationBuilder::note_dirs(const fs::path& dir, std::vector<fs::path>& dirs) {
  for (auto at = dir; at != root_ && at.has_relative_path() && made_dirs_.insert(at).second;
       at = at.parent_path()) {
    dirs.push_back(at);
  }
}

// Makes `dirs` (a parent before its children: by depth), each depth's on a few threads.
Result<void> GenerationBuilder::make_dirs(std::vector<fs::path>& dirs) {
  const auto depth = [](const fs::path& path) { return std::distance(path.begin(), path.end()); };
  std::stable_sort(dirs.begin(), dirs.end(),
                   [&](const fs::path& a, const fs::path& b) { return depth(a) < depth(b); });
  for (std::size_t begin = 0; begin < dirs.size();) {
    std::size_t end = begin;
    while (end < dirs.size() && depth(dirs[end]) == depth(dirs[begin]))
      ++end;
    std::vector<int> errors(end - begin, 0);
    sys::for_each_parallel(end - begin, jobs_for(end - begin), [&](std::size_t i) {
      const auto& dir = dirs[begin + i];
      if (::mkdir(dir.c_str(), 0777) == 0) return;
      const int failure = errno;
      std::error_code ignored;
      // There already (through an earlier package's folder or symlink): fine if a folder.
      if (failure != EEXIST || !fs::is_directory(dir, ignored)) errors[i] = failure;
    });
    for (std::size_t i = 0; i < errors.size(); ++i) {
      if (errors[i] != 0) {
        return cannot("create", dirs[begin + i],
                      std::error_code(errors[i], std::generic_category()));
      }
    }
    begin = end;
  }
  return {};
}

// Links `files` from `source`: the first one alone (it settles reflink, hardlink or
// copy), the others on a few threads in that mode. A file that fails there is placed
// again alone, so that its error (or the next mode) is what it would have been.
Result<void> GenerationBuilder::link_files(const std::vector<const Placing*>& files) {
  if (files.empty()) return {};
  const auto place_alone = [&](const Placing& placing) -> Result<void> {
    if (auto placed = linker_.place(placing.source, root_ / placing.file->path); !placed)
      return placed;
    ++files_placed_;
    return {};
  };
  if (auto placed = place_alone(*files.front()); !placed) return placed;
  const auto rest = std::span(files).subspan(1);
  std::vector<char> failed(rest.size(), 0);
  const LinkMode mode = linker_.mode();
  // By folder: links into one folder take its lock in turn, so each thread takes
  // whole folders. Hard links are made relative to the two folders, opened once:
  // the kernel then walks one name per link, not two paths a dozen folders deep.
  using Folders = std::pair<fs::path, fs::path>;  // source's, destination's
  std::map<Folders, std::vector<std::size_t>> by_folder;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    by_folder[{rest[i]->source.parent_path(), fs::path(rest[i]->file->path).parent_path()}]
        .push_back(i);
  }
  std::vector<const std::pair<const Folders, std::vector<std::size_t>>*> folders;
  for (const auto& folder : by_folder)
    folders.push_back(&folder);
  sys::for_each_parallel(folders.size(), jobs_for(rest.size()), [&](std::size_t f) {
    const auto& [parents, indexes] = *folders[f];
    sys::UniqueFd from, to;
    if (mode == LinkMode::hardlink) {
      from = sys::UniqueFd(::open(parents.first.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      to =
          sys::UniqueFd(::open((root_ / parents.second).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    }
    for (const auto i : indexes) {
      const auto& placing = *rest[i];
      const auto destination = root_ / placing.file->path;
      if (from.valid() && to.valid()) {
        const auto source_name = placing.source.filename();
        const auto name = destination.filename();
        failed[i] =
            ::linkat(from.get(), source_name.c_str(), to.get(), name.c_str(), 0) == 0 ? 0 : 1;
      } else {
        Linker fixed(mode);
        failed[i] = fixed.place(placing.source, destination) ? 0 : 1;
      }
    }
  });
  files_placed_ += static_cast<std::size_t>(std::count(failed.begin(), failed.end(), 0));
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (!failed[i]) continue;
    if (auto placed = place_alone(*rest[i]); !placed) return placed;
  }
  return {};
}

Result<void> GenerationBuilder::write(const std::string& package, const FileRecord& file,
                                      std::string_view content) {
  auto claimed = claim(package, file);
  if (!claimed) return std::move(claimed).error();
  if (!*claimed) return {};
  const auto to = root_ / file.path;
  if (auto parent = make_parent(to); !parent) return parent;
  {
    std::ofstream out(to, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    if (!out)
      return cannot("write", to,
                    std::error_code(errno != 0 ? errno : EIO, std::generic_category()));
  }
  std::error_code error;
  if (file.executable) {
    fs::permissions(to, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add, error);
    if (error) return cannot("write", to, error);
  }
  return {};
}

Result<void> GenerationBuilder::carry_untracked(const fs::path& old_root,
                                                const PrefixState& old_state) {
  std::set<std::string> tracked;
  for (const auto& package : old_state.packages) {
    for (const auto& file : package.files)
      tracked.insert(file.path);
  }
  for (const auto& link : old_state.links)
    tracked.insert(link.path);
  std::error_code error;
  fs::recursive_directory_iterator it(old_root, error);
  for (const fs::recursive_directory_iterator end; !error && it != end; it.increment(error)) {
    const auto relative = it->path().lexically_relative(old_root).generic_string();
    if (relative == ".envkit") {
      it.disable_recursion_pending();
      continue;
    }
    if (tracked.contains(relative) || owners_.contains(relative)) continue;
    const auto status = it->symlink_status();
    const auto to = root_ / relative;
    std::error_code absent;
    // Made in the new generation already (pip compiled the same module).
    if (fs::exists(fs::symlink_status(to, absent)) && !fs::is_directory(status)) continue;
    if (fs::is_symlink(status)) {
      if (auto made = make_symlink(fs::read_symlink(it->path()).string(), to); !made) return made;
    } else if (fs::is_regular_file(status)) {
      if (auto parent = make_parent(to); !parent) return parent;
      // The old generation goes away after the switch; a hard link keeps the file.
      if (::link(it->path().c_str(), to.c_str()) != 0) {
        fs::copy_file(it->path(), to, error);
        if (error) return cannot("create", to, error);
      }
    } else if (fs::is_directory(status)) {
      fs::create_directories(to, error);
      if (error) return cannot("create", to, error);
    }
  }
  if (error) {
    return Error::failed(fmt::format("cannot read {}", text::quoted(old_root.string())))
        .because(error.message());
  }
  return {};
}

Result<std::vector<FileRecord>> GenerationBuilder::finish(specs::Platform platform) {
  std::vector<FileRecord> links;
  const auto add_link = [&](const std::string& path, const std::string& target) -> Result<void> {
    std::error_code ignored;
    if (owners_.contains(path) || fs::exists(fs::symlink_status(root_ / path, ignored))) return {};
    if (auto made = make_symlink(target, root_ / path); !made) return made;
    links.push_back({.path = path, .type = archive::EntryType::symlink, .link_target = target});
    return {};
  };
  std::error_code ignored;
  const bool has_lib = fs::is_directory(root_ / "lib", ignored);
  const bool has_include = fs::is_directory(root_ / "include", ignored);
  if (has_lib) {
    if (auto made = add_link("lib64", "lib"); !made) return std::move(made).error();
  }
  // Only a CUDA toolkit needs the targets/ links (its nvcc.profile reads them).
  const bool cuda = fs::exists(root_ / "include" / "cuda_runtime_api.h", ignored) ||
                    fs::exists(root_ / "bin" / "nvcc", ignored);
  if (const auto target_dir = cuda_target_dir(platform); cuda && target_dir) {
    if (has_include) {
      if (auto made = add_link(*target_dir + "/include", "../../include"); !made)
        return std::move(made).error();
    }
    if (has_lib) {
      if (auto made = add_link(*target_dir + "/lib", "../../lib"); !made)
        return std::move(made).error();
    }
  }
  return links;
}

std::string GenerationBuilder::link_mode() const {
  return files_placed_ == 0 ? "" : std::string(to_string(linker_.mode()));
}

}  // namespace envkit::store
