#include "envkit/lock/lockfile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <exception>
#include <functional>
#include <tuple>
#include <utility>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/specs/version_spec.hpp"
#include "envkit/sys/fs.hpp"
#include "yaml_source.hpp"

namespace envkit::lock {

namespace {

namespace fs = std::filesystem;
using specs::Artifact;
using yaml::Entry;
using yaml::Source;

constexpr std::string_view kHeader =
    "# envkit.lock: written by `envkit lock` from envkit.yaml. Do not edit by hand;\n"
    "# rerun `envkit lock`. Format: docs/lockfile.md\n";

constexpr std::string_view kHashPrefix = "sha256:";

bool is_prefixed_hash(std::string_view text) {
  return text.starts_with(kHashPrefix) && core::is_sha256_hex(text.substr(kHashPrefix.size()));
}

bool has_credentials(std::string_view url) {
  return url::without_credentials(url) != url;
}

// ------------------------------------------------------------------ writing

// Hashes are always quoted, whatever digit they start with, so that every
// hash of the file reads alike; anything else (a hash no reader would accept)
// goes through the ordinary quoting.
std::string hash_scalar(std::string_view hash) {
  const bool simple = std::all_of(hash.begin(), hash.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == ':';
  });
  return simple ? fmt::format("\"{}\"", hash) : yaml::scalar(hash);
}

void write_system(std::string& out, const SystemAssumptions& system) {
  out += "system:\n";
  out += fmt::format("  source: {}\n", specs::to_string(system.source));
  if (system.driver) out += fmt::format("  driver: {}\n", yaml::scalar(*system.driver));
  if (!system.cuda_arch.empty()) {
    out += fmt::format("  cuda-arch: {}\n", yaml::flow_list(system.cuda_arch, [](const auto& cc) {
                         return yaml::scalar(cc.to_string());
                       }));
  }
  if (system.glibc) out += fmt::format("  glibc: {}\n", yaml::scalar(*system.glibc));
}

void write_artifact(std::string& out, const Artifact& a) {
  constexpr std::string_view in = "            ";
  out += fmt::format("          - component: {}\n", yaml::scalar(a.component));
  out += fmt::format("{}kind: {}\n", in, specs::to_string(a.kind));
  out += fmt::format("{}format: {}\n", in, yaml::scalar(a.format));
  out += fmt::format("{}layout: {}\n", in, specs::to_string(a.layout));
  if (!a.wheel_root.empty())
    out += fmt::format("{}wheel-root: {}\n", in, yaml::scalar(a.wheel_root));
  if (a.build_system)
    out += fmt::format("{}build-system: {}\n", in, specs::to_string(*a.build_system));
  if (!a.components.empty()) {
    out +=
        fmt::format("{}components: {}\n", in,
                    yaml::flow_list(a.components, [](const auto& c) { return yaml::scalar(c); }));
  }
  // Credentials never reach a lock file: it is committed and shared.
  out += fmt::format("{}url: {}\n", in, yaml::scalar(url::without_credentials(a.url)));
  if (!a.also_at.empty()) {
    out += fmt::format("{}also-at:\n", in);
    for (const auto& other : a.also_at)
      out += fmt::format("{}  - {}\n", in, yaml::scalar(url::without_credentials(other)));
  }
  out += fmt::format("{}sha256: {}\n", in, hash_scalar(a.sha256));
  if (a.size) out += fmt::format("{}size: {}\n", in, *a.size);
  if (!a.patches.empty()) {
    out += fmt::format("{}patches:\n", in);
    for (const auto& patch : a.patches) {
      out += fmt::format("{}  - url: {}\n", in, yaml::scalar(url::without_credentials(patch.url)));
      out += fmt::format("{}    sha256: {}\n", in, hash_scalar(patch.sha256));
      if (patch.size) out += fmt::format("{}    size: {}\n", in, *patch.size);
    }
  }
}

void write_package(std::string& out, const LockedPackage& package) {
  constexpr std::string_view in = "        ";
  out += fmt::format("      - name: {}\n", yaml::scalar(package.name));
  out += fmt::format("{}version: {}\n", in, yaml::scalar(package.version.original()));
  if (!package.build.empty()) out += fmt::format("{}build: {}\n", in, yaml::scalar(package.build));
  if (package.external) out += fmt::format("{}external: {}\n", in, yaml::scalar(*package.external));
  if (!package.requires_.empty()) {
    out += fmt::format("{}requires:\n", in);
    for (const auto& [name, spec] : package.requires_)
      out += fmt::format("{}  {}: {}\n", in, yaml::scalar(name), yaml::scalar(spec));
  }
  if (!package.artifacts.empty()) {
    out += fmt::format("{}artifacts:\n", in);
    for (const auto& artifact : package.artifacts)
      write_artifact(out, artifact);
  }
}

void write_python(std::string& out, const PythonClosure& python) {
  constexpr std::string_view in = "          ";
  out += "    python:\n";
  out += fmt::format("      inputs: {}\n", hash_scalar(python.inputs));
  out += fmt::format("      resolver: {}\n", yaml::scalar(python.resolver));
  out += fmt::format("      python: {}\n", yaml::scalar(python.python));
  // Absent unless they decided something: locks without source builds read as before.
  if (!python.build_as_of.empty())
    out += fmt::format("      build-as-of: {}\n", yaml::scalar(python.build_as_of));
  if (!python.built_with_framework.empty()) {
    out += fmt::format("      built-with-framework: {}\n",
                       yaml::flow_list(python.built_with_framework,
                                       [](const auto& p) { return yaml::scalar(p); }));
  }
  if (python.packages.empty()) {
    out += "      packages: []\n";
    return;
  }
  out += "      packages:\n";
  for (const auto& wheel : python.packages) {
    out += fmt::format("        - name: {}\n", yaml::scalar(wheel.name));
    out += fmt::format("{}version: {}\n", in, yaml::scalar(wheel.version));
    // A wheel, the usual kind, goes unsaid: locks without sdists read as before.
    if (wheel.kind != Distribution::wheel)
      out += fmt::format("{}kind: {}\n", in, to_string(wheel.kind));
    out += fmt::format("{}url: {}\n", in, yaml::scalar(url::without_credentials(wheel.url)));
    out += fmt::format("{}sha256: {}\n", in, hash_scalar(wheel.sha256));
    if (wheel.size) out += fmt::format("{}size: {}\n", in, *wheel.size);
    if (!wheel.provides.empty())
      out += fmt::format("{}provides: {}\n", in, yaml::scalar(wheel.provides));
  }
}

void write_platform(std::string& out, const PlatformLock& platform) {
  out += fmt::format("  - platform: {}\n", specs::to_string(platform.platform));
  if (platform.packages.empty()) {
    out += "    packages: []\n";
  } else {
    out += "    packages:\n";
    for (const auto& package : platform.packages)
      write_package(out, package);
  }
  if (platform.python) write_python(out, *platform.python);
}

// ------------------------------------------------------------------ reading

// Where a value is; a missing value (`key:` and nothing) has no place of its
// own, so its key stands in.
SourceLocation where(const Source& source, const Entry& entry) {
  return source.at(entry.value.is_null() ? entry.key_node : entry.value);
}

Error wrong(std::string_view what, std::string_view expected, const yaml::Node& found,
            SourceLocation location) {
  return Error::input(fmt::format("{}: expected {}, found {}", text::quoted(what), expected,
                                  yaml::describe(found)))
      .at(std::move(location));
}

Error wrong(const Source& source, const Entry& entry, std::string_view what,
            std::string_view expected) {
  return wrong(what, expected, entry.value, where(source, entry));
}

// A located copy of an error from specs, which knows no files, prefixed with
// the key it is about.
Error located(const Error& cause, std::string_view what, SourceLocation location) {
  Error error = Error::input(fmt::format("{}: {}", text::quoted(what), cause.message()));
  error.at(std::move(location));
  for (const auto& because : cause.causes())
    error.because(because);
  for (const auto& hint : cause.hints())
    error.hint(hint);
  return error;
}

std::string path_of(std::string_view section, std::string_view key) {
  return fmt::format("{}.{}", section, key);
}

// One key of a mapping: whether it must be there, and how to read it.
struct Key {
  std::string_view name;
  bool required;
  std::function<Result<void>(const Entry&)> read;
};

// Reads the entries of `node` through `keys`: unknown keys get a did-you-mean,
// and the first required key that is missing is named, at `missing_at`, as
// "<what> needs `key:`". `section` names the mapping in messages ("" at the top).
Result<void> read_mapping(const Source& source, const yaml::Node& node,
                          const SourceLocation& node_at, std::string_view section,
                          std::string_view what, const SourceLocation& missing_at,
                          const std::vector<Key>& keys) {
  if (!node.is_mapping()) return wrong(section, "a mapping", node, node_at);
  auto entries = yaml::entries_of(node, source, section);
  if (!entries) return entries.error();
  std::vector<bool> seen(keys.size(), false);
  for (const auto& entry : *entries) {
    const auto it = std::find_if(keys.begin(), keys.end(),
                                 [&](const Key& key) { return key.name == entry.key; });
    if (it == keys.end()) {
      std::vector<std::string_view> names;
      for (const auto& key : keys)
        names.push_back(key.name);
      const std::string in_section = section.empty() ? "" : " in " + text::quoted(section);
      Error error =
          Error::input(fmt::format("unknown key {}{}", text::quoted(entry.key), in_section));
      error.at(source.at(entry.key_node));
      if (auto guess = text::did_you_mean(entry.key, names)) {
        return error.hint(fmt::format("did you mean {}?", text::quoted(*guess)));
      }
      const std::string of_section = section.empty() ? "" : " of " + text::quoted(section);
      return error.hint(fmt::format("the keys{} are {}", of_section, yaml::quoted_list(names)));
    }
    seen[static_cast<std::size_t>(it - keys.begin())] = true;
    if (auto read = it->read(entry); !read) return read;
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].required && !seen[i]) {
      return Error::input(fmt::format("{} needs `{}:`", what, keys[i].name)).at(missing_at);
    }
  }
  return {};
}

// A list whose items are each read by `item`; a missing value (`key:` and
// nothing) is an empty list.
Result<void> read_list(const Source& source, const Entry& entry, std::string_view what,
                       const std::function<Result<void>(const yaml::Node&)>& item) {
  if (entry.value.is_null()) return {};
  if (!entry.value.is_sequence()) return wrong(source, entry, what, "a list");
  for (const auto& node : entry.value) {
    if (auto read = item(node); !read) return read;
  }
  return {};
}

Result<std::string> read_text(const Source& source, const Entry& entry, std::string_view what,
                              std::string_view expected = "a string") {
  if (!entry.value.is_scalar() || entry.value.text().empty()) {
    return wrong(source, entry, what, expected);
  }
  return entry.value.text();
}

// `version: 1`: the format of the lock.
Result<int> read_format(const Source& source, const Entry& entry) {
  constexpr std::string_view expected = "a lock format number such as `1`";
  if (!entry.value.is_scalar()) return wrong(source, entry, "version", expected);
  const std::string& written = entry.value.text();
  const bool digits = !written.empty() && std::all_of(written.begin(), written.end(),
                                                      [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) return wrong(source, entry, "version", expected);
  int format = 0;
  const auto [end, error] =
      std::from_chars(written.data(), written.data() + written.size(), format);
  if (error == std::errc::result_out_of_range ||
      (error == std::errc{} && format > kFormatVersion)) {
    return Error::input(fmt::format("lock format {} is newer than this envkit understands ({})",
                                    written, kFormatVersion))
        .at(source.at(entry.value))
        .hint("the lock was written by a newer envkit: upgrade envkit to read it");
  }
  if (error != std::errc{} || end != written.data() + written.size() || format < 1) {
    return wrong(source, entry, "version", expected);
  }
  return format;
}

// `sha256:<64 lowercase hex>`.
Result<std::string> read_prefixed_hash(const Source& source, const Entry& entry,
                                       std::string_view what) {
  if (!entry.value.is_scalar() || !is_prefixed_hash(entry.value.text())) {
    return wrong(source, entry, what, "`sha256:` and 64 lowercase hex digits");
  }
  return entry.value.text();
}

Result<void> read_recipes(const Source& source, const Entry& entry, Lockfile& lock) {
  if (entry.value.is_null()) return {};
  if (!entry.value.is_mapping()) {
    return wrong(source, entry, "recipes", "a mapping of packages to recipe hashes");
  }
  auto recipes = yaml::entries_of(entry.value, source, "recipes");
  if (!recipes) return recipes.error();
  for (const auto& recipe : *recipes) {
    auto hash = read_prefixed_hash(source, recipe, path_of("recipes", recipe.key));
    if (!hash) return hash.error();
    lock.recipes.emplace(recipe.key, *std::move(hash));
  }
  return {};
}

Result<void> read_index_facts(const Source& source, const Entry& entry, Lockfile& lock) {
  if (entry.value.is_null()) return {};
  if (!entry.value.is_mapping()) {
    return wrong(source, entry, "index-facts", "a mapping of packages to the index they came from");
  }
  auto facts = yaml::entries_of(entry.value, source, "index-facts");
  if (!facts) return facts.error();
  for (const auto& fact : *facts) {
    if (!fact.value.is_scalar() || fact.value.text().empty()) {
      return wrong(source, fact, path_of("index-facts", fact.key), "the index and the day read");
    }
    lock.index_facts.emplace(fact.key, fact.value.text());
  }
  return {};
}

// A driver or glibc fact: a specifier (`>=2.28`) or a version (`535.104.05`).
Result<std::string> read_fact(const Source& source, const Entry& entry, std::string_view what) {
  auto written = read_text(source, entry, what, "a version specifier or a version");
  if (!written) return written.error();
  auto spec = specs::VersionSpec::parse(*written, specs::SpecSyntax::envkit);
  if (!spec) return located(spec.error(), what, source.at(entry.value));
  return written;
}

Result<void> read_system(const Source& source, const Entry& entry, SystemAssumptions& system) {
  return read_mapping(
      source, entry.value, where(source, entry), "system", "`system`", where(source, entry),
      {{"source", true,
        [&](const Entry& e) -> Result<void> {
          constexpr std::string_view expected = "`manifest`, `override`, `host` or `none`";
          const auto read =
              e.value.is_scalar() ? specs::parse_fact_source(e.value.text()) : std::nullopt;
          if (!read) return wrong(source, e, "system.source", expected);
          system.source = *read;
          return {};
        }},
       {"driver", false,
        [&](const Entry& e) -> Result<void> {
          auto driver = read_fact(source, e, "system.driver");
          if (!driver) return driver.error();
          system.driver = *std::move(driver);
          return {};
        }},
       {"cuda-arch", false,
        [&](const Entry& e) {
          return read_list(
              source, e, "system.cuda-arch", [&](const yaml::Node& item) -> Result<void> {
                auto cc = specs::ComputeCapability::parse(item.is_scalar() ? item.text() : "");
                if (!cc) return located(cc.error(), "system.cuda-arch", source.at(item));
                system.cuda_arch.push_back(*cc);
                return {};
              });
        }},
       {"glibc", false, [&](const Entry& e) -> Result<void> {
          auto glibc = read_fact(source, e, "system.glibc");
          if (!glibc) return glibc.error();
          system.glibc = *std::move(glibc);
          return {};
        }}});
}

Result<std::string> read_url(const Source& source, const Entry& e) {
  auto value = read_text(source, e, "url", "a URL");
  if (!value) return value.error();
  if (has_credentials(*value)) {
    return Error::input(fmt::format("`url`: {} holds credentials, which a lock file never does",
                                    text::quoted(url::redacted(*value))))
        .at(source.at(e.value))
        .hint(
            "remove the `user:password@` part: the lock is committed and shared, and "
            "`envkit lock` writes URLs without credentials");
  }
  return value;
}

Result<std::string> read_sha256(const Source& source, const Entry& e) {
  if (!e.value.is_scalar() || !core::is_sha256_hex(e.value.text())) {
    return wrong(source, e, "sha256", "64 lowercase hex digits");
  }
  return e.value.text();
}

Result<std::uint64_t> read_size(const Source& source, const Entry& e) {
  std::uint64_t size = 0;
  const std::string& s = e.value.is_scalar() ? e.value.text() : std::string();
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), size);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) {
    return wrong(source, e, "size", "a number of bytes");
  }
  return size;
}

// Binds a key to a string field through one of the readers above.
template <typename Reader>
std::function<Result<void>(const Entry&)> into(std::string& field, Reader reader) {
  return [&field, reader](const Entry& e) -> Result<void> {
    auto value = reader(e);
    if (!value) return value.error();
    field = *std::move(value);
    return {};
  };
}

// `components:` of a runfile: names, each once.
Result<void> read_components(const Source& source, const Entry& entry,
                             std::vector<std::string>& out) {
  return read_list(source, entry, "components", [&](const yaml::Node& item) -> Result<void> {
    if (!item.is_scalar() || item.text().empty()) {
      return wrong("components", "a component name", item, source.at(item));
    }
    if (std::find(out.begin(), out.end(), item.text()) != out.end()) {
      return Error::input(fmt::format("`components` names {} twice", text::quoted(item.text())))
          .at(source.at(item));
    }
    out.push_back(item.text());
    return {};
  });
}

// One item of a runfile's `patches:`, applied in the order listed.
Result<specs::RunfilePatch> read_patch(const Source& source, const yaml::Node& node) {
  specs::RunfilePatch patch;
  auto read = read_mapping(
      source, node, source.at(node), "patches", "a patch", source.at(node),
      {{"url", true, into(patch.url, [&](const Entry& e) { return read_url(source, e); })},
       {"sha256", true, into(patch.sha256, [&](const Entry& e) { return read_sha256(source, e); })},
       {"size", false, [&](const Entry& e) -> Result<void> {
          auto size = read_size(source, e);
          if (!size) return size.error();
          patch.size = *size;
          return {};
        }}});
  if (!read) return read.error();
  return patch;
}

Result<Artifact> read_artifact(const Source& source, const yaml::Node& node) {
  Artifact a;
  const auto text_field = [&](std::string& field) {
    return [&](const Entry& e) -> Result<void> {
      auto value = read_text(source, e, e.key);
      if (!value) return value.error();
      field = *std::move(value);
      return {};
    };
  };
  auto read = read_mapping(
      source, node, source.at(node), "artifacts", "an artifact", source.at(node),
      {{"component", true, text_field(a.component)},
       {"kind", true,
        [&](const Entry& e) -> Result<void> {
          auto kind = specs::parse_artifact_kind(e.value.is_scalar() ? e.value.text() : "");
          if (!kind) return wrong(source, e, "kind", "archive, wheel, runfile or source");
          a.kind = *kind;
          return {};
        }},
       {"format", true, text_field(a.format)},
       {"layout", true,
        [&](const Entry& e) -> Result<void> {
          auto layout = specs::parse_layout(e.value.is_scalar() ? e.value.text() : "");
          if (!layout) {
            return wrong(source, e, "layout", specs::layout_choices());
          }
          a.layout = *layout;
          return {};
        }},
       {"wheel-root", false, text_field(a.wheel_root)},
       {"build-system", false,
        [&](const Entry& e) -> Result<void> {
          auto build_system = specs::parse_build_system(e.value.is_scalar() ? e.value.text() : "");
          if (!build_system) return wrong(source, e, "build-system", "configure or cmake");
          a.build_system = *build_system;
          return {};
        }},
       {"components", false,
        [&](const Entry& e) { return read_components(source, e, a.components); }},
       {"url", true, into(a.url, [&](const Entry& e) { return read_url(source, e); })},
       {"also-at", false,
        [&](const Entry& e) {
          return read_list(source, e, "also-at", [&](const yaml::Node& item) -> Result<void> {
            const Entry url_entry{.key = "also-at", .key_node = e.key_node, .value = item};
            auto url = read_url(source, url_entry);
            if (!url) return url.error();
            a.also_at.push_back(*std::move(url));
            return {};
          });
        }},
       {"sha256", true, into(a.sha256, [&](const Entry& e) { return read_sha256(source, e); })},
       {"size", false,
        [&](const Entry& e) -> Result<void> {
          auto size = read_size(source, e);
          if (!size) return size.error();
          a.size = *size;
          return {};
        }},
       {"patches", false, [&](const Entry& e) {
          return read_list(source, e, "patches", [&](const yaml::Node& item) -> Result<void> {
            auto patch = read_patch(source, item);
            if (!patch) return patch.error();
            a.patches.push_back(*std::move(patch));
            return {};
          });
        }}});
  if (!read) return read.error();
  return a;
}

Result<LockedPackage> read_package(const Source& source, const yaml::Node& node,
                                   yaml::Mark& name_mark) {
  LockedPackage package{.name = {},
                        .version = specs::Version::from_release({0}),
                        .build = {},
                        .external = {},
                        .requires_ = {},
                        .artifacts = {}};
  auto read = read_mapping(
      source, node, source.at(node), "packages", "a package", source.at(node),
      {{"name", true,
        [&](const Entry& e) -> Result<void> {
          auto name = read_text(source, e, "name", "a package name");
          if (!name) return name.error();
          package.name = *std::move(name);
          name_mark = e.value.mark();
          return {};
        }},
       {"version", true,
        [&](const Entry& e) -> Result<void> {
          if (!e.value.is_scalar()) return wrong(source, e, "version", "a version");
          auto version = specs::Version::parse(e.value.text());
          if (!version) return located(version.error(), "version", source.at(e.value));
          package.version = *std::move(version);
          return {};
        }},
       {"build", false,
        [&](const Entry& e) -> Result<void> {
          auto build = read_text(source, e, "build", "a build id");
          if (!build) return build.error();
          package.build = *std::move(build);
          return {};
        }},
       {"external", false,
        [&](const Entry& e) -> Result<void> {
          auto external = read_text(source, e, "external", "a version, `system` or a path");
          if (!external) return external.error();
          package.external = *std::move(external);
          return {};
        }},
       {"requires", false,
        [&](const Entry& e) -> Result<void> {
          if (e.value.is_null()) return {};
          if (!e.value.is_mapping()) {
            return wrong(source, e, "requires", "a mapping of packages to version specifiers");
          }
          auto requirements = yaml::entries_of(e.value, source, "requires");
          if (!requirements) return requirements.error();
          for (const auto& requirement : *requirements) {
            const std::string what = path_of("requires", requirement.key);
            const yaml::Node& value = requirement.value;
            if (!value.is_null() && !value.is_scalar()) {
              return wrong(source, requirement, what, "a version specifier");
            }
            const std::string spec_text = value.is_null() ? "" : value.text();
            if (auto spec = specs::VersionSpec::parse(spec_text); !spec) {
              return located(spec.error(), what, where(source, requirement));
            }
            package.requires_.emplace(requirement.key, spec_text);
          }
          return {};
        }},
       {"artifacts", false, [&](const Entry& e) {
          return read_list(source, e, "artifacts", [&](const yaml::Node& item) -> Result<void> {
            auto artifact = read_artifact(source, item);
            if (!artifact) return artifact.error();
            package.artifacts.push_back(*std::move(artifact));
            return {};
          });
        }}});
  if (!read) return read.error();
  return package;
}

Result<PythonWheel> read_python_wheel(const Source& source, const yaml::Node& node) {
  PythonWheel wheel;
  const auto text = [&](std::string_view what) {
    return [&source, what](const Entry& e) { return read_text(source, e, what); };
  };
  auto read = read_mapping(
      source, node, source.at(node), "python.packages", "a Python package", source.at(node),
      {{"name", true, into(wheel.name, text("name"))},
       {"version", true, into(wheel.version, text("version"))},
       {"kind", false,
        [&](const Entry& e) -> Result<void> {
          auto kind = parse_distribution(e.value.is_scalar() ? e.value.text() : "");
          if (!kind) return wrong(source, e, "kind", "wheel or sdist");
          wheel.kind = *kind;
          return {};
        }},
       {"url", true, into(wheel.url, [&](const Entry& e) { return read_url(source, e); })},
       {"sha256", true, into(wheel.sha256, [&](const Entry& e) { return read_sha256(source, e); })},
       {"size", false,
        [&](const Entry& e) -> Result<void> {
          auto size = read_size(source, e);
          if (!size) return size.error();
          wheel.size = *size;
          return {};
        }},
       {"provides", false, into(wheel.provides, text("provides"))}});
  if (!read) return read.error();
  return wheel;
}

Result<PythonClosure> read_python(const Source& source, const Entry& entry) {
  PythonClosure python;
  const auto text = [&](std::string_view what) {
    return [&source, what](const Entry& e) { return read_text(source, e, what); };
  };
  std::map<std::string, int> first_line;
  auto read = read_mapping(
      source, entry.value, where(source, entry), "python", "`python`", where(source, entry),
      {{"inputs", true,
        into(python.inputs,
             [&](const Entry& e) { return read_prefixed_hash(source, e, "python.inputs"); })},
       {"resolver", true, into(python.resolver, text("python.resolver"))},
       {"python", true, into(python.python, text("python.python"))},
       {"build-as-of", false, into(python.build_as_of, text("python.build-as-of"))},
       {"built-with-framework", false,
        [&](const Entry& e) -> Result<void> {
          return read_list(source, e, "python.built-with-framework",
                           [&](const yaml::Node& item) -> Result<void> {
                             if (!item.is_scalar() || item.text().empty()) {
                               return wrong("python.built-with-framework", "a package name", item,
                                            source.at(item));
                             }
                             python.built_with_framework.push_back(item.text());
                             return {};
                           });
        }},
       {"packages", true, [&](const Entry& e) {
          return read_list(
              source, e, "python.packages", [&](const yaml::Node& item) -> Result<void> {
                auto wheel = read_python_wheel(source, item);
                if (!wheel) return wheel.error();
                const SourceLocation at = source.at(item);
                const auto [previous, inserted] = first_line.emplace(wheel->name, at.line);
                if (!inserted) {
                  return Error::input(fmt::format("duplicate Python package {} (first on line {})",
                                                  text::quoted(wheel->name), previous->second))
                      .at(at)
                      .hint("a closure holds one version of each package");
                }
                python.packages.push_back(*std::move(wheel));
                return {};
              });
        }}});
  if (!read) return read.error();
  return python;
}

Result<PlatformLock> read_platform(const Source& source, const yaml::Node& node,
                                   yaml::Mark& platform_mark) {
  PlatformLock platform;
  std::vector<yaml::Mark> name_marks;  // where each package's name is written
  auto read = read_mapping(
      source, node, source.at(node), "platforms", "a platform entry", source.at(node),
      {{"platform", true,
        [&](const Entry& e) -> Result<void> {
          if (!e.value.is_scalar()) return wrong(source, e, "platform", "a platform");
          auto parsed = specs::parse_platform(e.value.text());
          if (!parsed) {
            Error error = parsed.error();
            error.at(source.at(e.value));
            return error;
          }
          platform.platform = *parsed;
          platform_mark = e.value.mark();
          return {};
        }},
       {"packages", true,
        [&](const Entry& e) {
          return read_list(source, e, "packages", [&](const yaml::Node& item) -> Result<void> {
            yaml::Mark name_mark;
            auto package = read_package(source, item, name_mark);
            if (!package) return package.error();
            platform.packages.push_back(*std::move(package));
            name_marks.push_back(name_mark);
            return {};
          });
        }},
       {"python", false, [&](const Entry& e) -> Result<void> {
          auto python = read_python(source, e);
          if (!python) return python.error();
          platform.python = *std::move(python);
          return {};
        }}});
  if (!read) return read.error();
  // Checked once the platform is known, whatever order the keys came in.
  std::map<std::string, int> first_line;
  for (std::size_t i = 0; i < platform.packages.size(); ++i) {
    const std::string& name = platform.packages[i].name;
    const SourceLocation at = source.at(name_marks[i]);
    const auto [previous, inserted] = first_line.emplace(name, at.line);
    if (!inserted) {
      return Error::input(fmt::format("duplicate package {} in platform {} (first on line {})",
                                      text::quoted(name),
                                      text::quoted(specs::to_string(platform.platform)),
                                      previous->second))
          .at(at)
          .hint(fmt::format("a platform locks one version of {}", text::quoted(name)));
    }
  }
  // The enclosing platform says where each artifact belongs.
  for (auto& package : platform.packages) {
    for (auto& artifact : package.artifacts)
      artifact.platform = platform.platform;
  }
  return platform;
}

Result<void> read_platforms(const Source& source, const Entry& entry, Lockfile& lock) {
  std::map<specs::Platform, int> first_line;
  return read_list(source, entry, "platforms", [&](const yaml::Node& item) -> Result<void> {
    yaml::Mark platform_mark;
    auto platform = read_platform(source, item, platform_mark);
    if (!platform) return platform.error();
    const SourceLocation at = source.at(platform_mark);
    const auto [previous, inserted] = first_line.emplace(platform->platform, at.line);
    if (!inserted) {
      return Error::input(fmt::format("duplicate platform {} (first on line {})",
                                      text::quoted(specs::to_string(platform->platform)),
                                      previous->second))
          .at(at)
          .hint("a lock has one entry per platform");
    }
    lock.platforms.push_back(*std::move(platform));
    return {};
  });
}

Result<Lockfile> read_lock(const Source& source) {
  auto document = yaml::load_document(source);
  if (!document) return document.error();
  const yaml::Node& root = *document;
  if (root.is_null()) {
    return Error::input("the lock file is empty")
        .at(source.whole_file())
        .hint("run `envkit lock` to write it");
  }
  if (!root.is_mapping()) {
    return Error::input(fmt::format("expected a mapping of lock keys such as `version:`, found {}",
                                    yaml::describe(root)))
        .at(source.at(root));
  }
  // The format comes first: a newer lock may have keys this envkit does not know.
  auto entries = yaml::entries_of(root, source, "");
  if (!entries) return entries.error();
  for (const auto& entry : *entries) {
    if (entry.key != "version") continue;
    if (auto format = read_format(source, entry); !format) return format.error();
  }

  Lockfile lock;
  auto read = read_mapping(
      source, root, source.at(root), "", "a lock", source.whole_file(),
      {{"version", true,
        [&](const Entry& e) -> Result<void> {
          auto format = read_format(source, e);
          if (!format) return format.error();
          lock.version = *format;
          return {};
        }},
       {"manifest-hash", true,
        [&](const Entry& e) -> Result<void> {
          auto hash = read_prefixed_hash(source, e, "manifest-hash");
          if (!hash) return hash.error();
          lock.manifest_hash = *std::move(hash);
          return {};
        }},
       {"recipes", true, [&](const Entry& e) { return read_recipes(source, e, lock); }},
       {"index-facts", false, [&](const Entry& e) { return read_index_facts(source, e, lock); }},
       {"system", true, [&](const Entry& e) { return read_system(source, e, lock.system); }},
       {"platforms", true, [&](const Entry& e) { return read_platforms(source, e, lock); }}});
  if (!read) return read.error();
  return lock;
}

}  // namespace

std::string_view to_string(Distribution kind) {
  return kind == Distribution::sdist ? "sdist" : "wheel";
}

std::optional<Distribution> parse_distribution(std::string_view text) {
  if (text == "wheel") return Distribution::wheel;
  if (text == "sdist") return Distribution::sdist;
  return std::nullopt;
}

specs::Artifact wheel_artifact(const PythonWheel& wheel, specs::Platform platform) {
  const bool sdist = wheel.kind == Distribution::sdist;
  return specs::Artifact{.platform = platform,
                         .component = wheel.name,
                         .kind = sdist ? specs::ArtifactKind::source : specs::ArtifactKind::wheel,
                         .url = wheel.url,
                         .sha256 = wheel.sha256,
                         .size = wheel.size,
                         .format = sdist ? "sdist" : "whl",
                         .layout = specs::Layout::none,
                         .wheel_root = {}};
}

int format_needed(const Lockfile& lockfile) {
  for (const auto& platform : lockfile.platforms) {
    // A closure's source builds in the project's era (`build-as-of`, `built-with-framework`).
    if (const auto& python = platform.python;
        python && (!python->build_as_of.empty() || !python->built_with_framework.empty()))
      return 2;
    for (const auto& package : platform.packages) {
      for (const auto& artifact : package.artifacts) {
        if (!artifact.also_at.empty()) return 2;
      }
    }
  }
  return 1;
}

void canonicalize(Lockfile& lockfile) {
  auto& arch = lockfile.system.cuda_arch;
  std::sort(arch.begin(), arch.end());
  arch.erase(std::unique(arch.begin(), arch.end()), arch.end());
  std::stable_sort(lockfile.platforms.begin(), lockfile.platforms.end(),
                   [](const PlatformLock& a, const PlatformLock& b) {
                     return specs::to_string(a.platform) < specs::to_string(b.platform);
                   });
  for (auto& platform : lockfile.platforms) {
    if (platform.python) {
      auto& wheels = platform.python->packages;
      std::stable_sort(wheels.begin(), wheels.end(),
                       [](const PythonWheel& a, const PythonWheel& b) { return a.name < b.name; });
    }
    std::stable_sort(
        platform.packages.begin(), platform.packages.end(),
        [](const LockedPackage& a, const LockedPackage& b) { return a.name < b.name; });
    for (auto& package : platform.packages) {
      // Components are a set (sorted); patches keep their order, which is the order applied.
      for (auto& artifact : package.artifacts) {
        artifact.platform = platform.platform;
        std::sort(artifact.components.begin(), artifact.components.end());
      }
      std::stable_sort(package.artifacts.begin(), package.artifacts.end(),
                       [](const Artifact& a, const Artifact& b) {
                         return std::make_tuple(std::string_view(a.component),
                                                specs::to_string(a.kind), std::string_view(a.url)) <
                                std::make_tuple(std::string_view(b.component),
                                                specs::to_string(b.kind), std::string_view(b.url));
                       });
    }
  }
}

std::string write(const Lockfile& lockfile) {
  Lockfile lock = lockfile;
  canonicalize(lock);
  std::string out(kHeader);
  out += fmt::format("version: {}\n", std::max(lock.version, format_needed(lock)));
  out += fmt::format("manifest-hash: {}\n", hash_scalar(lock.manifest_hash));
  if (lock.recipes.empty()) {
    out += "recipes: {}\n";
  } else {
    out += "recipes:\n";
    for (const auto& [name, hash] : lock.recipes)
      out += fmt::format("  {}: {}\n", yaml::scalar(name), hash_scalar(hash));
  }
  if (!lock.index_facts.empty()) {
    out += "index-facts:\n";
    for (const auto& [name, source] : lock.index_facts)
      out += fmt::format("  {}: {}\n", yaml::scalar(name), yaml::scalar(source));
  }
  write_system(out, lock.system);
  if (lock.platforms.empty()) {
    out += "platforms: []\n";
  } else {
    out += "platforms:\n";
    for (const auto& platform : lock.platforms)
      write_platform(out, platform);
  }
  return out;
}

Result<Lockfile> parse(std::string_view text, std::string_view file) {
  const Source source(text, file);
  // Bad input is an Error, never an exception; a bug must not leave this module either.
  try {
    return read_lock(source);
  } catch (const std::exception& exception) {
    return Error::internal(fmt::format("cannot read the lock: {}", exception.what()))
        .at(source.whole_file());
  }
}

Result<Lockfile> load(const fs::path& path) {
  std::error_code error;
  if (!fs::exists(path, error) && !error) {
    return Error::input(fmt::format("{} does not exist", path.string()))
        .hint("run `envkit lock` to write it");
  }
  auto text = yaml::read_file(path);
  if (!text) return text.error();
  return parse(*text, path.string());
}

Staleness compare(const Lockfile& lockfile, std::string_view manifest_hash,
                  const std::map<std::string, std::string>& recipe_hashes) {
  Staleness staleness;
  if (lockfile.manifest_hash != manifest_hash) {
    staleness.reasons.push_back(
        "the manifest changed since the lock was written (envkit.yaml content hash differs)");
  }
  // Both maps are sorted by name: walk them together, in name order.
  auto locked = lockfile.recipes.begin();
  auto current = recipe_hashes.begin();
  while (locked != lockfile.recipes.end() || current != recipe_hashes.end()) {
    if (current == recipe_hashes.end() ||
        (locked != lockfile.recipes.end() && locked->first < current->first)) {
      staleness.reasons.push_back(fmt::format("recipe {} is no longer in the recipe database",
                                              text::quoted(locked->first)));
      ++locked;
    } else if (locked == lockfile.recipes.end() || current->first < locked->first) {
      staleness.reasons.push_back(fmt::format("recipe {} is new", text::quoted(current->first)));
      ++current;
    } else {
      if (locked->second != current->second) {
        staleness.reasons.push_back(
            fmt::format("recipe {} changed in the recipe database", text::quoted(locked->first)));
      }
      ++locked;
      ++current;
    }
  }
  return staleness;
}

}  // namespace envkit::lock
