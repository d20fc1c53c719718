#include "envkit/elf/dependency_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace envkit::elf {

namespace fs = std::filesystem;

namespace {

// libfoo.so, libfoo.so.1, libfoo.so.1.2.3 (but not libfoo.sock).
bool is_shared_object_name(const std::string& name) {
  for (auto at = name.find(".so"); at != std::string::npos; at = name.find(".so", at + 1)) {
    const std::size_t after = at + 3;
    if (after == name.size() || name[after] == '.') return true;
  }
  return false;
}

fs::path normal_absolute(const fs::path& path) {
  std::error_code ignored;
  return fs::absolute(path, ignored).lexically_normal();
}

// Lexically, so that a prefix whose files are symlinks into a store still owns them.
bool is_under(const fs::path& path, const fs::path& dir) {
  const fs::path relative = normal_absolute(path).lexically_relative(normal_absolute(dir));
  return !relative.empty() && *relative.begin() != "..";
}

Result<std::vector<fs::path>> shared_objects_in(const fs::path& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) return std::vector<fs::path>{};
  std::vector<fs::path> found;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    std::error_code ignored;
    if (is_shared_object_name(it->path().filename().string()) && it->is_regular_file(ignored)) {
      found.push_back(it->path());
    }
  }
  if (error) {
    return Error::failed(fmt::format("cannot list {}", dir.string())).because(error.message());
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

std::vector<const Dependency*> DependencyReport::unresolved() const {
  std::vector<const Dependency*> out;
  for (const Dependency& dependency : dependencies) {
    if (!dependency.resolution.found()) out.push_back(&dependency);
  }
  return out;
}

Result<DependencyReport> check_dependencies(const PrefixLibraries& prefix,
                                            const SearchContext& system) {
  SearchContext context = system;
  context.ld_library_path.insert(context.ld_library_path.begin(), prefix.library_dirs.begin(),
                                 prefix.library_dirs.end());
  Resolver resolver(std::move(context));
  const auto in_prefix = [&](const fs::path& path) {
    if (!prefix.root.empty()) return is_under(path, prefix.root);
    return std::any_of(prefix.library_dirs.begin(), prefix.library_dirs.end(),
                       [&](const fs::path& dir) { return is_under(path, dir); });
  };

  // Group the files by real path: libfoo.so -> libfoo.so.1 -> libfoo.so.1.2 is one library.
  std::vector<std::vector<fs::path>> groups;
  std::map<fs::path, std::size_t> group_of;
  for (const fs::path& dir : prefix.library_dirs) {
    auto files = shared_objects_in(dir);
    if (!files) return std::move(files).error();
    for (const fs::path& file : *files) {
      std::error_code error;
      const fs::path real = fs::canonical(file, error);
      if (error) continue;
      const auto [at, added] = group_of.try_emplace(real, groups.size());
      if (added) groups.emplace_back();
      groups[at->second].push_back(file);
    }
  }

  DependencyReport report;
  for (const std::vector<fs::path>& names : groups) {
    if (!has_elf_magic(names.front())) continue;  // a linker script such as libc.so
    auto elf = read_elf(names.front());
    if (!elf) {
      report.unreadable.push_back({names.front(), std::move(elf).error()});
      continue;
    }
    // Name it by its soname where the folder has that name, as ld.so would find it.
    const auto by_soname = std::find_if(names.begin(), names.end(), [&](const fs::path& name) {
      return elf->soname && name.filename() == *elf->soname;
    });
    if (by_soname != names.end()) elf->path = *by_soname;
    report.libraries.push_back(elf->path);
    for (const std::string& name : elf->needed) {
      Dependency dependency{elf->path, name, resolver.resolve(*elf, name)};
      const auto& resolved = dependency.resolution;
      dependency.from_prefix = resolved.found() && in_prefix(*resolved.path);
      report.dependencies.push_back(std::move(dependency));
    }
  }
  return report;
}

}  // namespace envkit::elf
