#include "envkit/python/wheel_filename.hpp"

#include <fmt/format.h>

#include <array>

#include "envkit/core/text.hpp"
#include "envkit/specs/package_name.hpp"
#include "envkit/specs/version.hpp"

namespace envkit::python {

namespace {

constexpr std::string_view kSuffix = ".whl";

// Letters, digits, `_` and `.`: what a wheel name's parts may hold (`-` separates them).
bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}

bool all_name_chars(std::string_view part) {
  for (char c : part) {
    if (!is_name_char(c)) return false;
  }
  return true;
}

Error bad(std::string_view filename, std::string reason) {
  return Error::input(fmt::format("{} is not a wheel file name", text::quoted(filename)))
      .because(std::move(reason))
      .hint(
          "a wheel is named `{distribution}-{version}(-{build})?-{python}-{abi}-{platform}.whl` "
          "(PEP 427)");
}

}  // namespace

Result<WheelFilename> parse_wheel_filename(std::string_view filename) {
  if (filename.size() <= kSuffix.size() || !filename.ends_with(kSuffix))
    return bad(filename, "it does not end with `.whl`");
  const auto parts = text::split(filename.substr(0, filename.size() - kSuffix.size()), '-');
  if (parts.size() != 5 && parts.size() != 6) {
    return bad(filename, fmt::format("it has {} parts separated by `-`; a wheel has 5, or 6 with "
                                     "a build tag",
                                     parts.size()));
  }
  constexpr std::array<std::string_view, 6> kWithBuild = {
      "distribution", "version", "build tag", "python tag", "abi tag", "platform tag"};
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string_view what = parts.size() == 6 ? kWithBuild[i]
                                  : i < 2           ? kWithBuild[i]
                                                    : kWithBuild[i + 1];
    if (parts[i].empty()) return bad(filename, fmt::format("its {} is empty", what));
    // The version is checked by the PEP 440 parser (`+` of a local version is fine there).
    if (i != 1 && !all_name_chars(parts[i])) {
      return bad(filename, fmt::format("its {} {} holds a character other than letters, digits, "
                                       "`_` and `.`",
                                       what, text::quoted(parts[i])));
    }
  }
  if (auto version = specs::Version::parse(parts[1]); !version) {
    return bad(filename,
               fmt::format("its version {} is not a PEP 440 version", text::quoted(parts[1])));
  }
  WheelFilename out;
  out.distribution = specs::canonical_package_name(parts[0]);
  out.version = std::string(parts[1]);
  std::size_t next = 2;
  if (parts.size() == 6) {
    const char first = parts[2].front();
    if (first < '0' || first > '9') {
      return bad(filename, fmt::format("its build tag {} does not start with a digit",
                                       text::quoted(parts[2])));
    }
    out.build_tag = std::string(parts[next++]);
  }
  out.python_tag = std::string(parts[next++]);
  out.abi_tag = std::string(parts[next++]);
  out.platform_tag = std::string(parts[next]);
  return out;
}

std::optional<unsigned> manylinux_glibc_minor(std::string_view tag, std::string_view arch) {
  const std::string suffix = "_" + std::string(arch);
  if (!tag.ends_with(suffix)) return std::nullopt;
  const auto stem = tag.substr(0, tag.size() - suffix.size());
  if (stem == "manylinux1") return 5;
  if (stem == "manylinux2010") return 12;
  if (stem == "manylinux2014") return 17;
  constexpr std::string_view kPerennial = "manylinux_2_";  // PEP 600
  if (!stem.starts_with(kPerennial) || stem.size() == kPerennial.size()) return std::nullopt;
  unsigned minor = 0;
  for (char c : stem.substr(kPerennial.size())) {
    if (c < '0' || c > '9') return std::nullopt;
    minor = minor * 10 + static_cast<unsigned>(c - '0');
  }
  return minor;
}

std::optional<unsigned> wheel_glibc_minor(const WheelFilename& wheel, std::string_view arch) {
  std::optional<unsigned> lowest;
  std::string_view tags = wheel.platform_tag;
  while (!tags.empty()) {
    const auto dot = tags.find('.');
    const auto tag = tags.substr(0, dot);
    if (const auto minor = manylinux_glibc_minor(tag, arch); minor && (!lowest || *minor < *lowest))
      lowest = minor;
    tags = dot == std::string_view::npos ? std::string_view() : tags.substr(dot + 1);
  }
  return lowest;
}

}  // namespace envkit::python
