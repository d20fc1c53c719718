#include "envkit/python/build_env.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

#include "envkit/specs/package_name.hpp"

namespace envkit::python {

namespace {

// When each CPython minor was released (python.org's release dates).
struct MinorRelease {
  unsigned minor;
  std::string_view day;
};
constexpr MinorRelease kPythonReleases[] = {
    {5, "2015-09-13"},  {6, "2016-12-23"},  {7, "2018-06-27"},  {8, "2019-10-14"},
    {9, "2020-10-05"},  {10, "2021-10-04"}, {11, "2022-10-24"}, {12, "2023-10-02"},
    {13, "2024-10-07"}, {14, "2025-10-07"},
};

// A TOML basic string.
std::string toml_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::optional<std::string> python_release_day(const specs::Version& python) {
  if (python.major() != 3) return std::nullopt;
  for (const auto& release : kPythonReleases) {
    if (release.minor == python.minor()) return std::string(release.day);
  }
  return std::nullopt;
}

std::optional<std::string> build_day(const BuildEra& era, const specs::Version& python) {
  const auto released = python_release_day(python);
  if (!released) return std::nullopt;
  return std::max(era.as_of, *released);
}

std::vector<std::string> build_constraints(const BuildEra& era, const specs::Version& python) {
  std::vector<std::string> lines;
  const auto day = build_day(era, python);
  if (!day) return lines;
  for (const auto& [tool, releases] : era.tools) {
    std::optional<specs::Version> newest;
    std::string written;
    for (const auto& release : releases) {
      if (release.uploaded.empty() || release.uploaded > *day) continue;
      auto version = specs::Version::parse(release.version);
      if (!version || version->is_prerelease() || version->is_devrelease()) continue;
      if (!newest || *newest < *version) {
        newest = *version;
        written = release.version;
      }
    }
    if (newest) lines.push_back(fmt::format("{}<={}", tool, written));
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::string framework_module(std::string_view framework) {
  const auto name = specs::canonical_package_name(framework);
  if (name == "torch") return "torch";
  if (name == "tensorflow" || name == "tensorflow-gpu") return "tensorflow";
  if (name == "jax") return "jax";
  return {};
}

std::string build_config_toml(std::string_view framework,
                              const std::vector<std::string>& packages) {
  std::string out =
      "# Written by envkit: these packages import the framework in their build.\n"
      "[extra-build-dependencies]\n";
  for (const auto& package : packages)
    out += fmt::format("{} = [{}]\n", toml_string(package), toml_string(framework));
  return out;
}

std::optional<FailedBuild> failed_build(std::string_view uv_output) {
  static const std::regex pattern(
      R"(Failed to (?:download and )?build `([A-Za-z0-9][A-Za-z0-9._-]*)==([^`\s]+)`)");
  std::match_results<std::string_view::const_iterator> match;
  if (!std::regex_search(uv_output.begin(), uv_output.end(), match, pattern)) return std::nullopt;
  return FailedBuild{.name = specs::canonical_package_name(match[1].str()),
                     .version = match[2].str()};
}

bool lacks_module(std::string_view output, std::string_view module) {
  if (module.empty()) return false;
  for (const char quote : {'\'', '"'}) {
    const auto needle = fmt::format("No module named {}{}", quote, module);
    for (auto at = output.find(needle); at != std::string_view::npos;
         at = output.find(needle, at + 1)) {
      const auto after = at + needle.size();
      // `torch'` or `torch.utils'`: the framework, not `torchvision`.
      if (after < output.size() && (output[after] == quote || output[after] == '.')) return true;
    }
  }
  return false;
}

}  // namespace envkit::python
