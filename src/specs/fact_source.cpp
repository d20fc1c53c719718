#include "envkit/specs/fact_source.hpp"

#include "enum_names.hpp"

namespace envkit::specs {

namespace {

constexpr detail::EnumNames<FactSource, 4> kNames = {{
    {FactSource::manifest, "manifest"},
    {FactSource::override_variable, "override"},
    {FactSource::host, "host"},
    {FactSource::none, "none"},
}};

}  // namespace

std::string_view to_string(FactSource source) {
  return detail::name_of(kNames, source);
}

std::optional<FactSource> parse_fact_source(std::string_view text) {
  return detail::value_of(kNames, text);
}

}  // namespace envkit::specs
