#include "generation_builder.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>

#include "envkit/core/text.hpp"
#include "fs_error.hpp"

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

Result<void> GenerationBuilder::place_one(const std::string& package, const fs::path& source,
                                          const FileRecord& file) {
  auto claimed = claim(package, file);
  if (!claimed) return std::move(claimed).error();
  if (!*claimed) return {};
  const auto to = root_ / file.path;
  switch (file.type) {
    case archive::EntryType::directory: {
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
      if (auto parent = make_parent(to); !parent) return parent;
      if (auto placed = linker_.place(source, to); !placed) return placed;
      ++files_placed_;
      break;
  }
  return {};
}

Result<void> GenerationBuilder::place(const std::string& package, const fs::path& source,
                                      const std::vector<FileRecord>& files) {
  for (const auto& file : files) {
    if (auto placed = place_one(package, source / file.path, file); !placed) return placed;
  }
  return {};
}

Result<void> GenerationBuilder::place(const std::string& package,
                                      const std::vector<Mapped>& files) {
  for (const auto& [source, file] : files) {
    if (auto placed = place_one(package, source, file); !placed) return placed;
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
