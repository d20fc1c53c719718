// pip's installation report (`pip install --report`), format version 1.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/python/pip.hpp"
#include "envkit/python/wheel_filename.hpp"
#include "envkit/specs/package_name.hpp"
#include "tool_output.hpp"

namespace envkit::python {

namespace {

using nlohmann::json;

Error bad_report(std::string_view source, std::string what) {
  return Error::input(fmt::format("{}: {}", text::quoted(source), std::move(what)));
}

bool is_sha256(std::string_view hex) {
  return hex.size() == 64 && std::all_of(hex.begin(), hex.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
         });
}

const json* member(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::optional<std::string> string_member(const json& object, const char* key) {
  const json* value = member(object, key);
  if (!value || !value->is_string()) return std::nullopt;
  return value->get<std::string>();
}

// The sha256 of download_info.archive_info: `hashes.sha256`, else `hash` "sha256=...".
std::optional<std::string> archive_sha256(const json& archive_info) {
  if (const json* hashes = member(archive_info, "hashes")) {
    if (auto sha = string_member(*hashes, "sha256")) return sha;
  }
  if (auto hash = string_member(archive_info, "hash")) {
    constexpr std::string_view kPrefix = "sha256=";
    if (hash->starts_with(kPrefix)) return hash->substr(kPrefix.size());
  }
  return std::nullopt;
}

Result<ResolvedWheel> read_item(const json& item, std::size_t index, std::string_view source) {
  std::string where = fmt::format("install[{}]", index);
  auto bad = [&](std::string what) {
    return bad_report(source, fmt::format("{}: {}", where, what));
  };
  const json* metadata = member(item, "metadata");
  if (!metadata || !metadata->is_object()) return bad("no `metadata` object");
  const auto name = string_member(*metadata, "name");
  const auto version = string_member(*metadata, "version");
  if (!name || name->empty()) return bad("no `metadata.name`");
  if (!version || version->empty()) return bad("no `metadata.version`");
  where += fmt::format(" ({} {})", text::quoted(*name), *version);

  ResolvedWheel wheel;
  wheel.name = specs::canonical_package_name(*name);
  wheel.version = *version;
  if (const json* requires_dist = member(*metadata, "requires_dist")) {
    if (!requires_dist->is_array()) return bad("`metadata.requires_dist` is not a list");
    for (const auto& line : *requires_dist) {
      if (!line.is_string()) return bad("`metadata.requires_dist` holds something not a string");
      wheel.requires_dist.push_back(line.get<std::string>());
    }
  }
  if (const json* requested = member(item, "requested")) {
    if (!requested->is_boolean()) return bad("`requested` is not true or false");
    wheel.requested = requested->get<bool>();
  }

  const json* download = member(item, "download_info");
  if (!download || !download->is_object()) return bad("no `download_info`");
  const auto link = string_member(*download, "url");
  if (!link || link->empty()) return bad("no `download_info.url`");
  const std::string shown_url = url::redacted(*link);
  if (member(*download, "dir_info") || member(*download, "vcs_info")) {
    return bad(fmt::format("{} is a {}, not a wheel", text::quoted(shown_url),
                           member(*download, "dir_info") ? "local folder" : "VCS checkout"))
        .hint("envkit installs wheels only: give a requirement a wheel on an index satisfies");
  }
  const json* archive_info = member(*download, "archive_info");
  const std::string file = detail::url_filename(*link);
  if (!file.ends_with(".whl")) {
    return bad(fmt::format("{} is not a wheel (.whl)", text::quoted(shown_url)))
        .hint("envkit installs wheels only (pip runs with --only-binary=:all:)");
  }
  if (auto parsed = parse_wheel_filename(file); !parsed) {
    Error error = bad(fmt::format("{} is not a wheel", text::quoted(shown_url)));
    error.because(parsed.error().message());
    for (const auto& cause : parsed.error().causes())
      error.because(cause);
    return error;
  }
  auto sha256 = archive_info ? archive_sha256(*archive_info) : std::nullopt;
  if (!sha256) {
    return bad(fmt::format("{} has no sha256", text::quoted(shown_url)))
        .hint("envkit needs every wheel's sha256: use an index whose links carry `#sha256=`");
  }
  if (!is_sha256(*sha256)) {
    return bad(fmt::format("the sha256 of {} is {}, not 64 hex digits", text::quoted(shown_url),
                           text::quoted(*sha256)));
  }
  wheel.sha256 = text::to_lower(*sha256);
  wheel.url = url::without_credentials(std::string_view(*link).substr(0, link->find('#')));
  return wheel;
}

}  // namespace

Result<Closure> parse_pip_report(std::string_view text_in, std::string_view source) {
  json report;
  try {
    report = json::parse(text_in);
  } catch (const json::parse_error& e) {
    return bad_report(source, "not a pip installation report (not JSON)").because(e.what());
  }
  if (!report.is_object()) return bad_report(source, "not a pip installation report");
  const auto version = string_member(report, "version");
  if (!version) return bad_report(source, "not a pip installation report (no `version`)");
  const std::string_view major = text::split(*version, '.').front();
  if (major != "1") {
    return bad_report(source, fmt::format("a pip installation report of version {}; envkit "
                                          "reads version 1",
                                          text::quoted(*version)))
        .hint("resolve with a pip that writes version 1 reports (pip 22.2 and newer so far)");
  }
  const json* install = member(report, "install");
  if (!install || !install->is_array()) return bad_report(source, "no `install` list");

  Closure closure;
  for (std::size_t i = 0; i < install->size(); ++i) {
    auto wheel = read_item((*install)[i], i, source);
    if (!wheel) return std::move(wheel).error();
    closure.wheels.push_back(*std::move(wheel));
  }
  std::stable_sort(closure.wheels.begin(), closure.wheels.end(),
                   [](const ResolvedWheel& a, const ResolvedWheel& b) { return a.name < b.name; });
  for (std::size_t i = 1; i < closure.wheels.size(); ++i) {
    if (closure.wheels[i].name == closure.wheels[i - 1].name) {
      return bad_report(source,
                        fmt::format("{} is installed twice", text::quoted(closure.wheels[i].name)));
    }
  }

  const std::string pip_version = string_member(report, "pip_version").value_or("?");
  closure.resolver = fmt::format("pip {}", pip_version);
  if (const json* environment = member(report, "environment")) {
    const auto implementation = string_member(*environment, "platform_python_implementation");
    const auto python = string_member(*environment, "python_full_version");
    if (implementation && python)
      closure.resolver += fmt::format(" ({} {})", *implementation, *python);
  }
  return closure;
}

}  // namespace envkit::python
