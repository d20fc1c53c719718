#include "envkit/manifest/manifest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <exception>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/specs/package_name.hpp"
#include "envkit/sys/fs.hpp"
#include "yaml_source.hpp"

namespace envkit::manifest {

namespace {

namespace fs = std::filesystem;
using yaml::Entry;
using yaml::Source;

// ---------------------------------------------------------------- messages

// Where a value is; a missing value (`key:` and nothing) has no place of its
// own, so its owner (the key, or the list) stands in.
SourceLocation where(const Source& source, const yaml::Node& value, const yaml::Node& owner) {
  return source.at(value.is_null() ? owner : value);
}

// "`system.driver`: expected a version specifier ..., found a list".
Error wrong_value(std::string_view path, std::string_view expected, const yaml::Node& found,
                  SourceLocation location) {
  return Error::input(fmt::format("{}: expected {}, found {}", text::quoted(path), expected,
                                  yaml::describe(found)))
      .at(std::move(location));
}

Error wrong_value(const Source& source, const Entry& entry, std::string_view path,
                  std::string_view expected) {
  return wrong_value(path, expected, entry.value, where(source, entry.value, entry.key_node));
}

// "did you mean `x`?", or "" when nothing is close.
std::string did_you_mean(std::string_view word, std::span<const std::string_view> candidates) {
  const auto suggestion = text::did_you_mean(word, candidates);
  return suggestion ? fmt::format("did you mean {}?", text::quoted(*suggestion)) : std::string();
}

std::string path_of(std::string_view section, std::string_view key) {
  return section.empty() ? std::string(key) : fmt::format("{}.{}", section, key);
}

// A located copy of an error from specs, which knows no files.
Error located(Error error, SourceLocation location) {
  error.at(std::move(location));
  return error;
}

// ----------------------------------------------------- tables of known keys

// One key of a mapping and how to read its value into `Target`.
template <class Target>
struct Field {
  std::string_view name;
  Result<void> (*read)(const Entry&, const Source&, Target&);
};

template <class Target, std::size_t N>
std::vector<std::string_view> names_of(const Field<Target> (&fields)[N]) {
  std::vector<std::string_view> names;
  for (const auto& field : fields)
    names.push_back(field.name);
  return names;
}

Error unknown_key(const Source& source, const Entry& entry, std::string_view section,
                  std::span<const std::string_view> keys) {
  const std::string in_section = section.empty() ? "" : " in " + text::quoted(section);
  Error error = Error::input(fmt::format("unknown key {}{}", text::quoted(entry.key), in_section));
  error.at(source.at(entry.key_node));
  if (auto hint = did_you_mean(entry.key, keys); !hint.empty()) return error.hint(hint);
  // A package at the top level: `requires:` was forgotten.
  if (const auto package = specs::known_package(entry.key); package && section.empty()) {
    return error.hint(
        fmt::format("{} is a package: list it under `requires:`", text::quoted(*package)));
  }
  const std::string of_section = section.empty() ? "" : " of " + text::quoted(section);
  return error.hint(fmt::format("the keys{} are {}", of_section, yaml::quoted_list(keys)));
}

template <class Target, std::size_t N>
Result<void> read_fields(const yaml::Node& mapping, const Source& source, std::string_view section,
                         const Field<Target> (&fields)[N], Target& target) {
  auto entries = yaml::entries_of(mapping, source, section);
  if (!entries) return entries.error();
  for (const Entry& entry : *entries) {
    const auto* field = std::find_if(std::begin(fields), std::end(fields),
                                     [&](const auto& f) { return f.name == entry.key; });
    if (field == std::end(fields)) return unknown_key(source, entry, section, names_of(fields));
    if (auto read = field->read(entry, source, target); !read) return read;
  }
  return {};
}

// A section such as `system:`; `system:` with every entry commented out is an
// empty section, not an error.
template <class Target, std::size_t N>
Result<void> read_section(const Entry& entry, const Source& source, std::string_view expected,
                          const Field<Target> (&fields)[N], Target& target) {
  if (entry.value.is_null()) return {};
  if (!entry.value.is_mapping()) return wrong_value(source, entry, entry.key, expected);
  return read_fields(entry.value, source, entry.key, fields, target);
}

// ------------------------------------------------------------ value readers

// A scalar or a list of scalars, each checked by `read_item`.
template <class ReadItem>
Result<void> read_one_or_list(const Entry& entry, const Source& source, std::string_view path,
                              std::string_view expected, std::string_view expected_item,
                              ReadItem read_item) {
  const yaml::Node& value = entry.value;
  if (value.is_scalar()) return read_item(value);
  if (!value.is_sequence()) return wrong_value(source, entry, path, expected);
  for (const auto& item : value) {
    if (!item.is_scalar()) {
      return wrong_value(path, expected_item, item, where(source, item, value));
    }
    if (auto read = read_item(item); !read) return read;
  }
  return {};
}

// The first clause of a comma-joined specifier that does not parse by itself,
// so that an error can point at it; the whole text when none is found. The
// result is a view into `written`.
std::string_view failing_clause(std::string_view written) {
  for (auto clause : text::split(written, ',')) {
    clause = text::trim(clause);
    if (!clause.empty() && !specs::VersionSpec::parse(clause, specs::SpecSyntax::envkit)) {
      return clause;
    }
  }
  return text::trim(written);
}

// specs' reason, prefixed with where it was written; specs' message names the
// bad clause, so the whole specifier is added when it has more than one.
// `written` is the specifier's text, `offset` characters into the scalar.
Error invalid_spec(const Source& source, const yaml::Node& value, std::string_view path,
                   std::string_view written, std::size_t offset, const Error& reason) {
  const bool one_clause = written.find(',') == std::string_view::npos;
  Error error =
      Error::input(one_clause ? fmt::format("{}: {}", text::quoted(path), reason.message())
                              : fmt::format("{}: in {}, {}", text::quoted(path),
                                            text::quoted(text::trim(written)), reason.message()));
  // Point at the bad clause: find the specifier on the value's line, then the
  // clause inside it.
  auto location = source.find_on_line(value, written, offset);
  if (location) {
    location->column += static_cast<int>(failing_clause(written).data() - written.data());
  }
  error.at(location.value_or(source.at(value)));
  for (const auto& cause : reason.causes())
    error.because(cause);
  for (const auto& hint : reason.hints())
    error.hint(hint);
  return error;
}

// A version specifier in envkit syntax (a bare `12.1` means `==12.1.*`).
Result<specs::VersionSpec> read_spec(const Source& source, const yaml::Node& value,
                                     SourceLocation location, std::string_view path,
                                     std::string_view expected) {
  if (!value.is_scalar()) return wrong_value(path, expected, value, std::move(location));
  auto spec = specs::VersionSpec::parse(value.text(), specs::SpecSyntax::envkit);
  if (!spec) return invalid_spec(source, value, path, value.text(), 0, spec.error());
  return spec;
}

Result<specs::VersionSpec> read_spec(const Source& source, const Entry& entry,
                                     std::string_view path, std::string_view expected) {
  return read_spec(source, entry.value, where(source, entry.value, entry.key_node), path, expected);
}

Result<void> read_name(const Entry& entry, const Source& source, Manifest& manifest) {
  if (!entry.value.is_scalar() || entry.value.text().empty()) {
    return wrong_value(source, entry, "name", "a project name");
  }
  manifest.name = entry.value.text();
  return {};
}

// ---------------------------------------------------------------- framework

constexpr std::string_view kFrameworkExpected =
    "a framework and an optional version, such as `torch 2.1.*`";

// A framework-name error placed at the `framework:` value.
Error framework_error(const Source& source, const Entry& entry, const Error& cause) {
  Error error = Error::input(fmt::format("`framework`: {}", cause.message()));
  error.at(source.at(entry.value));
  for (const auto& hint : cause.hints())
    error.hint(hint);
  return error;
}

Error empty_framework(const Source& source, const Entry& entry) {
  return wrong_value(source, entry, "framework", kFrameworkExpected)
      .hint(
          "a project without a Python framework leaves out `framework:` and lists its packages "
          "under `requires:`");
}

Result<void> read_framework(const Entry& entry, const Source& source, Manifest& manifest) {
  const yaml::Node& value = entry.value;
  if (value.is_null()) return empty_framework(source, entry);
  if (!value.is_scalar()) return wrong_value(source, entry, "framework", kFrameworkExpected);
  if (text::trim(value.text()).empty()) return empty_framework(source, entry);

  const auto [name, spec_text] = split_framework(value.text());
  if (name.empty()) return wrong_value(source, entry, "framework", kFrameworkExpected);
  auto package = framework_name(name);
  if (!package) return framework_error(source, entry, package.error());

  FrameworkRequirement framework{.name = *std::move(package), .spec = {}};
  if (!spec_text.empty()) {
    auto spec = specs::VersionSpec::parse(spec_text, specs::SpecSyntax::envkit);
    if (!spec) {
      const auto offset = static_cast<std::size_t>(spec_text.data() - value.text().data());
      return invalid_spec(source, value, "framework", spec_text, offset, spec.error());
    }
    framework.spec = *std::move(spec);
  }
  manifest.framework = std::move(framework);
  return {};
}

// --------------------------------------------------------- requires, external

// The canonical name of a package key of `section`, which must be known and
// appear once, however it is spelled (`pytorch` and `torch` are one package).
Result<std::string> read_package_key(const Entry& entry, const Source& source,
                                     std::string_view section,
                                     std::map<std::string, int>& first_line) {
  const SourceLocation location = source.at(entry.key_node);
  const auto package = specs::known_package(entry.key);
  if (!package) {
    Error error = Error::input(
        fmt::format("unknown package {} in {}", text::quoted(entry.key), text::quoted(section)));
    error.at(location);
    if (auto hint = did_you_mean(entry.key, specs::kKnownPackages); !hint.empty()) {
      return error.hint(hint);
    }
    return error.hint(
        fmt::format("the known packages are {}", yaml::quoted_list(specs::kKnownPackages)));
  }
  const auto [previous, inserted] = first_line.emplace(*package, location.line);
  if (!inserted) {
    Error error =
        Error::input(fmt::format("duplicate package {} in {} (first on line {})",
                                 text::quoted(*package), text::quoted(section), previous->second));
    error.at(location);
    if (entry.key != *package) {
      error.hint(fmt::format("{} is another name for {}", text::quoted(entry.key),
                             text::quoted(*package)));
    }
    return error;
  }
  return *package;
}

Result<std::vector<Entry>> package_entries(const Entry& entry, const Source& source,
                                           std::string_view expected) {
  if (entry.value.is_null()) return std::vector<Entry>{};
  if (!entry.value.is_mapping()) return wrong_value(source, entry, entry.key, expected);
  return yaml::entries_of(entry.value, source, entry.key);
}

Result<void> read_requires(const Entry& entry, const Source& source, Manifest& manifest) {
  auto packages =
      package_entries(entry, source, "a mapping of package names to version specifiers");
  if (!packages) return packages.error();
  std::map<std::string, int> first_line;
  for (const Entry& package : *packages) {
    auto name = read_package_key(package, source, "requires", first_line);
    if (!name) return name.error();
    // `cudnn:` with no specifier: any version.
    specs::VersionSpec spec;
    if (!package.value.is_null()) {
      auto read = read_spec(source, package, path_of("requires", *name),
                            "a version specifier such as `>=8.9,<9`");
      if (!read) return read.error();
      spec = *std::move(read);
    }
    manifest.requires_.emplace(*std::move(name), std::move(spec));
  }
  return {};
}

constexpr std::string_view kExternalHint =
    "write the version the machine has (`3.6.9`), `system` to find it on the host, or a path "
    "such as `/usr/bin/python3`";

// `system`, a path (anything with a slash), or the exact version provided.
Result<ExternalSource> read_external_source(const Entry& entry, const Source& source,
                                            std::string_view path) {
  constexpr std::string_view expected = "a version, `system` or a path";
  const yaml::Node& value = entry.value;
  if (!value.is_scalar() || text::trim(value.text()).empty()) {
    return wrong_value(source, entry, path, expected).hint(std::string(kExternalHint));
  }
  const std::string_view written = text::trim(value.text());
  if (text::iequals(written, "system")) return ExternalSource{ExternalSystem{}};
  if (written.find_first_of("/\\") != std::string_view::npos) {
    return ExternalSource{ExternalPath{fs::path(written)}};
  }
  auto version = specs::Version::parse(written);
  if (!version) {
    return wrong_value(source, entry, path, expected)
        .because(version.error().message())
        .hint(std::string(kExternalHint));
  }
  return ExternalSource{*std::move(version)};
}

Result<void> read_external(const Entry& entry, const Source& source, Manifest& manifest) {
  auto packages =
      package_entries(entry, source, "a mapping of package names to versions, `system` or paths");
  if (!packages) return packages.error();
  std::map<std::string, int> first_line;
  for (const Entry& package : *packages) {
    auto name = read_package_key(package, source, "external", first_line);
    if (!name) return name.error();
    auto provided = read_external_source(package, source, path_of("external", *name));
    if (!provided) return provided.error();
    manifest.external.emplace(*std::move(name), *std::move(provided));
  }
  return {};
}

// ---------------------------------------------------------------- platforms

Result<void> read_platforms(const Entry& entry, const Source& source, Manifest& manifest) {
  if (entry.value.is_sequence() && entry.value.size() == 0) {
    return wrong_value(source, entry, "platforms", "at least one platform")
        .hint("leave out `platforms:` to lock for this machine's platform");
  }
  return read_one_or_list(
      entry, source, "platforms", "a platform or a list of platforms, such as `[linux-x86_64]`",
      "a platform such as `linux-x86_64`", [&](const yaml::Node& item) -> Result<void> {
        auto platform = specs::parse_platform(item.text());
        if (!platform) return located(platform.error(), source.at(item));
        // Listing a platform twice asks for nothing more: keep the first.
        if (std::find(manifest.platforms.begin(), manifest.platforms.end(), *platform) ==
            manifest.platforms.end()) {
          manifest.platforms.push_back(*platform);
        }
        return {};
      });
}

// ------------------------------------------------------------------- system

Result<void> read_driver(const Entry& entry, const Source& source, SystemSection& system) {
  auto spec =
      read_spec(source, entry, "system.driver", "a version specifier such as `>=525.60.13`");
  if (!spec) return spec.error();
  system.driver = *std::move(spec);
  return {};
}

Result<void> read_glibc(const Entry& entry, const Source& source, SystemSection& system) {
  auto spec = read_spec(source, entry, "system.glibc", "a version specifier such as `>=2.28`");
  if (!spec) return spec.error();
  system.glibc = *std::move(spec);
  return {};
}

Result<void> read_cuda_arch(const Entry& entry, const Source& source, SystemSection& system) {
  auto read = read_one_or_list(
      entry, source, "system.cuda-arch",
      "a compute capability or a list of them, such as `[\"8.0\", \"9.0\"]`",
      "a compute capability such as `8.0`", [&](const yaml::Node& item) -> Result<void> {
        auto capability = specs::ComputeCapability::parse(item.text());
        if (!capability) return located(capability.error(), source.at(item));
        system.cuda_arch.push_back(*capability);
        return {};
      });
  if (!read) return read;
  // A set of GPUs: order and repeats carry no meaning.
  std::sort(system.cuda_arch.begin(), system.cuda_arch.end());
  system.cuda_arch.erase(std::unique(system.cuda_arch.begin(), system.cuda_arch.end()),
                         system.cuda_arch.end());
  return {};
}

constexpr Field<SystemSection> kSystemFields[] = {
    {"driver", read_driver},
    {"cuda-arch", read_cuda_arch},
    {"glibc", read_glibc},
};

Result<void> read_system(const Entry& entry, const Source& source, Manifest& manifest) {
  return read_section(entry, source, "a mapping with the keys `driver`, `cuda-arch` and `glibc`",
                      kSystemFields, manifest.system);
}

// -------------------------------------------------------------------- smoke

std::optional<int> positive_integer(std::string_view text) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) != 0;
      })) {
    return std::nullopt;
  }
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value <= 0) return std::nullopt;
  return value;
}

Result<void> read_steps(const Entry& entry, const Source& source, SmokeOptions& smoke) {
  const auto steps =
      entry.value.is_scalar() ? positive_integer(entry.value.text()) : std::optional<int>{};
  if (!steps) {
    return wrong_value(source, entry, "smoke.steps", "a positive integer")
        .hint(fmt::format("a number of training steps from 1 to {}, such as `200`",
                          std::numeric_limits<int>::max()));
  }
  smoke.steps = *steps;
  return {};
}

constexpr Field<SmokeOptions> kSmokeFields[] = {
    {"steps", read_steps},
};

Result<void> read_smoke(const Entry& entry, const Source& source, Manifest& manifest) {
  return read_section(entry, source, "a mapping such as `{ steps: 200 }`", kSmokeFields,
                      manifest.smoke);
}

// ------------------------------------------------------ python-requirements

Result<void> read_python_requirements(const Entry& entry, const Source& source,
                                      Manifest& manifest) {
  constexpr std::string_view path = "python-requirements";
  return read_one_or_list(entry, source, path, "a file name or a list of file names", "a file name",
                          [&](const yaml::Node& item) -> Result<void> {
                            const std::string& file = item.text();
                            if (text::trim(file).empty()) {
                              return wrong_value(path, "a file name", item, source.at(item));
                            }
                            auto& files = manifest.python_requirements;
                            if (std::find(files.begin(), files.end(), file) == files.end()) {
                              files.push_back(file);
                            }
                            return {};
                          });
}

// ------------------------------------------------------------------ indexes

Result<void> read_indexes(const Entry& entry, const Source& source, Manifest& manifest) {
  constexpr std::string_view path = "indexes";
  return read_one_or_list(
      entry, source, path, "an index URL or a list of them", "an index URL",
      [&](const yaml::Node& item) -> Result<void> {
        const std::string written(text::trim(item.text()));
        if (!written.starts_with("http://") && !written.starts_with("https://") &&
            !written.starts_with("file://")) {
          return wrong_value(path, "an index URL such as `https://pypi.org/simple`", item,
                             source.at(item));
        }
        if (url::without_credentials(written) != written) {
          return Error::input(fmt::format("`indexes`: {} holds credentials",
                                          text::quoted(url::redacted(written))))
              .at(source.at(item))
              .hint(
                  "envkit.yaml is committed and shared: keep the password in ~/.netrc (pip and "
                  "envkit read it) and write the URL without `user:password@`");
        }
        auto& indexes = manifest.indexes;
        if (std::find(indexes.begin(), indexes.end(), written) == indexes.end()) {
          indexes.push_back(written);
        }
        return {};
      });
}

// -------------------------------------------------------------- only-binary

Result<void> read_only_binary(const Entry& entry, const Source& source, Manifest& manifest) {
  const auto& value = entry.value;
  const std::string text = value.is_scalar() ? value.text() : "";
  if (text != "true" && text != "false") {
    return wrong_value(source, entry, "only-binary", "`true` or `false`")
        .hint("`only-binary: true` locks wheels only; `false` (the default) also sdists");
  }
  manifest.only_binary = text == "true";
  return {};
}

// --------------------------------------------------------------- resolution

constexpr std::string_view kAsOfHint =
    "a day from 2015-01-01 to today, such as `2022-08-01`: build dependencies (setuptools, "
    "wheel, Cython) are taken as they were on that day";

Result<void> read_as_of(const Entry& entry, const Source& source, ResolutionOptions& resolution) {
  constexpr std::string_view path = "resolution.as-of";
  if (!entry.value.is_scalar() || text::trim(entry.value.text()).empty()) {
    return wrong_value(source, entry, path, "a date such as `2022-08-01`")
        .hint(std::string(kAsOfHint));
  }
  auto date = parse_as_of(entry.value.text(), today_utc());
  if (!date) {
    Error error = Error::input(fmt::format("{}: {}", text::quoted(path), date.error().message()));
    error.at(source.at(entry.value));
    for (const auto& hint : date.error().hints())
      error.hint(hint);
    return error;
  }
  resolution.as_of = *std::move(date);
  return {};
}

// A PEP 508 distribution name: letters and digits, with `.`, `_`, `-` inside.
bool is_package_name(std::string_view name) {
  const auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  return !name.empty() && alnum(name.front()) && alnum(name.back()) &&
         std::all_of(name.begin(), name.end(),
                     [&](char c) { return alnum(c) || c == '.' || c == '_' || c == '-'; });
}

Result<void> read_build_with_framework(const Entry& entry, const Source& source,
                                       ResolutionOptions& resolution) {
  constexpr std::string_view path = "resolution.build-with-framework";
  auto read = read_one_or_list(
      entry, source, path, "a package name or a list of them, such as `[mmcv]`", "a package name",
      [&](const yaml::Node& item) -> Result<void> {
        const std::string_view written = text::trim(item.text());
        if (!is_package_name(written)) {
          return wrong_value(path, "a Python package name such as `mmcv`", item, source.at(item));
        }
        resolution.build_with_framework.push_back(specs::canonical_package_name(written));
        return {};
      });
  if (!read) return read;
  auto& names = resolution.build_with_framework;
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return {};
}

constexpr Field<ResolutionOptions> kResolutionFields[] = {
    {"as-of", read_as_of},
    {"build-with-framework", read_build_with_framework},
};

Result<void> read_resolution(const Entry& entry, const Source& source, Manifest& manifest) {
  return read_section(entry, source,
                      "a mapping such as `{as-of: 2022-08-01, build-with-framework: [mmcv]}`",
                      kResolutionFields, manifest.resolution);
}

// ------------------------------------------------------------------ document

constexpr Field<Manifest> kManifestFields[] = {
    {"name", read_name},
    {"framework", read_framework},
    {"requires", read_requires},
    {"external", read_external},
    {"platforms", read_platforms},
    {"system", read_system},
    {"smoke", read_smoke},
    {"python-requirements", read_python_requirements},
    {"indexes", read_indexes},
    {"only-binary", read_only_binary},
    {"resolution", read_resolution},
};

Result<Manifest> read_manifest(const Source& source) {
  auto document = yaml::load_document(source);
  if (!document) return document.error();
  const yaml::Node& root = *document;
  if (root.is_null()) {
    return Error::input("manifest is empty")
        .at(source.whole_file())
        .hint(
            "write what the project needs, such as `framework: torch 2.1.*`, or list its "
            "packages under `requires:`");
  }
  if (!root.is_mapping()) {
    return Error::input(fmt::format("expected a mapping of manifest keys such as `framework:`, "
                                    "found {}",
                                    yaml::describe(root)))
        .at(source.at(root))
        .hint("write one `key: value` per line, such as `framework: torch 2.1.*`");
  }
  Manifest manifest;
  if (auto read = read_fields(root, source, "", kManifestFields, manifest); !read) {
    return read.error();
  }
  if (manifest.platforms.empty()) manifest.platforms.push_back(specs::host_platform());
  return manifest;
}

// The folder a manifest lives in names its project by default.
std::string directory_name(const fs::path& manifest_path) {
  std::error_code error;
  const fs::path absolute = fs::absolute(manifest_path, error);
  if (error) return {};
  return absolute.lexically_normal().parent_path().filename().string();
}

}  // namespace

FrameworkText split_framework(std::string_view written) {
  written = text::trim(written);
  const auto is_name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
  };
  const auto name_end = std::find_if_not(written.begin(), written.end(), is_name_char);
  return {std::string_view(written.begin(), name_end),
          text::trim(std::string_view(name_end, written.end()))};
}

Result<std::string> framework_name(std::string_view name) {
  const auto package = specs::known_package(name);
  if (!package) {
    Error error = Error::input(fmt::format("unknown framework {}", text::quoted(name)));
    if (auto hint = did_you_mean(name, specs::kFrameworks); !hint.empty()) return error.hint(hint);
    return error.hint(fmt::format("the frameworks are {}", yaml::quoted_list(specs::kFrameworks)));
  }
  if (!specs::is_framework(*package)) {
    return Error::input(fmt::format("{} is a package, not a framework", text::quoted(*package)))
        .hint(fmt::format("list {} under `requires:`; the frameworks are {}",
                          text::quoted(*package), yaml::quoted_list(specs::kFrameworks)));
  }
  return *package;
}

Result<std::string> parse_as_of(std::string_view written, std::string_view today) {
  written = text::trim(written);
  const auto digits = [&](std::size_t from, std::size_t count) -> std::optional<int> {
    int value = 0;
    for (std::size_t i = from; i < from + count; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(written[i]))) return std::nullopt;
      value = value * 10 + (written[i] - '0');
    }
    return value;
  };
  const bool shaped = written.size() == 10 && written[4] == '-' && written[7] == '-';
  const auto year = shaped ? digits(0, 4) : std::nullopt;
  const auto month = shaped ? digits(5, 2) : std::nullopt;
  const auto day = shaped ? digits(8, 2) : std::nullopt;
  if (!year || !month || !day) {
    return Error::input(
               fmt::format("expected a date such as `2022-08-01`, found {}", text::quoted(written)))
        .hint(std::string(kAsOfHint));
  }
  const bool leap = (*year % 4 == 0 && *year % 100 != 0) || *year % 400 == 0;
  constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (*month < 1 || *month > 12 || *day < 1 ||
      *day > kDays[*month - 1] + (*month == 2 && leap ? 1 : 0)) {
    return Error::input(fmt::format("{} is not a day of the calendar", text::quoted(written)))
        .hint(std::string(kAsOfHint));
  }
  if (written < "2015-01-01") {
    return Error::input(fmt::format("{} is before 2015", text::quoted(written)))
        .hint(
            "build tools of before 2015 (setuptools 11, no wheels of them) build nothing a lock "
            "can use; write a day from 2015-01-01 on, such as `2016-06-01`");
  }
  if (written > today) {
    return Error::input(
               fmt::format("{} is in the future (today is {})", text::quoted(written), today))
        .hint(
            "the date horizon is a day whose build tools exist; write today's date or an "
            "earlier one, or leave out `as-of` to use the upload date of the newest release the "
            "project pins");
  }
  return std::string(written);
}

std::string today_utc() {
  const auto now = std::chrono::system_clock::now();
  const std::chrono::year_month_day date{std::chrono::floor<std::chrono::days>(now)};
  return fmt::format("{:04}-{:02}-{:02}", static_cast<int>(date.year()),
                     static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()));
}

Result<Manifest> parse(std::string_view text, std::string_view file) {
  const Source source(text, file);
  // Bad input is an Error, never an exception; a bug must not leave this module either.
  try {
    return read_manifest(source);
  } catch (const std::exception& exception) {
    return Error::internal(fmt::format("cannot read the manifest: {}", exception.what()))
        .at(source.whole_file());
  }
}

Result<Manifest> load(const fs::path& path) {
  auto text = yaml::read_file(path);
  if (!text) return text.error();
  auto manifest = parse(*text, path.string());
  if (manifest && manifest->name.empty()) manifest->name = directory_name(path);
  return manifest;
}

}  // namespace envkit::manifest
