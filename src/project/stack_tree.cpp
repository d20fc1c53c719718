#include "envkit/project/stack_tree.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <regex>
#include <system_error>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/text.hpp"
#include "envkit/project/external.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"

namespace envkit::project {

namespace fs = std::filesystem;

namespace {

// Headers are small; a file far larger is not the header envkit means.
constexpr std::size_t kMostHeaderBytes = std::size_t{4} << 20;

std::optional<std::string> read_small(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  auto text = sys::read_file(path, kMostHeaderBytes);
  if (!text) return std::nullopt;
  return *std::move(text);
}

// `#define NAME 123` anywhere in `text`.
std::optional<std::uint64_t> define_value(std::string_view text, std::string_view name) {
  const std::regex pattern("(^|\\n)[ \\t]*#[ \\t]*define[ \\t]+" + std::string(name) +
                           "[ \\t]+\\(?([0-9]+)");
  std::match_results<std::string_view::const_iterator> match;
  if (!std::regex_search(text.begin(), text.end(), match, pattern)) return std::nullopt;
  std::uint64_t value = 0;
  const auto digits = match[2].str();
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

// The folders of `root` that hold its libraries.
std::vector<fs::path> library_dirs(const fs::path& root) {
  std::vector<fs::path> dirs = {root / "lib64", root / "lib", root / "lib" / "x86_64-linux-gnu",
                                root / "lib" / "aarch64-linux-gnu"};
  std::error_code ec;
  for (const auto& target : fs::directory_iterator(root / "targets", ec))
    dirs.push_back(target.path() / "lib");
  // lib64 is often a link to lib: each folder once, named as the user would look for it.
  std::vector<fs::path> shown;
  std::vector<fs::path> seen;
  for (const auto& dir : dirs) {
    const auto real = fs::weakly_canonical(dir, ec);
    if (ec || !fs::is_directory(real, ec)) continue;
    if (std::find(seen.begin(), seen.end(), real) != seen.end()) continue;
    seen.push_back(real);
    shown.push_back(dir);
  }
  return shown;
}

void add_libraries(std::vector<VersionEvidence>& out, const fs::path& root, std::string_view stem) {
  std::vector<VersionEvidence> found;
  for (const auto& dir : library_dirs(root)) {
    std::error_code ec;
    for (const auto& item : fs::directory_iterator(dir, ec)) {
      const auto name = item.path().filename().string();
      auto version = library_file_version(name, stem);
      if (!version) continue;
      // Shown where the user looks (root/lib64/...), not where links lead.
      found.push_back({*std::move(version), item.path(), name, true});
    }
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.file < b.file; });
  for (auto& evidence : found)
    out.push_back(std::move(evidence));
}

std::vector<VersionEvidence> cuda_versions_in(const fs::path& root) {
  std::vector<VersionEvidence> out;
  if (auto text = read_small(root / "version.json")) {
    if (auto version = parse_cuda_version_json(*text, (root / "version.json").string())) {
      out.push_back({*version, root / "version.json",
                     fmt::format("\"cuda\": {{\"version\": \"{}\"}}", version->original())});
    }
  }
  if (auto text = read_small(root / "version.txt")) {
    if (auto version = parse_cuda_version_txt(*text)) {
      out.push_back(
          {*version, root / "version.txt", fmt::format("CUDA Version {}", version->original())});
    }
  }
  if (auto text = read_small(root / "include" / "cuda.h")) {
    if (auto version = parse_cuda_h_version(*text)) {
      out.push_back({*version, root / "include" / "cuda.h",
                     fmt::format("CUDA_VERSION {}", *define_value(*text, "CUDA_VERSION"))});
    }
  }
  add_libraries(out, root, "libcudart.so");
  return out;
}

std::vector<VersionEvidence> cudnn_versions_in(const fs::path& root) {
  std::vector<VersionEvidence> out;
  for (const auto* header : {"cudnn_version.h", "cudnn.h"}) {
    const auto path = root / "include" / header;
    auto text = read_small(path);
    if (!text) continue;
    if (auto version = parse_cudnn_header_version(*text)) {
      out.push_back({*version, path,
                     fmt::format("CUDNN_MAJOR {}, CUDNN_MINOR {}, CUDNN_PATCHLEVEL {}",
                                 version->major(), version->minor(), version->micro())});
      break;  // cuDNN 8's cudnn.h includes cudnn_version.h: one header says it
    }
  }
  add_libraries(out, root, "libcudnn.so");
  return out;
}

bool is_dir(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

bool same_place(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec);
}

// The CUDA folder a path in `external:` stands for: a folder as it is, an nvcc (a
// file, DIR/bin/nvcc) its DIR.
fs::path tree_of(const fs::path& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return path.parent_path().parent_path();
  return path;
}

}  // namespace

bool versions_agree(const specs::Version& stated, const specs::Version& found) {
  const auto shared = std::min(stated.release().size(), found.release().size());
  for (std::size_t i = 0; i < shared; ++i) {
    if (stated.release_at(i) != found.release_at(i)) return false;
  }
  return true;
}

std::optional<specs::Version> parse_cuda_h_version(std::string_view text) {
  const auto value = define_value(text, "CUDA_VERSION");
  if (!value || *value < 1000) return std::nullopt;
  return specs::Version::from_release({*value / 1000, (*value % 1000) / 10});
}

std::optional<specs::Version> parse_cuda_version_txt(std::string_view text) {
  static const std::regex kLine(R"(CUDA Version\s+([0-9]+(?:\.[0-9]+)*))");
  std::match_results<std::string_view::const_iterator> match;
  if (!std::regex_search(text.begin(), text.end(), match, kLine)) return std::nullopt;
  auto version = specs::Version::parse(match[1].str());
  if (!version) return std::nullopt;
  return *std::move(version);
}

std::optional<specs::Version> parse_cudnn_header_version(std::string_view text) {
  const auto major = define_value(text, "CUDNN_MAJOR");
  const auto minor = define_value(text, "CUDNN_MINOR");
  const auto patch = define_value(text, "CUDNN_PATCHLEVEL");
  if (!major || !minor || !patch) return std::nullopt;
  return specs::Version::from_release({*major, *minor, *patch});
}

std::optional<specs::Version> library_file_version(std::string_view file_name,
                                                   std::string_view stem) {
  if (!file_name.starts_with(stem) || file_name.size() <= stem.size() + 1 ||
      file_name[stem.size()] != '.')
    return std::nullopt;
  const auto tail = file_name.substr(stem.size() + 1);
  for (const auto part : text::split(tail, '.')) {
    if (part.empty() ||
        !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
  }
  auto version = specs::Version::parse(tail);
  if (!version) return std::nullopt;
  // CUDA 11 and newer name the runtime libcudart.so.11.0 whatever the minor.
  if (stem == "libcudart.so" && version->major() >= 11 && version->release().size() == 2 &&
      version->minor() == 0)
    return specs::Version::from_release({version->major()});
  return *std::move(version);
}

std::string_view stack_library_stem(std::string_view package) {
  return package == "cudnn" ? "libcudnn.so" : "libcudart.so";
}

std::string_view stack_display_name(std::string_view package) {
  return package == "cudnn" ? "cuDNN" : package == "cuda" ? "CUDA" : package;
}

std::vector<VersionEvidence> stack_versions_in(std::string_view package, const fs::path& root) {
  if (package == "cudnn") return cudnn_versions_in(root);
  if (package == "cuda") return cuda_versions_in(root);
  return {};
}

std::optional<fs::path> named_tree(std::string_view package, std::string_view written,
                                   const fs::path& base) {
  if (written.find('/') != std::string_view::npos) {
    const fs::path path(written);
    return tree_of((path.is_absolute() ? path : base / path).lexically_normal());
  }
  if (text::iequals(written, "system") && package == "cuda") {
    if (const auto nvcc = sys::find_on_path("nvcc")) return tree_of(*nvcc);
  }
  return std::nullopt;
}

std::optional<VersionEvidence> contradiction(const specs::Version& stated,
                                             const std::vector<VersionEvidence>& found) {
  // Headers and notes come first, most precise first: the first one speaks for the tree.
  if (!found.empty() && !found.front().library && !versions_agree(stated, found.front().version))
    return found.front();
  // Libraries of several versions may stand side by side: one that agrees is enough.
  std::vector<const VersionEvidence*> libraries;
  for (const auto& evidence : found) {
    if (evidence.library) libraries.push_back(&evidence);
  }
  if (libraries.empty()) return std::nullopt;
  if (std::any_of(libraries.begin(), libraries.end(),
                  [&](const auto* evidence) { return versions_agree(stated, evidence->version); }))
    return std::nullopt;
  return *libraries.front();
}

TreeSearch TreeSearch::from_host() {
  TreeSearch search;
  search.cuda_home = env::get(env::kCudaHome);
  search.cuda_path = env::get(env::kCudaPath);
  search.nvcc = sys::find_on_path("nvcc");
  return search;
}

TreeLookup find_stack(std::string_view package, const TreeSearch& search) {
  TreeLookup lookup;
  // Each candidate: the folder and who pointed at it.
  std::vector<std::pair<fs::path, std::string>> candidates;
  if (search.named) {
    candidates.emplace_back(*search.named, "envkit.yaml");
  } else {
    if (package == "cudnn" && search.beside) candidates.emplace_back(*search.beside, "beside");
    if (search.cuda_home && !search.cuda_home->empty())
      candidates.emplace_back(*search.cuda_home, "CUDA_HOME");
    if (search.cuda_path && !search.cuda_path->empty())
      candidates.emplace_back(*search.cuda_path, "CUDA_PATH");
    if (search.nvcc)
      candidates.emplace_back(search.nvcc->parent_path().parent_path(), "nvcc on PATH");
    for (const auto& root : search.defaults)
      candidates.emplace_back(root, "the usual place");
    if (package == "cudnn") {
      for (const auto& root : search.system_roots)
        candidates.emplace_back(root, "the system's packages");
    }
  }
  const auto name = stack_display_name(package);
  for (const auto& [root, why] : candidates) {
    const auto place =
        fmt::format("{} ({})", root.string(), why == "beside" ? "the CUDA envkit.yaml names" : why);
    if (!is_dir(root)) {
      lookup.looked.push_back(place + ": does not exist");
      continue;
    }
    // A structured binding is not captured by name (clang before 16 refuses it).
    const fs::path& candidate = root;
    if (std::any_of(search.exclude.begin(), search.exclude.end(),
                    [&](const fs::path& excluded) { return same_place(candidate, excluded); })) {
      lookup.looked.push_back(place + ": the envkit prefix itself");
      continue;
    }
    auto versions = stack_versions_in(package, root);
    if (versions.empty()) {
      lookup.looked.push_back(fmt::format("{}: no file states a {} version", place, name));
      continue;
    }
    lookup.looked.push_back(place);
    lookup.root = root;
    lookup.found_by = why == "beside" ? "the CUDA envkit.yaml names" : why;
    lookup.versions = std::move(versions);
    break;
  }
  return lookup;
}

}  // namespace envkit::project
