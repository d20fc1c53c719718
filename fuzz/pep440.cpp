// Fuzz target: PEP 440 versions and specifiers (specs::Version, Specifier,
// VersionSpec in both syntaxes). The input is a spec, a newline, a version.
// What reads must print in a form that reads back the same: locks and recipes
// store the printed form.

#include "envkit/specs/version.hpp"
#include "envkit/specs/version_spec.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace envkit;

void check_version(std::string_view text) {
  auto version = specs::Version::parse(text);
  if (!version) return;
  const std::string printed = version->to_string();
  auto again = specs::Version::parse(printed);
  if (!again) fuzz::finding("a version prints as text that does not parse", printed);
  if (*again != *version || again->to_string() != printed) {
    fuzz::finding("a version does not read back as itself", printed);
  }
}

void check_spec(std::string_view text, specs::SpecSyntax syntax, std::string_view version_text) {
  auto spec = specs::VersionSpec::parse(text, syntax);
  if (!spec) return;
  const std::string printed = spec->to_string();
  auto again = specs::VersionSpec::parse(printed);
  if (!again) fuzz::finding("a spec prints as text that does not parse", printed);
  if (again->to_string() != printed) fuzz::finding("printing a spec is not a fixpoint", printed);
  (void)spec->implies_prereleases();
  (void)spec->lowest_admitted();
  (void)spec->contains(version_text);
  if (auto version = specs::Version::parse(version_text)) {
    for (const auto prereleases : {specs::Prereleases::pep440_default, specs::Prereleases::allow,
                                   specs::Prereleases::exclude}) {
      if (spec->contains(*version, prereleases) != again->contains(*version, prereleases)) {
        fuzz::finding("a spec and its printed form disagree on a version",
                      printed + " " + version->to_string());
      }
    }
    (void)(*spec & *again).contains(*version);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = fuzz::text_of(data, size);
  const auto newline = input.find('\n');
  const std::string_view spec_text = input.substr(0, newline);
  const std::string_view version_text =
      newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);
  check_version(input);
  check_version(version_text);
  (void)specs::Specifier::parse(spec_text);
  check_spec(spec_text, specs::SpecSyntax::pep440, version_text);
  check_spec(spec_text, specs::SpecSyntax::envkit, version_text);
  return 0;
}
