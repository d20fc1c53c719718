#include "envkit/recipes/import_frameworks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "envkit/core/csv.hpp"
#include "envkit/core/text.hpp"

namespace envkit::recipes {

namespace {

using specs::ComputeCapability;
using specs::Platform;
using specs::Version;
using specs::VersionSpec;

// ---------------------------------------------------------------------------
// Shared helpers

// Splits on commas outside parentheses: "a, (b, c)" -> {"a", "(b, c)"}.
std::vector<std::string_view> split_top_level(std::string_view s) {
  std::vector<std::string_view> parts;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')') --depth;
    if (s[i] == ',' && depth == 0) {
      parts.push_back(text::trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  parts.push_back(text::trim(s.substr(start)));
  return parts;
}

// The texts inside each top-level "(...)" group of `s`.
std::vector<std::string_view> parenthesized_groups(std::string_view s) {
  std::vector<std::string_view> groups;
  for (auto open = s.find('('); open != std::string_view::npos; open = s.find('(', open)) {
    const auto close = s.find(')', open);
    if (close == std::string_view::npos) break;
    groups.push_back(text::trim(s.substr(open + 1, close - open - 1)));
    open = close;
  }
  return groups;
}

// Specs built here from numbers always parse; a failure is a bug.
VersionSpec spec_from(const std::string& text) {
  return VersionSpec::parse(text).value();
}

// The series rule: the same major, at least the tested major.minor (`>=8.7,<9`), or
// at least the major when only a major is given (`>=7,<8`).
VersionSpec same_major_from(const Version& tested) {
  const auto lowest = tested.release().size() < 2 ? fmt::format("{}", tested.major())
                                                  : tested.major_minor().to_string();
  return spec_from(fmt::format(">={},<{}", lowest, tested.major() + 1));
}

Result<csv::Table> parse_table(const UpstreamText& source,
                               std::initializer_list<std::string_view> columns) {
  return csv::Table::parse(source.text, source.file, columns);
}

Result<Version> parse_version_cell(std::string_view cell, std::string_view what) {
  auto version = Version::parse(cell);
  if (!version)
    return Error::input(fmt::format("{} {} is not a version", what, text::quoted(cell)));
  return version;
}

bool same_minor(const Version& a, const Version& b) {
  return a.major() == b.major() && a.minor() == b.minor();
}

// The id suffix of a build that exists for `platform` beside the main (linux-x86_64) one.
std::string_view platform_suffix(Platform platform) {
  switch (platform) {
    case Platform::linux_x86_64:
      return "";
    case Platform::linux_aarch64:
      return "aarch64";
    case Platform::windows_x86_64:
      return "windows";
  }
  return "";
}

// ---------------------------------------------------------------------------
// Python ranges

// A Python version as the tables write it: major.minor.
Result<Version> python_minor(std::string_view text) {
  auto version = Version::parse(text);
  if (!version || version->release().size() != 2 || version->is_prerelease()) {
    return Error::input(fmt::format("{} is not a Python major.minor", text::quoted(text)));
  }
  return version;
}

std::string below_next_minor(const Version& v) {
  return fmt::format("<{}.{}", v.major(), v.minor() + 1);
}

bool is_experimental_note(std::string_view clause) {
  return clause.starts_with('(') && clause.ends_with(')') &&
         clause.find("experimental") != std::string_view::npos;
}

// `<=X.Y`, or `<=(X.Y, X.Yt experimental)` where X.Y itself is experimental and excluded.
Result<std::string> python_upper_bound(std::string_view bound) {
  if (!is_experimental_note(bound)) {
    auto version = python_minor(bound);
    if (!version) return std::move(version).error();
    return below_next_minor(*version);
  }
  const auto first = split_top_level(bound.substr(1, bound.size() - 2)).front();
  auto experimental = python_minor(first);
  if (!experimental) return std::move(experimental).error();
  return fmt::format("<{}", experimental->major_minor().to_string());
}

// `X.Y-X.Z` or a lone `X.Y`: both ends included. Python 2 gives no clauses.
Result<std::vector<std::string>> python_span(std::string_view clause) {
  const auto dash = clause.find('-');
  auto low = python_minor(clause.substr(0, dash));
  if (!low) return std::move(low).error();
  auto high = dash == std::string_view::npos ? low : python_minor(clause.substr(dash + 1));
  if (!high) return std::move(high).error();
  if (low->major() != 3) return std::vector<std::string>{};
  return std::vector<std::string>{">=" + low->major_minor().to_string(), below_next_minor(*high)};
}

// The PEP 440 clauses of one comma-separated part of a range.
Result<std::vector<std::string>> python_clauses(std::string_view clause) {
  if (is_experimental_note(clause)) return std::vector<std::string>{};
  if (clause.starts_with(">=")) {
    auto low = python_minor(text::trim(clause.substr(2)));
    if (!low) return std::move(low).error();
    return std::vector<std::string>{">=" + low->major_minor().to_string()};
  }
  if (clause.starts_with("<=")) {
    auto high = python_upper_bound(text::trim(clause.substr(2)));
    if (!high) return std::move(high).error();
    return std::vector<std::string>{*high};
  }
  return python_span(clause);
}

// ---------------------------------------------------------------------------
// Builds shared by torch and tensorflow

// One CUDA a framework release was built with, as the table writes it.
struct CudaVariant {
  Version cuda;
  std::optional<Version> cudnn;
};

Build framework_build(std::string id, const CudaVariant& variant, const VersionSpec& python) {
  Build build;
  build.id = std::move(id);
  build.requires_["cuda"] = cuda_series_spec(variant.cuda);
  build.tested["cuda"] = variant.cuda.original();
  if (variant.cudnn) {
    build.requires_["cudnn"] = cudnn_series_spec(*variant.cudnn);
    build.tested["cudnn"] = variant.cudnn->original();
  }
  if (!python.empty()) build.requires_["python"] = python;
  return build;
}

bool same_facts(const Build& a, const Build& b) {
  const auto spec_texts = [](const Build& build) {
    std::map<std::string, std::string> texts;
    for (const auto& [name, spec] : build.requires_)
      texts[name] = spec.to_string();
    return texts;
  };
  return a.tested == b.tested && spec_texts(a) == spec_texts(b) && a.cuda_arch == b.cuda_arch;
}

Build* find_build(RecipeVersion& version, std::string_view id) {
  auto it = std::find_if(version.builds.begin(), version.builds.end(),
                         [&](const Build& b) { return b.id == id; });
  return it == version.builds.end() ? nullptr : &*it;
}

RecipeVersion& version_entry(Recipe& recipe, const Version& version) {
  auto it = std::find_if(recipe.versions.begin(), recipe.versions.end(),
                         [&](const auto& v) { return v.version.original() == version.original(); });
  if (it != recipe.versions.end()) return *it;
  return recipe.versions.emplace_back(RecipeVersion{.version = version});
}

// ---------------------------------------------------------------------------
// torch

// One row of the Release Compatibility Matrix.
struct TorchMatrixRow {
  Version version;  // the minor: 2.1
  VersionSpec python;
  std::vector<CudaVariant> cuda;  // stable, then experimental
};

// One row of the PyTorch CUDA arch matrix.
struct TorchArchRow {
  int line = 0;
  std::vector<Version> releases;
  Version cuda;
  std::vector<Platform> platforms;
  std::vector<ComputeCapability> archs;
};

// Whether an earlier row already named `version`.
template <class Row>
bool listed_before(const std::vector<Row>& rows, const Version& version) {
  return std::any_of(rows.begin(), rows.end(),
                     [&](const Row& row) { return row.version.original() == version.original(); });
}

// One torch version with everything known about it before builds are made.
struct TorchRelease {
  Version version;
  VersionSpec python;
  std::vector<CudaVariant> cuda;
  std::vector<Platform> platforms;  // for variants the arch matrix does not cover
  // The CUDA of the plain wheel on PyPI (Linux), where the page says so.
  std::optional<Version> pypi_cuda;
};

// "CUDA 12.6 (CUDNN 9.10.2.21) (NCCL 2.29.3)": the CUDA and the cuDNN in parentheses
// (NCCL is not a package envkit installs).
Result<CudaVariant> parse_cuda_item(std::string_view item) {
  auto rest = text::trim(item.substr(std::string_view("CUDA ").size()));
  auto cuda = parse_version_cell(rest.substr(0, rest.find_first_of(" (")), "CUDA");
  if (!cuda) return std::move(cuda).error();
  CudaVariant variant{.cuda = *cuda, .cudnn = std::nullopt};
  for (const auto group : parenthesized_groups(rest)) {
    if (!text::starts_with_icase(group, "CUDNN ")) continue;
    auto cudnn = parse_version_cell(text::trim(group.substr(6)), "cuDNN");
    if (!cudnn) return std::move(cudnn).error();
    variant.cudnn = *cudnn;
  }
  return variant;
}

// A CUDA cell: "CUDA 11.8, CUDNN 8.7.0.84", "CUDA 11.8, CUDA 12.4 (CUDNN 9.1.0.70)",
// "--" or "None". A bare "CUDNN x" item belongs to every CUDA of the cell that names
// no cuDNN of its own in parentheses.
Result<std::vector<CudaVariant>> parse_cuda_cell(std::string_view cell) {
  std::vector<CudaVariant> variants;
  const auto trimmed = text::trim(cell);
  if (trimmed.empty() || trimmed == "--" || trimmed == "None") return variants;
  std::optional<Version> shared_cudnn;
  for (const auto item : split_top_level(trimmed)) {
    if (item.starts_with("CUDA ")) {
      auto variant = parse_cuda_item(item);
      if (!variant) return std::move(variant).error();
      variants.push_back(*variant);
    } else if (text::starts_with_icase(item, "CUDNN ")) {
      auto cudnn = parse_version_cell(text::trim(item.substr(6)), "cuDNN");
      if (!cudnn) return std::move(cudnn).error();
      shared_cudnn = *cudnn;
    } else {
      return Error::input(fmt::format("unrecognised CUDA entry {}", text::quoted(item)));
    }
  }
  for (auto& variant : variants) {
    if (!variant.cudnn) variant.cudnn = shared_cudnn;
  }
  return variants;
}

Result<TorchMatrixRow> parse_matrix_row(const csv::Table& table, const csv::Row& row) {
  auto minor = parse_version_cell(table.at(row, "pytorch_version"), "PyTorch version");
  if (!minor) return std::move(minor).error();
  auto python = parse_python_range(table.at(row, "python"));
  if (!python) return std::move(python).error();
  TorchMatrixRow parsed{.version = *minor, .python = *python, .cuda = {}};
  for (const auto* column : {"stable_cuda", "experimental_cuda"}) {
    auto variants = parse_cuda_cell(table.at(row, column));
    if (!variants) return std::move(variants).error();
    parsed.cuda.insert(parsed.cuda.end(), variants->begin(), variants->end());
  }
  return parsed;
}

Result<std::vector<TorchMatrixRow>> read_release_matrix(const UpstreamText& source) {
  auto table =
      parse_table(source, {"pytorch_version", "python", "stable_cuda", "experimental_cuda"});
  if (!table) return std::move(table).error();
  std::vector<TorchMatrixRow> rows;
  for (const auto& row : table->rows()) {
    auto parsed = parse_matrix_row(*table, row);
    if (!parsed) {
      return table->row_error(row, "cannot read the release matrix row")
          .because(parsed.error().message());
    }
    if (listed_before(rows, parsed->version)) {
      return table->row_error(row, "torch " + parsed->version.original() + " is listed twice");
    }
    if (parsed->cuda.empty()) return table->row_error(row, "the row names no CUDA build");
    rows.push_back(std::move(*parsed));
  }
  return rows;
}

// "Linux x86 and Windows" / "Linux aarch64".
std::optional<std::vector<Platform>> arch_matrix_platforms(std::string_view cell) {
  const auto trimmed = text::trim(cell);
  if (trimmed == "Linux x86 and Windows") {
    return std::vector<Platform>{Platform::linux_x86_64, Platform::windows_x86_64};
  }
  if (trimmed == "Linux aarch64") return std::vector<Platform>{Platform::linux_aarch64};
  return std::nullopt;
}

// "Maxwell(5.0), Ampere(8.0, 8.6), Blackwell(10.0, 12.0+PTX)" -> 5.0 8.0 8.6 10.0 12.0
// (the model has no PTX flag; the PTX note is dropped).
Result<std::vector<ComputeCapability>> parse_arch_list(std::string_view cell) {
  std::vector<ComputeCapability> archs;
  for (const auto group : parenthesized_groups(cell)) {
    for (auto item : text::split(group, ',')) {
      item = text::trim(item);
      if (item.ends_with("+PTX")) item.remove_suffix(4);
      auto arch = ComputeCapability::parse(item);
      if (!arch) return std::move(arch).error();
      archs.push_back(*arch);
    }
  }
  if (archs.empty()) return Error::input(fmt::format("no architectures in {}", text::quoted(cell)));
  return archs;
}

Result<TorchArchRow> parse_arch_row(const csv::Table& table, const csv::Row& row) {
  TorchArchRow parsed{.line = row.line,
                      .releases = {},
                      .cuda = Version::from_release({0}),
                      .platforms = {},
                      .archs = {}};
  for (const auto release : text::split(table.at(row, "pytorch_releases"), ',')) {
    auto version = parse_version_cell(text::trim(release), "PyTorch release");
    if (!version) return std::move(version).error();
    parsed.releases.push_back(*version);
  }
  auto cuda = parse_version_cell(table.at(row, "cuda"), "CUDA");
  if (!cuda) return std::move(cuda).error();
  parsed.cuda = *cuda;
  auto platforms = arch_matrix_platforms(table.at(row, "platform"));
  if (!platforms) {
    return Error::input(
        fmt::format("unknown platform {}", text::quoted(table.at(row, "platform"))));
  }
  parsed.platforms = *platforms;
  auto archs = parse_arch_list(table.at(row, "architectures"));
  if (!archs) return std::move(archs).error();
  parsed.archs = *archs;
  return parsed;
}

// Rows for planned releases ("2.8 (plan; option 1)") describe a proposal, not wheels.
bool is_plan_row(const csv::Table& table, const csv::Row& row) {
  return table.at(row, "pytorch_releases").find("plan") != std::string::npos;
}

Result<std::vector<TorchArchRow>> read_arch_matrix(const UpstreamText& source) {
  auto table = parse_table(source, {"pytorch_releases", "cuda", "platform", "architectures"});
  if (!table) return std::move(table).error();
  std::vector<TorchArchRow> rows;
  for (const auto& row : table->rows()) {
    if (is_plan_row(*table, row)) continue;
    auto parsed = parse_arch_row(*table, row);
    if (!parsed) {
      return table->row_error(row, "cannot read the CUDA arch matrix row")
          .because(parsed.error().message());
    }
    rows.push_back(std::move(*parsed));
  }
  return rows;
}

// The "Python <= 3.8 only" note of an LTS row, if any.
Result<VersionSpec> python_from_notes(std::string_view notes) {
  for (auto note : text::split(notes, ';')) {
    note = text::trim(note);
    if (!note.starts_with("Python ")) continue;
    note.remove_prefix(std::string_view("Python ").size());
    if (note.ends_with(" only")) note.remove_suffix(std::string_view(" only").size());
    return parse_python_range(note);
  }
  return VersionSpec{};
}

Result<TorchRelease> parse_previous_row(const csv::Table& table, const csv::Row& row) {
  auto version = parse_version_cell(table.at(row, "torch"), "torch version");
  if (!version) return std::move(version).error();
  auto python = python_from_notes(table.at(row, "notes"));
  if (!python) return std::move(python).error();
  // The page lists these variants under "Linux and Windows".
  TorchRelease release{.version = *version,
                       .python = *python,
                       .cuda = {},
                       .platforms = {Platform::linux_x86_64, Platform::windows_x86_64}};
  for (const auto cuda : text::split(table.at(row, "wheel_cuda_variants"), ';')) {
    auto parsed = parse_version_cell(text::trim(cuda), "CUDA variant");
    if (!parsed) return std::move(parsed).error();
    release.cuda.push_back(CudaVariant{.cuda = *parsed, .cudnn = std::nullopt});
  }
  if (const auto pypi = text::trim(table.at(row, "pypi_default_linux_wheel_cuda")); !pypi.empty()) {
    auto parsed = parse_version_cell(pypi, "PyPI wheel's CUDA");
    if (!parsed) return std::move(parsed).error();
    release.pypi_cuda = *parsed;
  }
  return release;
}

Result<std::vector<TorchRelease>> read_previous_versions(const UpstreamText& source) {
  auto table = parse_table(
      source, {"torch", "wheel_cuda_variants", "pypi_default_linux_wheel_cuda", "notes"});
  if (!table) return std::move(table).error();
  std::vector<TorchRelease> releases;
  for (const auto& row : table->rows()) {
    auto parsed = parse_previous_row(*table, row);
    if (!parsed) {
      return table->row_error(row, "cannot read the previous-versions row")
          .because(parsed.error().message());
    }
    if (listed_before(releases, parsed->version)) {
      return table->row_error(row, "torch " + parsed->version.original() + " is listed twice");
    }
    releases.push_back(std::move(*parsed));
  }
  return releases;
}

// Lays a matrix row's facts (Python range, cuDNN per CUDA, extra variants) onto a
// patch release of the same minor.
void apply_matrix_row(TorchRelease& release, const TorchMatrixRow& row) {
  if (release.python.empty()) release.python = row.python;
  for (const auto& matrix_variant : row.cuda) {
    auto it = std::find_if(release.cuda.begin(), release.cuda.end(), [&](const CudaVariant& v) {
      return same_minor(v.cuda, matrix_variant.cuda);
    });
    if (it == release.cuda.end()) {
      release.cuda.push_back(matrix_variant);
    } else if (!it->cudnn) {
      it->cudnn = matrix_variant.cudnn;
    }
  }
}

// Patch releases from the previous-versions page, then the matrix's minors that
// have no patch row (keyed by the minor itself).
std::vector<TorchRelease> torch_releases(std::vector<TorchRelease> patches,
                                         const std::vector<TorchMatrixRow>& matrix) {
  for (const auto& row : matrix) {
    bool has_patches = false;
    for (auto& release : patches) {
      if (!same_minor(release.version, row.version)) continue;
      apply_matrix_row(release, row);
      has_patches = true;
    }
    if (has_patches) continue;
    patches.push_back(TorchRelease{.version = row.version,
                                   .python = row.python,
                                   .cuda = row.cuda,
                                   .platforms = {Platform::linux_x86_64}});
  }
  return patches;
}

std::string torch_build_id(const Version& cuda) {
  return fmt::format("cu{}{}", cuda.major(), cuda.minor());
}

std::vector<const TorchArchRow*> arch_rows_for(const std::vector<TorchArchRow>& rows,
                                               const Version& release, const Version& cuda) {
  std::vector<const TorchArchRow*> found;
  for (const auto& row : rows) {
    const bool covers_release =
        std::any_of(row.releases.begin(), row.releases.end(),
                    [&](const Version& r) { return same_minor(r, release); });
    if (covers_release && same_minor(row.cuda, cuda)) found.push_back(&row);
  }
  return found;
}

Result<void> add_torch_builds(RecipeVersion& entry, const TorchRelease& release,
                              const CudaVariant& variant, const std::vector<TorchArchRow>& archs,
                              std::string_view arch_file) {
  const auto base_id = torch_build_id(variant.cuda);
  const auto rows = arch_rows_for(archs, release.version, variant.cuda);
  if (rows.empty()) {
    auto build = framework_build(base_id, variant, release.python);
    build.platforms = release.platforms;
    if (release.pypi_cuda && same_minor(*release.pypi_cuda, variant.cuda))
      build.wheel_index = std::string(kPypiIndex);
    entry.builds.push_back(std::move(build));
    return {};
  }
  for (const auto* row : rows) {
    const bool main_platform = std::find(row->platforms.begin(), row->platforms.end(),
                                         Platform::linux_x86_64) != row->platforms.end();
    const auto id = main_platform
                        ? base_id
                        : fmt::format("{}-{}", base_id, platform_suffix(row->platforms.front()));
    if (find_build(entry, id) != nullptr) {
      return Error::input(fmt::format("duplicate row for torch {} CUDA {} on these platforms",
                                      release.version.original(), variant.cuda.original()))
          .at({std::string(arch_file), row->line, 0});
    }
    auto build = framework_build(id, variant, release.python);
    build.platforms = row->platforms;
    build.cuda_arch = row->archs;
    if (main_platform && release.pypi_cuda && same_minor(*release.pypi_cuda, variant.cuda))
      build.wheel_index = std::string(kPypiIndex);
    entry.builds.push_back(std::move(build));
  }
  return {};
}

// ---------------------------------------------------------------------------
// tensorflow

struct TensorflowRow {
  bool gpu_package = false;  // tensorflow_gpu-…
  Version version;
  Build build;
};

// "tensorflow-2.10.0" / "tensorflow_gpu-1.6.0".
Result<std::pair<bool, Version>> parse_tensorflow_name(std::string_view cell) {
  const auto dash = cell.rfind('-');
  const auto package = cell.substr(0, dash == std::string_view::npos ? 0 : dash);
  if (package != "tensorflow" && package != "tensorflow_gpu") {
    return Error::input(fmt::format("unknown package in {}", text::quoted(cell)));
  }
  auto version = parse_version_cell(cell.substr(dash + 1), "TensorFlow version");
  if (!version) return std::move(version).error();
  return std::pair{package == "tensorflow_gpu", *version};
}

Result<TensorflowRow> parse_tensorflow_row(const csv::Table& table, const csv::Row& row,
                                           Platform platform) {
  auto name = parse_tensorflow_name(text::trim(table.at(row, "Version")));
  if (!name) return std::move(name).error();
  auto python = parse_python_range(table.at(row, "Python version"));
  if (!python) return std::move(python).error();
  auto cuda = parse_version_cell(table.at(row, "CUDA"), "CUDA");
  if (!cuda) return std::move(cuda).error();
  auto cudnn = parse_version_cell(table.at(row, "cuDNN"), "cuDNN");
  if (!cudnn) return std::move(cudnn).error();
  const CudaVariant variant{.cuda = *cuda, .cudnn = *cudnn};
  auto build = framework_build("cuda" + cuda->major_minor().to_string(), variant, *python);
  build.platforms = {platform};
  return TensorflowRow{.gpu_package = name->first, .version = name->second, .build = build};
}

// Adds a row's build: joined with an equal build of another platform, else its own
// build with the platform suffix.
Result<void> add_tensorflow_build(Recipe& recipe, const TensorflowRow& row) {
  auto& entry = version_entry(recipe, row.version);
  const auto platform = row.build.platforms.front();
  Build* same_id = find_build(entry, row.build.id);
  if (same_id == nullptr) {
    entry.builds.push_back(row.build);
    return {};
  }
  const bool listed = std::find(same_id->platforms.begin(), same_id->platforms.end(), platform) !=
                      same_id->platforms.end();
  if (!listed && same_facts(*same_id, row.build)) {
    same_id->platforms.push_back(platform);
    return {};
  }
  auto own = row.build;
  own.id = fmt::format("{}-{}", row.build.id, platform_suffix(platform));
  if (listed || find_build(entry, own.id) != nullptr) {
    return Error::input(
        fmt::format("duplicate row for {} {}", text::quoted(recipe.name), row.version.original()));
  }
  entry.builds.push_back(std::move(own));
  return {};
}

Result<void> read_tensorflow_table(const UpstreamText& source, Platform platform,
                                   TensorflowRecipes& out) {
  auto table = parse_table(source, {"Version", "Python version", "cuDNN", "CUDA"});
  if (!table) return std::move(table).error();
  for (const auto& row : table->rows()) {
    auto parsed = parse_tensorflow_row(*table, row, platform);
    if (!parsed) {
      return table->row_error(row, "cannot read the tested-build row")
          .because(parsed.error().message());
    }
    auto& recipe = parsed->gpu_package ? out.tensorflow_gpu : out.tensorflow;
    auto added = add_tensorflow_build(recipe, *parsed);
    if (!added) return table->row_error(row, added.error().message());
  }
  out.tensorflow.sources.emplace_back(source.file);
  out.tensorflow_gpu.sources.emplace_back(source.file);
  return {};
}

}  // namespace

// ---------------------------------------------------------------------------

specs::VersionSpec cuda_series_spec(const specs::Version& tested) {
  if (tested.major() >= 11) return same_major_from(tested);
  return spec_from(fmt::format("=={}.*", tested.major_minor().to_string()));
}

specs::VersionSpec cudnn_series_spec(const specs::Version& tested) {
  return same_major_from(tested);
}

Result<specs::VersionSpec> parse_python_range(std::string_view text) {
  std::vector<std::string> clauses;
  for (const auto part : split_top_level(text)) {
    auto parsed = python_clauses(part);
    if (!parsed) {
      return Error::input(fmt::format("cannot read the Python range {}", text::quoted(text)))
          .because(parsed.error().message());
    }
    clauses.insert(clauses.end(), parsed->begin(), parsed->end());
  }
  if (clauses.empty()) {
    return Error::input(
        fmt::format("the Python range {} names no Python 3 version", text::quoted(text)));
  }
  return spec_from(text::join(clauses, ","));
}

Result<Recipe> import_torch(const TorchTables& tables) {
  auto matrix = read_release_matrix(tables.release_matrix);
  if (!matrix) return std::move(matrix).error();
  auto previous = read_previous_versions(tables.previous_versions);
  if (!previous) return std::move(previous).error();
  auto archs = read_arch_matrix(tables.arch_matrix);
  if (!archs) return std::move(archs).error();

  Recipe recipe{
      .name = "torch",
      .sources = {std::string(tables.release_matrix.file),
                  std::string(tables.previous_versions.file), std::string(tables.arch_matrix.file)},
      .default_components = {},
      .versions = {}};
  for (const auto& release : torch_releases(std::move(*previous), *matrix)) {
    auto& entry = version_entry(recipe, release.version);
    for (const auto& variant : release.cuda) {
      auto added = add_torch_builds(entry, release, variant, *archs, tables.arch_matrix.file);
      if (!added) return std::move(added).error();
    }
  }
  canonicalize(recipe);
  return recipe;
}

Result<TensorflowRecipes> import_tensorflow(const TensorflowTables& tables) {
  TensorflowRecipes recipes;
  recipes.tensorflow.name = "tensorflow";
  recipes.tensorflow_gpu.name = "tensorflow-gpu";
  // Linux first: its rows keep the plain ids, differing Windows rows get the suffix.
  auto linux_rows = read_tensorflow_table(tables.linux_gpu, Platform::linux_x86_64, recipes);
  if (!linux_rows) return std::move(linux_rows).error();
  auto windows_rows = read_tensorflow_table(tables.windows_gpu, Platform::windows_x86_64, recipes);
  if (!windows_rows) return std::move(windows_rows).error();
  canonicalize(recipes.tensorflow);
  canonicalize(recipes.tensorflow_gpu);
  return recipes;
}

}  // namespace envkit::recipes
