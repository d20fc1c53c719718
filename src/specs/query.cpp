#include "envkit/specs/query.hpp"

#include <nlohmann/json.hpp>

#include "envkit/specs/version.hpp"
#include "envkit/specs/version_spec.hpp"

namespace envkit::specs {

namespace {

using nlohmann::json;

std::string describe(const Error& error) {
  std::string out = error.headline();
  for (const auto& cause : error.causes())
    out += ": " + cause;
  return out;
}

json failure(std::string message) {
  return {{"ok", false}, {"error", std::move(message)}};
}
json success(json value) {
  return {{"ok", true}, {"value", std::move(value)}};
}

// A required string field of the request.
const std::string* string_field(const json& request, const char* name) {
  const auto it = request.find(name);
  return it != request.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
}

std::optional<Prereleases> prereleases_field(const json& request) {
  const auto it = request.find("prereleases");
  if (it == request.end() || it->is_null()) return Prereleases::pep440_default;
  if (!it->is_boolean()) return std::nullopt;
  return it->get<bool>() ? Prereleases::allow : Prereleases::exclude;
}

Result<VersionSpec> spec_field(const json& request) {
  const auto* text = string_field(request, "spec");
  if (text == nullptr) return Error::input("`spec` must be a string");
  const auto* syntax = string_field(request, "syntax");
  return VersionSpec::parse(
      *text, syntax != nullptr && *syntax == "envkit" ? SpecSyntax::envkit : SpecSyntax::pep440);
}

json op_normalize(const json& request) {
  const auto* text = string_field(request, "version");
  if (text == nullptr) return failure("`version` must be a string");
  auto v = Version::parse(*text);
  return v ? success(v->to_string()) : failure(describe(v.error()));
}

json op_compare(const json& request) {
  const auto* a_text = string_field(request, "a");
  const auto* b_text = string_field(request, "b");
  if (a_text == nullptr || b_text == nullptr) return failure("`a` and `b` must be strings");
  auto a = Version::parse(*a_text);
  if (!a) return failure(describe(a.error()));
  auto b = Version::parse(*b_text);
  if (!b) return failure(describe(b.error()));
  const auto order = *a <=> *b;
  return success(order < 0 ? -1 : (order > 0 ? 1 : 0));
}

json op_contains(const json& request) {
  auto spec = spec_field(request);
  if (!spec) return failure(describe(spec.error()));
  const auto* version = string_field(request, "version");
  if (version == nullptr) return failure("`version` must be a string");
  const auto prereleases = prereleases_field(request);
  if (!prereleases) return failure("`prereleases` must be null, true or false");
  json response = success(spec->contains(*version, *prereleases));
  // Like `packaging`, a non-version never matches a standard operator; say why.
  if (auto parsed = Version::parse(*version); !parsed)
    response["warning"] = describe(parsed.error());
  return response;
}

json op_parse_spec(const json& request) {
  auto spec = spec_field(request);
  return spec ? success(spec->to_string()) : failure(describe(spec.error()));
}

json op_filter(const json& request) {
  auto spec = spec_field(request);
  if (!spec) return failure(describe(spec.error()));
  const auto it = request.find("versions");
  if (it == request.end() || !it->is_array())
    return failure("`versions` must be a list of strings");
  const auto prereleases = prereleases_field(request);
  if (!prereleases) return failure("`prereleases` must be null, true or false");
  std::vector<Version> candidates;
  for (const auto& item : *it) {
    if (!item.is_string()) return failure("`versions` must be a list of strings");
    // Like `packaging`'s filter, entries that are not versions are skipped.
    if (auto v = Version::parse(item.get<std::string>()))
      candidates.push_back(std::move(v).value());
  }
  json out = json::array();
  for (const auto& v : spec->filter(candidates, *prereleases))
    out.push_back(v.original());
  return success(std::move(out));
}

}  // namespace

std::string answer_query(std::string_view line) {
  json request = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded() || !request.is_object()) {
    return failure(
               "each line must be a JSON object such as {\"op\":\"normalize\",\"version\":\"1.0\"}")
        .dump();
  }
  const auto* op = string_field(request, "op");
  json response;
  if (op == nullptr) {
    response = failure("`op` must be one of normalize, compare, contains, parse_spec, filter");
  } else if (*op == "normalize") {
    response = op_normalize(request);
  } else if (*op == "compare") {
    response = op_compare(request);
  } else if (*op == "contains") {
    response = op_contains(request);
  } else if (*op == "parse_spec") {
    response = op_parse_spec(request);
  } else if (*op == "filter") {
    response = op_filter(request);
  } else {
    response = failure("unknown op `" + *op +
                       "`: expected normalize, compare, contains, parse_spec or filter");
  }
  if (const auto id = request.find("id"); id != request.end()) response["id"] = *id;
  return response.dump();
}

}  // namespace envkit::specs
