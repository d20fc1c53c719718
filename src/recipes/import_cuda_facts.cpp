#include "envkit/recipes/import_cuda_facts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <map>
#include <regex>
#include <tuple>

#include "envkit/core/csv.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/recipes/cuda_runfile.hpp"
#include "envkit/recipes/import_nvidia_redist.hpp"

namespace envkit::recipes {

namespace {

using specs::Platform;
using specs::Version;

// The CUDA envkit knows starts at 9.0; NVIDIA's redist manifests start at 11.4.2.
const Version& oldest_cuda() {
  static const Version version = Version::from_release({9, 0});
  return version;
}
const Version& first_redist_cuda() {
  static const Version version = Version::from_release({11, 4, 2});
  return version;
}
// NVIDIA's minor-version compatibility begins with the CUDA 11 family.
constexpr std::uint64_t kFirstMinorCompatMajor = 11;
constexpr std::uint64_t kOldestLegacyCudnnMajor = 7;

bool in_runfile_era(const Version& cuda) {
  return cuda >= oldest_cuda() && cuda < first_redist_cuda();
}

// A parsed CSV with the columns an importer reads checked up front.
struct Sheet {
  csv::Table table;
  std::string file;

  const std::string& cell(const csv::Row& row, std::string_view column) const {
    return table.at(row, column);
  }
  Error error_at(const csv::Row& row, std::string message) const {
    return table.row_error(row, std::move(message));
  }
  Result<Version> version(const csv::Row& row, std::string_view column) const {
    const auto text = text::trim(cell(row, column));
    auto parsed = Version::parse(text);
    if (!parsed) {
      return error_at(row, fmt::format("{} {} is not a version", column, text::quoted(text)));
    }
    return std::move(parsed).value();
  }
  // A version the table may leave out: absent where it says `N/A` or nothing.
  Result<std::optional<Version>> optional_version(const csv::Row& row,
                                                  std::string_view column) const {
    const auto text = text::trim(cell(row, column));
    if (text.empty() || text == "N/A") return std::optional<Version>{};
    auto parsed = version(row, column);
    if (!parsed) return std::move(parsed).error();
    return std::optional<Version>{std::move(parsed).value()};
  }
  Result<std::string> sha256(const csv::Row& row, std::string_view column) const {
    auto digest = nvidia::normalize_sha256(text::trim(cell(row, column)));
    if (!digest) {
      return error_at(
          row, fmt::format("{} {} is not 64 hex digits", column, text::quoted(cell(row, column))));
    }
    return *digest;
  }
};

Result<Sheet> read_sheet(CsvSource source, std::initializer_list<std::string_view> columns) {
  auto table = csv::Table::parse(source.text, source.file, columns);
  if (!table) return std::move(table).error();
  return Sheet{std::move(table).value(), std::string(source.file)};
}

bool is_true(std::string_view cell) {
  return text::iequals(text::trim(cell), "true");
}

// Linux drivers serve both Linux platforms; Windows has its own numbers.
void set_driver_minimums(std::map<Platform, Version>& minimums,
                         const std::optional<Version>& linux_driver,
                         const std::optional<Version>& windows_driver) {
  if (linux_driver) {
    minimums.insert_or_assign(Platform::linux_x86_64, *linux_driver);
    minimums.insert_or_assign(Platform::linux_aarch64, *linux_driver);
  }
  if (windows_driver) minimums.insert_or_assign(Platform::windows_x86_64, *windows_driver);
}

// ---- toolkit driver table (release notes Table 3) ----

struct DriverRow {
  Version cuda;
  std::optional<Version> linux_driver;
  std::optional<Version> windows_driver;
};

Result<std::vector<DriverRow>> read_driver_rows(CsvSource source) {
  auto sheet = read_sheet(source, {"cuda_version", "min_driver_linux", "min_driver_windows"});
  if (!sheet) return std::move(sheet).error();
  std::vector<DriverRow> rows;
  for (const auto& row : sheet->table.rows()) {
    auto cuda = sheet->version(row, "cuda_version");
    if (!cuda) return std::move(cuda).error();
    auto linux_driver = sheet->optional_version(row, "min_driver_linux");
    if (!linux_driver) return std::move(linux_driver).error();
    auto windows_driver = sheet->optional_version(row, "min_driver_windows");
    if (!windows_driver) return std::move(windows_driver).error();
    rows.push_back({std::move(cuda).value(), std::move(linux_driver).value(),
                    std::move(windows_driver).value()});
  }
  return rows;
}

// The row of exactly this version, else the newest of its major.minor not newer than it.
const DriverRow* driver_row_for(const std::vector<DriverRow>& rows, const Version& cuda) {
  for (const auto& row : rows) {
    if (row.cuda == cuda) return &row;
  }
  const DriverRow* best = nullptr;
  for (const auto& row : rows) {
    if (row.cuda.major_minor() != cuda.major_minor() || row.cuda > cuda) continue;
    if (best == nullptr || row.cuda > best->cuda) best = &row;
  }
  return best;
}

// ---- runfiles ----

struct Runfile {
  Version version;
  Artifact artifact;
};

// A runfile of `version` with the facts the unpacker needs: the layout of its era and
// the components inside (cuda_runfile_era: the rule and where it comes from).
Artifact runfile_artifact(const Version& version, std::string url, std::string sha256) {
  Artifact artifact{
      .platform = Platform::linux_x86_64,
      .component = "cuda",
      .kind = ArtifactKind::runfile,
      .url = std::move(url),
      .sha256 = std::move(sha256),
      .format = "run",
      .layout = Layout::none,
  };
  if (auto era = cuda_runfile_era(version)) {
    artifact.layout = era->layout;
    artifact.components = std::move(era->components);
  }
  return artifact;
}

Result<Runfile> runfile_from(const Sheet& sheet, const csv::Row& row, Version version,
                             std::string_view url_column, std::string_view sha256_column) {
  auto sha256 = sheet.sha256(row, sha256_column);
  if (!sha256) return std::move(sha256).error();
  auto artifact = runfile_artifact(version, std::string(text::trim(sheet.cell(row, url_column))),
                                   std::move(sha256).value());
  return Runfile{std::move(version), std::move(artifact)};
}

// cuda-runfile-installers/cuda_runfiles.csv: 10.0 on; later ones have redist archives.
Result<std::vector<Runfile>> read_runfiles(CsvSource source) {
  auto sheet = read_sheet(source, {"cuda_version", "url", "sha256_hex"});
  if (!sheet) return std::move(sheet).error();
  std::vector<Runfile> runfiles;
  for (const auto& row : sheet->table.rows()) {
    auto version = sheet->version(row, "cuda_version");
    if (!version) return std::move(version).error();
    if (!in_runfile_era(*version)) continue;
    auto runfile = runfile_from(*sheet, row, std::move(version).value(), "url", "sha256_hex");
    if (!runfile) return std::move(runfile).error();
    runfiles.push_back(std::move(runfile).value());
  }
  return runfiles;
}

// The version in a runfile's name (cuda_9.0.176_384.81_linux-run -> 9.0.176); old nixpkgs
// numbers its versions with the patch level appended (9.0.176.1).
std::optional<Version> version_in_runfile_name(std::string_view url) {
  static const std::regex kRunfileVersion(R"(/cuda_(\d+\.\d+\.\d+)_)");
  std::match_results<std::string_view::const_iterator> match;
  if (!std::regex_search(url.begin(), url.end(), match, kRunfileVersion)) return std::nullopt;
  auto version = Version::parse(match[1].str());
  return version ? std::optional<Version>(std::move(version).value()) : std::nullopt;
}

// CUDA 9.0's patches 2-4, which ../shared/upstream lacks (its excerpt of the later nixpkgs
// revision stops after patch 1). nixpkgs' `cudatoolkit_9_0.runPatches`, as written in
// pkgs/development/compilers/cudatoolkit/default.nix of knedlsepp/nixpkgs at
// 630068ecdbe3f53901cee19ddf6a05675ce89766 and of serokell/nixpkgs at
// 068260dad606d70c936274ef8261e21b5a788814 (both nixpkgs history; the two agree, and both
// list patch 1 with the hash the upstream table has). Nix writes sha256 in its base32.
struct CitedPatch {
  std::string_view cuda;
  std::string_view url;
  std::string_view nix_base32_sha256;
};
constexpr CitedPatch kCitedPatches[] = {
    {"9.0.176",
     "https://developer.nvidia.com/compute/cuda/9.0/Prod/patches/2/cuda_9.0.176.2_linux-run",
     "1sz5dijbx9yf7drfipdxav5a5g6sxy4w6vi9xav0lb6m2xnmyd7c"},
    {"9.0.176",
     "https://developer.nvidia.com/compute/cuda/9.0/Prod/patches/3/cuda_9.0.176.3_linux-run",
     "1jm83bxpscpjhzs5q3qijdgjm0r8qrdlgkj7y08fq8c0v8q2r7j2"},
    {"9.0.176",
     "https://developer.nvidia.com/compute/cuda/9.0/Prod/patches/4/cuda_9.0.176.4_linux-run",
     "0pymg3mymsa2n48y0njz3spzlkm15lvjzw8fms1q83zslz4x0lwk"},
};
constexpr std::string_view kCitedPatchesSource =
    "cuda 9.0.176 patches 2-4: nixpkgs pkgs/development/compilers/cudatoolkit/default.nix "
    "(knedlsepp/nixpkgs@630068ecdbe3f53901cee19ddf6a05675ce89766, "
    "serokell/nixpkgs@068260dad606d70c936274ef8261e21b5a788814)";

// The patches a runfile of the table gets beyond its rows: the cited ones of its version
// whose URL the table does not already list.
void add_cited_patches(Runfile& runfile) {
  auto& patches = runfile.artifact.patches;
  for (const auto& cited : kCitedPatches) {
    if (runfile.version.original() != cited.cuda) continue;
    const bool listed = std::any_of(patches.begin(), patches.end(),
                                    [&](const RunfilePatch& p) { return p.url == cited.url; });
    if (listed) continue;
    // A constant of this file: a malformed one is a programming error the tests catch.
    patches.push_back(
        {.url = std::string(cited.url),
         .sha256 = core::nix_base32_sha256_to_hex(cited.nix_base32_sha256).value_or(""),
         .size = std::nullopt});
  }
}

// legacy-cuda-cudnn-nixpkgs-old runfiles: only CUDA 9.x (10.0 comes from cuda_runfiles.csv).
// Its `runfile-patch` rows are the patches of the runfile row with the same nixpkgs_version,
// in the order listed (the order nixpkgs applies them).
Result<std::vector<Runfile>> read_legacy_runfiles(CsvSource source) {
  auto sheet = read_sheet(source, {"nixpkgs_version", "kind", "url", "sha256_hex_derived"});
  if (!sheet) return std::move(sheet).error();
  std::vector<Runfile> runfiles;
  std::map<std::string, std::vector<RunfilePatch>> patches;  // nixpkgs_version -> its patches
  std::map<std::string, std::size_t> runfile_of;             // nixpkgs_version -> runfiles index
  for (const auto& row : sheet->table.rows()) {
    const auto kind = text::trim(sheet->cell(row, "kind"));
    const std::string listed_text(text::trim(sheet->cell(row, "nixpkgs_version")));
    if (kind == "runfile-patch") {
      auto sha256 = sheet->sha256(row, "sha256_hex_derived");
      if (!sha256) return std::move(sha256).error();
      patches[listed_text].push_back({.url = std::string(text::trim(sheet->cell(row, "url"))),
                                      .sha256 = std::move(sha256).value(),
                                      .size = std::nullopt});
      continue;
    }
    if (kind != "runfile") continue;
    auto listed = sheet->version(row, "nixpkgs_version");
    if (!listed) return std::move(listed).error();
    auto version = version_in_runfile_name(sheet->cell(row, "url")).value_or(*listed);
    if (version.major() != 9) continue;
    auto runfile = runfile_from(*sheet, row, std::move(version), "url", "sha256_hex_derived");
    if (!runfile) return std::move(runfile).error();
    runfile_of[listed_text] = runfiles.size();
    runfiles.push_back(std::move(runfile).value());
  }
  for (auto& [listed, list] : patches) {
    const auto it = runfile_of.find(listed);
    if (it == runfile_of.end()) continue;  // a patch of a runfile envkit does not import (8.0)
    runfiles[it->second].artifact.patches = std::move(list);
  }
  for (auto& runfile : runfiles)
    add_cited_patches(runfile);
  return runfiles;
}

bool has_version(const std::vector<Version>& versions, const Version& version) {
  return std::find(versions.begin(), versions.end(), version) != versions.end();
}

// Table 3 rows without a runfile of their own that name the one unclaimed runfile of their
// major.minor (9.0.76 -> 9.0.176): those rows are that release and add no version.
std::vector<Version> rows_paired_with_runfiles(const std::vector<Version>& rows,
                                               const std::vector<Version>& runfiles) {
  struct Unmatched {
    std::vector<Version> rows;
    int runfiles = 0;
  };
  std::map<Version, Unmatched> by_series;
  for (const auto& row : rows) {
    if (!has_version(runfiles, row)) by_series[row.major_minor()].rows.push_back(row);
  }
  for (const auto& runfile : runfiles) {
    if (!has_version(rows, runfile)) ++by_series[runfile.major_minor()].runfiles;
  }
  std::vector<Version> paired;
  for (const auto& [series, unmatched] : by_series) {
    if (unmatched.rows.size() == 1 && unmatched.runfiles == 1) {
      paired.push_back(unmatched.rows.front());
    }
  }
  return paired;
}

RecipeVersion cuda_version_with(Version version, std::optional<Artifact> runfile) {
  Build build;
  if (runfile) {
    build.platforms.push_back(runfile->platform);
    build.artifacts.push_back(std::move(*runfile));
  }
  return RecipeVersion{.version = std::move(version), .builds = {std::move(build)}};
}

// ---- legacy cuDNN ----

struct CudnnTarball {
  Version cudnn;
  Version min_cuda;
  Version max_cuda;
  Artifact artifact;
};

Result<Artifact> cudnn_artifact(const Sheet& sheet, const csv::Row& row, Platform platform) {
  const std::string url(text::trim(sheet.cell(row, "url")));
  const auto format = nvidia::archive_format(url);
  if (!format) return sheet.error_at(row, fmt::format("unknown archive format of {}", url));
  auto sha256 = sheet.sha256(row, "sha256_hex_derived");
  if (!sha256) return std::move(sha256).error();
  // Pre-redist .tgz tarballs hold cuda/include and cuda/lib64; the .tar.xz ones are redist-style.
  const auto layout = *format == "tgz" ? Layout::cudnn_legacy : Layout::nvidia_redist;
  return Artifact{.platform = platform,
                  .component = "cudnn",
                  .kind = ArtifactKind::archive,
                  .url = url,
                  .sha256 = std::move(sha256).value(),
                  .format = *format,
                  .layout = layout};
}

// cudnn-legacy-tarballs/cudnn_releases_nixpkgs.csv. Its `linux-aarch64` is Jetson, as NVIDIA's.
Result<std::vector<CudnnTarball>> read_cudnn_releases(CsvSource source) {
  auto sheet = read_sheet(source, {"platform", "cudnn_version", "minCudaVersion", "maxCudaVersion",
                                   "url", "sha256_hex_derived"});
  if (!sheet) return std::move(sheet).error();
  std::vector<CudnnTarball> tarballs;
  for (const auto& row : sheet->table.rows()) {
    const auto platform = nvidia::envkit_platform(text::trim(sheet->cell(row, "platform")));
    if (!platform) continue;
    auto cudnn = sheet->version(row, "cudnn_version");
    if (!cudnn) return std::move(cudnn).error();
    auto min_cuda = sheet->version(row, "minCudaVersion");
    if (!min_cuda) return std::move(min_cuda).error();
    auto max_cuda = sheet->version(row, "maxCudaVersion");
    if (!max_cuda) return std::move(max_cuda).error();
    auto artifact = cudnn_artifact(*sheet, row, *platform);
    if (!artifact) return std::move(artifact).error();
    tarballs.push_back({std::move(cudnn).value(), std::move(min_cuda).value(),
                        std::move(max_cuda).value(), std::move(artifact).value()});
  }
  return tarballs;
}

// The version in a tarball's name where it is more precise than the table's
// (cudnn-9.0-linux-x64-v7.3.0.29.tgz refines 7.3.0; ...-v7.tgz does not refine 7.0.5).
Version cudnn_version_spelled(const Version& listed, std::string_view url) {
  static const std::regex kNameVersion(R"(-v(\d+(\.\d+)*)\.tgz$)");
  std::match_results<std::string_view::const_iterator> match;
  if (!std::regex_search(url.begin(), url.end(), match, kNameVersion)) return listed;
  const auto named = match[1].str();
  if (!named.starts_with(listed.original() + ".")) return listed;
  auto version = Version::parse(named);
  return version ? std::move(version).value() : listed;
}

// legacy-cuda-cudnn-nixpkgs-old/cudnn_4_to_7_tarballs_nixpkgs_old.csv: one CUDA minor each.
Result<std::vector<CudnnTarball>> read_old_cudnn_tarballs(CsvSource source) {
  auto sheet =
      read_sheet(source, {"cudnn_version", "cuda_major_minor", "url", "sha256_hex_derived"});
  if (!sheet) return std::move(sheet).error();
  std::vector<CudnnTarball> tarballs;
  for (const auto& row : sheet->table.rows()) {
    auto listed = sheet->version(row, "cudnn_version");
    if (!listed) return std::move(listed).error();
    auto cuda = sheet->version(row, "cuda_major_minor");
    if (!cuda) return std::move(cuda).error();
    if (listed->major() < kOldestLegacyCudnnMajor || *cuda < oldest_cuda()) continue;
    auto artifact = cudnn_artifact(*sheet, row, Platform::linux_x86_64);
    if (!artifact) return std::move(artifact).error();
    tarballs.push_back(
        {cudnn_version_spelled(*listed, artifact->url), *cuda, *cuda, std::move(artifact).value()});
  }
  return tarballs;
}

std::string minor_text(const Version& version) {
  return version.major_minor().to_string();
}

std::string legacy_build_id(const CudnnTarball& tarball) {
  if (tarball.min_cuda.major_minor() == tarball.max_cuda.major_minor()) {
    return fmt::format("cuda{}", minor_text(tarball.min_cuda));
  }
  return fmt::format("cuda{}-{}", minor_text(tarball.min_cuda), minor_text(tarball.max_cuda));
}

specs::VersionSpec cuda_range(const Version& min, std::string_view below) {
  return specs::VersionSpec::parse(fmt::format(">={},<{}", minor_text(min), below)).value();
}

// A tarball of a version the redist manifests lack: its own build for its CUDA range.
Recipe legacy_cudnn_version(const CudnnTarball& tarball) {
  Build build{.id = legacy_build_id(tarball)};
  const auto next_minor =
      fmt::format("{}.{}", tarball.max_cuda.major(), tarball.max_cuda.minor() + 1);
  build.requires_.emplace("cuda", cuda_range(tarball.min_cuda, next_minor));
  nvidia::add_cudnn_runtime_requirements(build, tarball.cudnn);
  build.platforms = {tarball.artifact.platform};
  build.artifacts = {tarball.artifact};
  Recipe recipe{.name = "cudnn"};
  recipe.versions.push_back({.version = tarball.cudnn, .builds = {std::move(build)}});
  return recipe;
}

// For versions NVIDIA's manifests hold: nixpkgs' lowest minCudaVersion per cuda<N> build, where
// it is above N.0 and the build exists.
Recipe refined_cuda_minimums(const std::vector<CudnnTarball>& tarballs, const Recipe& redist) {
  struct Floor {
    Version cudnn;
    Version min_cuda;
  };
  std::map<std::pair<std::string, std::string>, Floor> floors;  // (version, build id)
  for (const auto& tarball : tarballs) {
    const auto* version = redist.find(tarball.cudnn);
    if (version == nullptr) continue;
    const auto id = fmt::format("cuda{}", tarball.min_cuda.major());
    const bool has_build = std::any_of(version->builds.begin(), version->builds.end(),
                                       [&](const Build& b) { return b.id == id; });
    if (!has_build) continue;
    const auto key = std::make_pair(version->version.original(), id);
    const auto it = floors.find(key);
    if (it == floors.end()) {
      floors.emplace(key, Floor{version->version, tarball.min_cuda});
    } else if (tarball.min_cuda < it->second.min_cuda) {
      it->second.min_cuda = tarball.min_cuda;
    }
  }
  Recipe recipe{.name = "cudnn"};
  for (const auto& [key, floor] : floors) {
    const auto major = floor.min_cuda.major();
    if (floor.min_cuda <= Version::from_release({major})) continue;
    Build build{.id = key.second};
    build.requires_.emplace("cuda", cuda_range(floor.min_cuda, std::to_string(major + 1)));
    RecipeVersion version{.version = floor.cudnn, .builds = {std::move(build)}};
    merge_into(recipe, Recipe{.name = "cudnn", .versions = {std::move(version)}});
  }
  return recipe;
}

}  // namespace

Result<void> add_min_drivers(Recipe& cuda, CsvSource driver_table) {
  auto rows = read_driver_rows(driver_table);
  if (!rows) return std::move(rows).error();
  for (auto& version : cuda.versions) {
    const auto* row = driver_row_for(*rows, version.version);
    if (row == nullptr) continue;
    for (auto& build : version.builds)
      set_driver_minimums(build.min_driver, row->linux_driver, row->windows_driver);
  }
  cuda.sources.push_back(nvidia::provenance(driver_table.file));
  canonicalize(cuda);
  return {};
}

Result<void> add_minor_version_compat(Recipe& cuda, CsvSource compat_table) {
  auto sheet = read_sheet(compat_table, {"cuda_major", "exact_min_linux", "exact_min_windows"});
  if (!sheet) return std::move(sheet).error();
  static const std::regex kFamily(R"((\d+)\.x)");
  for (const auto& row : sheet->table.rows()) {
    std::smatch family;
    const std::string major_text(text::trim(sheet->cell(row, "cuda_major")));
    if (!std::regex_match(major_text, family, kFamily)) continue;  // 10.x's exact minimums
    const auto major = std::stoull(family[1].str());
    if (major < kFirstMinorCompatMajor) continue;
    auto linux_driver = sheet->optional_version(row, "exact_min_linux");
    if (!linux_driver) return std::move(linux_driver).error();
    auto windows_driver = sheet->optional_version(row, "exact_min_windows");
    if (!windows_driver) return std::move(windows_driver).error();
    for (auto& version : cuda.versions) {
      if (version.version.major() != major) continue;
      for (auto& build : version.builds) {
        set_driver_minimums(build.min_driver_compat, *linux_driver, *windows_driver);
      }
    }
  }
  cuda.sources.push_back(nvidia::provenance(compat_table.file));
  canonicalize(cuda);
  return {};
}

namespace {

// nixpkgs starts sm_80 and sm_86 at CUDA 11.2, the first release it packaged, not the
// first that compiles for them. NVIDIA's own documents say earlier, and they win:
// the Ampere Compatibility Guide, "Building Applications Using CUDA Toolkit 11.0"
// (sm_80), and the CUDA 11.1 release notes, "Added support for NVIDIA Ampere GPU
// architecture based GA10x GPUs (compute capability 8.6)".
struct FirstCuda {
  std::string_view capability;
  std::string_view cuda;
  std::string_view source;
};
constexpr FirstCuda kNvidiaFirstCuda[] = {
    {"8.0", "11.0",
     "https://docs.nvidia.com/cuda/ampere-compatibility-guide/ (Building Applications Using CUDA "
     "Toolkit 11.0)"},
    {"8.6", "11.1", "https://docs.nvidia.com/cuda/archive/11.1.0/cuda-toolkit-release-notes/"},
};

// The first CUDA with code for `capability`: NVIDIA's statement where it is earlier than
// the table's.
specs::Version first_cuda(std::string_view capability, specs::Version from_table,
                          std::vector<std::string>& sources) {
  for (const auto& fact : kNvidiaFirstCuda) {
    if (fact.capability != capability) continue;
    auto nvidia = *specs::Version::parse(fact.cuda);
    if (nvidia < from_table) {
      std::string sm = "sm_";
      std::copy_if(capability.begin(), capability.end(), std::back_inserter(sm),
                   [](char c) { return c != '.'; });
      sources.push_back(fmt::format("{} from CUDA {}: {}", sm, fact.cuda, fact.source));
      return nvidia;
    }
  }
  return from_table;
}

}  // namespace

Result<void> add_compute_capabilities(Recipe& cuda, CsvSource capabilities) {
  auto sheet = read_sheet(capabilities,
                          {"cuda_capability", "is_jetson", "is_architecture_specific",
                           "is_family_specific", "min_cuda_major_minor", "max_cuda_major_minor"});
  if (!sheet) return std::move(sheet).error();
  std::vector<std::string> corrections;
  for (const auto& row : sheet->table.rows()) {
    // ComputeCapability has no room for the a/f suffixes; Jetson is out of scope.
    if (is_true(sheet->cell(row, "is_jetson")) ||
        is_true(sheet->cell(row, "is_architecture_specific")) ||
        is_true(sheet->cell(row, "is_family_specific"))) {
      continue;
    }
    auto capability = specs::ComputeCapability::parse(sheet->cell(row, "cuda_capability"));
    if (!capability) return sheet->error_at(row, capability.error().message());
    auto min_cuda = sheet->version(row, "min_cuda_major_minor");
    if (!min_cuda) return std::move(min_cuda).error();
    *min_cuda = first_cuda(sheet->cell(row, "cuda_capability"), *min_cuda, corrections);
    auto max_cuda = sheet->optional_version(row, "max_cuda_major_minor");  // empty: still supported
    if (!max_cuda) return std::move(max_cuda).error();
    for (auto& version : cuda.versions) {
      const auto series = version.version.major_minor();
      if (series < *min_cuda || (*max_cuda && series > **max_cuda)) continue;
      for (auto& build : version.builds)
        build.cuda_arch.push_back(*capability);
    }
  }
  cuda.sources.push_back(nvidia::provenance(capabilities.file));
  cuda.sources.insert(cuda.sources.end(), corrections.begin(), corrections.end());
  canonicalize(cuda);
  return {};
}

Result<Recipe> import_cuda_runfiles(CsvSource driver_table, CsvSource runfiles,
                                    CsvSource legacy_runfiles) {
  auto rows = read_driver_rows(driver_table);
  if (!rows) return std::move(rows).error();
  auto installers = read_runfiles(runfiles);
  if (!installers) return std::move(installers).error();
  auto legacy = read_legacy_runfiles(legacy_runfiles);
  if (!legacy) return std::move(legacy).error();
  installers->insert(installers->end(), legacy->begin(), legacy->end());

  std::vector<Version> row_versions, runfile_versions;
  for (const auto& row : *rows) {
    if (in_runfile_era(row.cuda)) row_versions.push_back(row.cuda);
  }
  for (const auto& installer : *installers)
    runfile_versions.push_back(installer.version);
  const auto paired = rows_paired_with_runfiles(row_versions, runfile_versions);

  Recipe recipe{
      .name = "cuda",
      .sources = {nvidia::provenance(driver_table.file), nvidia::provenance(runfiles.file),
                  nvidia::provenance(legacy_runfiles.file), std::string(kCitedPatchesSource)}};
  for (auto& installer : *installers) {
    recipe.versions.push_back(cuda_version_with(installer.version, std::move(installer.artifact)));
  }
  for (const auto& row : row_versions) {
    if (!has_version(runfile_versions, row) && !has_version(paired, row)) {
      recipe.versions.push_back(cuda_version_with(row, std::nullopt));
    }
  }
  canonicalize(recipe);
  return recipe;
}

Result<Recipe> import_legacy_cudnn(CsvSource releases, CsvSource old_tarballs,
                                   const Recipe& redist_cudnn) {
  auto tarballs = read_cudnn_releases(releases);
  if (!tarballs) return std::move(tarballs).error();
  auto old = read_old_cudnn_tarballs(old_tarballs);
  if (!old) return std::move(old).error();
  tarballs->insert(tarballs->end(), old->begin(), old->end());

  Recipe recipe{
      .name = "cudnn",
      .sources = {nvidia::provenance(releases.file), nvidia::provenance(old_tarballs.file)}};
  for (const auto& tarball : *tarballs) {
    if (redist_cudnn.find(tarball.cudnn) == nullptr) {
      merge_into(recipe, legacy_cudnn_version(tarball));
    }
  }
  merge_into(recipe, refined_cuda_minimums(*tarballs, redist_cudnn));
  return recipe;
}

}  // namespace envkit::recipes
