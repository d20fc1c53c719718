#include "envkit/project/pin.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "envkit/core/text.hpp"
#include "envkit/project/marker.hpp"
#include "envkit/specs/package_name.hpp"

namespace envkit::project {

namespace {

constexpr std::string_view kFrameworkHint =
    "name it with `--framework`, e.g. `envkit init --framework \"torch 2.1.*\"`";

std::string file_and_line(const SourceLocation& where) {
  return SourceLocation{where.file, where.line, 0}.to_string();
}

// "`torch>=2.1,<2.2` at pyproject.toml:9"
std::string mention(const Pin& pin) {
  return fmt::format("{} at {}", text::quoted(pin.written), file_and_line(pin.source));
}

// Every requirement of the scan that pins a package: `pinned(requirement)` is
// the package it pins (nullopt: none of interest), with its spec read.
template <class Pinned>
Result<std::vector<Pin>> pins_of(const ProjectScan& scan, Pinned pinned) {
  std::vector<Pin> pins;
  for (const auto& file : scan.files) {
    for (const auto& requirement : file.requirements) {
      const std::optional<std::string> package = pinned(requirement);
      if (!package) continue;
      auto spec = requirement.version_spec();
      if (!spec) return std::move(spec).error();
      pins.push_back({*package, std::move(spec).value(), requirement.where, requirement.written,
                      requirement.marker});
    }
  }
  return pins;
}

// The known package a requirement names, when `wanted` accepts it.
template <class Wanted>
auto known_package_if(Wanted wanted) {
  return [wanted](const Requirement& requirement) -> std::optional<std::string> {
    auto package = requirement.known_package();
    if (package && !wanted(*package)) return std::nullopt;
    return package;
  };
}

// The first pin, constrained by all of them: every stated constraint holds.
std::optional<Pin> intersection(const std::vector<Pin>& pins) {
  if (pins.empty()) return std::nullopt;
  Pin all = pins.front();
  for (const auto& pin : pins)
    all.spec = all.spec & pin.spec;
  return all;
}

Error nothing_found(const ProjectScan& scan) {
  std::vector<std::string> frameworks;
  for (auto name : specs::kFrameworks)
    frameworks.push_back(text::quoted(name));
  std::vector<std::string> files;
  for (const auto& file : scan.files)
    files.push_back(file.path);
  const std::string where =
      files.empty() ? "the project has no requirements*.txt, pyproject.toml, setup.py, setup.cfg "
                      "or conda environment file"
                    : fmt::format("no {} requirement in {}", text::join(frameworks, ", "),
                                  text::join(files, ", "));
  return Error::input(fmt::format("cannot infer the framework: {}", where))
      .hint(std::string(kFrameworkHint));
}

Error disagreement(std::string message, const std::vector<const Pin*>& pins) {
  Error error = Error::input(std::move(message));
  for (const auto* pin : pins)
    error.because(mention(*pin));
  return error.hint(std::string(kFrameworkHint));
}

// The first pin of each distinct value of `key`.
template <class Key>
std::vector<const Pin*> first_of_each(const std::vector<Pin>& pins, Key key) {
  std::vector<const Pin*> firsts;
  for (const auto& pin : pins) {
    const bool seen = std::any_of(firsts.begin(), firsts.end(),
                                  [&](const Pin* first) { return key(*first) == key(pin); });
    if (!seen) firsts.push_back(&pin);
  }
  return firsts;
}

}  // namespace

namespace {

// The pins whose markers can hold on Linux, where envkit's locks run: a
// Windows-only `torch>=1.8; sys_platform == 'win32'` pins nothing here. Of
// pins that differ, those without a condition win; with only conditional pins
// (Poetry's per-Python lists) the one for the newest Python does.
std::vector<Pin> applicable(std::vector<Pin> pins) {
  const auto environment = linux_cpython_environment();
  std::erase_if(
      pins, [&](const Pin& pin) { return evaluate_marker(pin.marker, environment) == Truth::no; });
  const auto distinct = first_of_each(pins, [](const Pin& pin) { return pin.spec.to_string(); });
  if (distinct.size() < 2) return pins;
  std::vector<Pin> unconditional;
  std::copy_if(pins.begin(), pins.end(), std::back_inserter(unconditional), [&](const Pin& pin) {
    return evaluate_marker(pin.marker, environment) == Truth::yes;
  });
  if (!unconditional.empty()) return unconditional;
  auto newest = environment;
  newest.emplace("python_version", "3.99");
  newest.emplace("python_full_version", "3.99.0");
  std::vector<Pin> for_newest;
  std::copy_if(pins.begin(), pins.end(), std::back_inserter(for_newest),
               [&](const Pin& pin) { return evaluate_marker(pin.marker, newest) != Truth::no; });
  return for_newest.empty() ? pins : for_newest;
}

}  // namespace

Result<Pin> infer_framework(const ProjectScan& scan) {
  auto all = pins_of(scan, known_package_if([](const std::string& package) {
                       return specs::is_framework(package);
                     }));
  if (!all) return std::move(all).error();
  if (all->empty()) return nothing_found(scan);
  auto pins = applicable(*std::move(all));
  if (pins.empty()) {
    return nothing_found(scan).because(
        "every framework requirement has a marker that excludes Linux (e.g. `sys_platform == "
        "'win32'`)");
  }
  const auto frameworks = first_of_each(pins, [](const Pin& pin) { return pin.name; });
  if (frameworks.size() > 1) {
    return disagreement("the project names more than one framework", frameworks);
  }
  // A bare `torch` (or a URL) does not disagree with a version pin elsewhere.
  std::vector<Pin> pinned;
  std::copy_if(pins.begin(), pins.end(), std::back_inserter(pinned),
               [](const Pin& pin) { return !pin.spec.empty(); });
  if (pinned.empty()) return pins.front();
  const auto versions = first_of_each(pinned, [](const Pin& pin) { return pin.spec.to_string(); });
  if (versions.size() > 1) {
    return disagreement(
        fmt::format("the project pins {} differently", text::quoted(pinned.front().name)),
        versions);
  }
  return pinned.front();
}

Result<std::optional<Pin>> infer_python(const ProjectScan& scan) {
  auto pins = pins_of(
      scan, known_package_if([](const std::string& package) { return package == "python"; }));
  if (!pins) return std::move(pins).error();
  return intersection(*pins);
}

namespace {

// conda packages whose version is the environment's CUDA version.
constexpr std::string_view kCondaCudaPackages[] = {"cudatoolkit", "cuda-version", "pytorch-cuda",
                                                   "cuda-toolkit", "cuda-runtime"};

std::optional<std::string> conda_cuda_package(const Requirement& requirement) {
  if (requirement.dialect != SpecDialect::conda) return std::nullopt;
  const auto name = specs::canonical_package_name(requirement.name);
  const auto* end = std::end(kCondaCudaPackages);
  if (std::find(std::begin(kCondaCudaPackages), end, name) == end) return std::nullopt;
  return "cuda";
}

// `==10.1.243` -> `==10.1.*`: conda's cudatoolkit numbers its builds by the
// runtime library's version (10.1.243, 11.0.221), not by a toolkit release
// envkit's recipes know (11.0.3), so an exact pin keeps only its series.
specs::VersionSpec series_of_exact(const specs::VersionSpec& spec) {
  if (spec.specifiers().size() != 1) return spec;
  const auto& only = spec.specifiers().front();
  if (only.op() != specs::Specifier::Op::equal || !only.version() ||
      only.version()->release().size() < 2) {
    return spec;
  }
  const auto& release = only.version()->release();
  auto series = specs::VersionSpec::parse(fmt::format("=={}.{}.*", release[0], release[1]),
                                          specs::SpecSyntax::pep440);
  return series ? *std::move(series) : spec;
}

}  // namespace

Result<std::optional<Pin>> infer_cuda(const ProjectScan& scan) {
  auto pins = pins_of(scan, conda_cuda_package);
  if (!pins) return std::move(pins).error();
  // A bare `cudatoolkit` says nothing of the version.
  std::erase_if(*pins, [](const Pin& pin) { return pin.spec.empty(); });
  for (auto& pin : *pins)
    pin.spec = series_of_exact(pin.spec);
  return intersection(*pins);
}

}  // namespace envkit::project
