// Layouts: how each packaging's entries map into a prefix that works as a
// CUDA root. The maps see paths after strip_components, directories with a
// trailing '/', and answer with the prefix-relative path or nullopt.
#include "envkit/archive/layout.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string_view>

#include "layout_paths.hpp"

namespace envkit::archive {

namespace detail {

std::pair<std::string_view, std::string_view> split_first(std::string_view path) {
  const auto slash = path.find('/');
  if (slash == std::string_view::npos) return {path, {}};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

bool is_top_level_file(std::string_view path) {
  return !path.empty() && path.find('/') == std::string_view::npos;
}

std::string licence_path(const LayoutTarget& target, std::string_view name) {
  std::string path = "share/licenses";
  for (const auto& part : {target.package, target.component}) {
    if (!part.empty()) path += "/" + part;
  }
  return fmt::format("{}/{}", path, name);
}

}  // namespace detail

namespace {

namespace fs = std::filesystem;
using detail::is_top_level_file;
using detail::licence_path;
using detail::split_first;
using specs::Layout;

bool ends_with_icase(std::string_view text, std::string_view suffix) {
  if (text.size() < suffix.size()) return false;
  return std::equal(suffix.begin(), suffix.end(), text.end() - static_cast<long>(suffix.size()),
                    [](char a, char b) {
                      return std::tolower(static_cast<unsigned char>(a)) ==
                             std::tolower(static_cast<unsigned char>(b));
                    });
}

bool starts_with_icase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && ends_with_icase(text.substr(0, prefix.size()), prefix);
}

// `cuda_cudart-linux-x86_64-12.4.127-archive/`, already stripped: folders stay,
// lib64 becomes lib, top-level files (LICENSE) are licences.
PathMap nvidia_redist_map(const LayoutTarget& target) {
  return [target](std::string_view path) -> std::optional<std::string> {
    if (is_top_level_file(path)) return licence_path(target, path);
    const auto [first, rest] = split_first(path);
    if (first == "lib64") return fmt::format("lib/{}", rest);
    return std::string(path);
  };
}

// Legacy cuDNN: cuda/include -> include, cuda/lib64 and cuda/lib -> lib,
// files directly in cuda/ (NVIDIA_SLA_cuDNN_Support.txt) are licences.
PathMap cudnn_legacy_map(const LayoutTarget& target) {
  return [target](std::string_view path) -> std::optional<std::string> {
    const auto [first, rest] = split_first(path);
    if (first != "cuda" || rest.empty()) return std::nullopt;
    if (is_top_level_file(rest)) return licence_path(target, rest);
    const auto [sub, below] = split_first(rest);
    if (sub == "lib64" || sub == "lib") return fmt::format("lib/{}", below);
    return std::string(rest);
  };
}

// python-build-standalone install_only: python/... is the prefix.
PathMap python_standalone_map() {
  return [](std::string_view path) -> std::optional<std::string> {
    const auto [first, rest] = split_first(path);
    if (first != "python" || rest.empty()) return std::nullopt;
    return std::string(rest);
  };
}

// python-build-standalone "full" archives: one top folder (stripped, as uv
// does), the installation under install/; the build tree beside it is left out.
PathMap python_standalone_full_map() {
  return [](std::string_view path) -> std::optional<std::string> {
    const auto [first, rest] = split_first(path);
    if (first != "install" || rest.empty()) return std::nullopt;
    return std::string(rest);
  };
}

// Python package markers that mean nothing in a prefix.
bool is_python_clutter(std::string_view path) {
  std::string_view rest = path;
  while (!rest.empty()) {
    const auto [part, after] = split_first(rest);
    if (part == "__pycache__" || (after.empty() && part == "__init__.py")) return true;
    rest = after;
  }
  return false;
}

// A wheel's `*.dist-info/`: its licence files, nothing else.
std::optional<std::string> dist_info_licence(const LayoutTarget& target, std::string_view rest) {
  if (rest.starts_with("licenses/")) {
    const auto name = rest.substr(std::string_view("licenses/").size());
    if (name.empty() || name.ends_with('/')) return std::nullopt;
    return licence_path(target, name);
  }
  if (is_top_level_file(rest) && starts_with_icase(rest, "license")) {
    return licence_path(target, rest);
  }
  return std::nullopt;
}

// NVIDIA wheels: <wheel_root>/lib/libcudart.so.12 -> lib/libcudart.so.12.
PathMap nvidia_wheel_map(const LayoutTarget& target) {
  std::string root = target.wheel_root;
  while (root.ends_with('/'))
    root.pop_back();
  return [target, root](std::string_view path) -> std::optional<std::string> {
    if (is_python_clutter(path)) return std::nullopt;
    const auto [first, rest] = split_first(path);
    if (ends_with_icase(first, ".dist-info")) return dist_info_licence(target, rest);
    if (root.empty()) return std::string(path);
    if (!path.starts_with(root) || path.size() <= root.size() + 1 || path[root.size()] != '/') {
      return std::nullopt;
    }
    return std::string(path.substr(root.size() + 1));
  };
}

// libcudart.so.12.4.127 -> base libcudart, version 12.4.127.
struct VersionedLibrary {
  std::string name;
  std::string base;
  std::vector<unsigned long> version;
};

std::optional<VersionedLibrary> parse_library(const std::string& name) {
  const auto so = name.find(".so.");
  if (so == std::string::npos || !name.starts_with("lib") || so <= 3) return std::nullopt;
  VersionedLibrary library{.name = name, .base = name.substr(0, so)};
  std::string_view rest = std::string_view(name).substr(so + 4);
  while (true) {
    const auto dot = rest.find('.');
    const auto part = rest.substr(0, dot);
    // Digits only, and few enough to fit: libfoo.so.1.debug is not a version.
    if (part.empty() || part.size() > 9 ||
        !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
    library.version.push_back(std::stoul(std::string(part)));
    if (dot == std::string_view::npos) break;
    rest = rest.substr(dot + 1);
  }
  return library;
}

bool exists_no_follow(const fs::path& path) {
  struct stat status {};
  return ::lstat(path.c_str(), &status) == 0;
}

// The regular, versioned libraries in `lib`: base -> major -> the highest
// version of that major.
using LibraryIndex = std::map<std::string, std::map<unsigned long, VersionedLibrary>>;

Result<LibraryIndex> index_libraries(const fs::path& lib, const std::set<std::string>* only) {
  LibraryIndex index;
  std::error_code error;
  for (fs::directory_iterator it(lib, error), end; !error && it != end; it.increment(error)) {
    if (!it->is_regular_file(error) || it->is_symlink(error)) continue;
    const auto name = it->path().filename().string();
    if (only && !only->contains(name)) continue;
    auto library = parse_library(name);
    if (!library) continue;
    auto& best = index[library->base][library->version.front()];
    if (best.version < library->version) best = std::move(*library);
  }
  if (error) {
    return Error::failed(fmt::format("cannot list `{}`", lib.string())).because(error.message());
  }
  return index;
}

Result<void> make_link(const fs::path& lib, const std::string& name, const std::string& target,
                       std::vector<ExtractedEntry>& made) {
  std::error_code error;
  fs::create_symlink(target, lib / name, error);
  if (error) {
    return Error::failed(fmt::format("cannot create the symlink `lib/{}`", name))
        .because(error.message());
  }
  made.push_back({.path = "lib/" + name, .type = EntryType::symlink, .link_target = target});
  return {};
}

}  // namespace

ExtractOptions layout_options(const LayoutTarget& target, ExtractOptions base) {
  base.strip_components = 0;
  base.map = nullptr;
  switch (target.layout) {
    case Layout::nvidia_redist:
      base.strip_components = 1;
      base.map = nvidia_redist_map(target);
      break;
    case Layout::cudnn_legacy:
      base.map = cudnn_legacy_map(target);
      break;
    case Layout::python_standalone:
      base.map = python_standalone_map();
      break;
    case Layout::python_standalone_full:
      base.strip_components = 1;
      base.map = python_standalone_full_map();
      break;
    case Layout::nvidia_wheel:
      base.map = nvidia_wheel_map(target);
      break;
    case Layout::source_tree:
      base.strip_components = 1;
      break;
    case Layout::cuda_runfile_nested:
      base.map = detail::cuda_runfile_map(target);
      base.nested_runfile = detail::is_cuda_toolkit_runfile;
      break;
    case Layout::cuda_runfile_builds:
      base.map = detail::cuda_runfile_map(target);
      break;
    case Layout::none:
      // A runfile is never unpacked; should one reach here, nothing lands.
      base.map = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
      break;
  }
  return base;
}

ExtractOptions runfile_patch_options(const LayoutTarget& target, ExtractOptions base) {
  base.strip_components = 0;
  base.map = detail::cuda_patch_map(target);
  base.nested_runfile = nullptr;
  return base;
}

Result<std::vector<ExtractedEntry>> add_library_links(const fs::path& root,
                                                      const std::set<std::string>* only) {
  const fs::path lib = root / "lib";
  std::vector<ExtractedEntry> made;
  std::error_code error;
  if (!fs::is_directory(fs::symlink_status(lib, error))) return made;
  auto index = index_libraries(lib, only);
  if (!index) return std::move(index).error();
  for (const auto& [base, majors] : *index) {
    // Every major gets its soname (they cannot conflict); the development
    // link goes to the highest.
    for (const auto& [major, library] : majors) {
      const auto soname = fmt::format("{}.so.{}", base, major);
      if (library.name == soname || exists_no_follow(lib / soname)) continue;
      if (auto linked = make_link(lib, soname, library.name, made); !linked) {
        return linked.error();
      }
    }
    const auto development = base + ".so";
    if (exists_no_follow(lib / development)) continue;
    const auto newest = fmt::format("{}.so.{}", base, majors.rbegin()->first);
    if (auto linked = make_link(lib, development, newest, made); !linked) return linked.error();
  }
  return made;
}

Result<std::vector<ExtractedEntry>> add_python_links(const fs::path& root) {
  const fs::path bin = root / "bin";
  std::vector<ExtractedEntry> made;
  for (const auto& [name, target] : {std::pair{"python", "python3"}, std::pair{"pip", "pip3"}}) {
    std::error_code ignored;
    if (exists_no_follow(bin / name) || !fs::exists(bin / target, ignored)) continue;
    std::error_code error;
    fs::create_symlink(target, bin / name, error);
    if (error) {
      return Error::failed(fmt::format("cannot create the symlink `bin/{}`", name))
          .because(error.message());
    }
    made.push_back(
        {.path = fmt::format("bin/{}", name), .type = EntryType::symlink, .link_target = target});
  }
  return made;
}

}  // namespace envkit::archive
