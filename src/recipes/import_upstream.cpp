#include "envkit/recipes/import_upstream.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "envkit/core/text.hpp"
#include "envkit/recipes/check.hpp"
#include "envkit/recipes/import_cuda_facts.hpp"
#include "envkit/recipes/import_frameworks.hpp"
#include "envkit/recipes/import_nvidia_redist.hpp"
#include "envkit/recipes/import_python.hpp"
#include "envkit/recipes/import_torch_kernels.hpp"
#include "envkit/recipes/import_zlib.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::recipes {

namespace fs = std::filesystem;

namespace {

// The upstream files, read once; each keeps the name it has inside its folder, and is
// read from the first folder that has it (../shared/upstream, then envkit's own upstream/).
class UpstreamFiles {
 public:
  explicit UpstreamFiles(std::vector<fs::path> roots)
      : roots_(std::move(roots)), root_(roots_.front()) {}

  // The file's text and its name, both owned here: importers keep views of
  // the name (Recipe::sources, errors), so it must outlive the call.
  struct File {
    std::string_view name;
    std::string_view text;
  };
  Result<File> read(const std::string& relative) {
    auto it = texts_.find(relative);
    if (it == texts_.end()) {
      auto text = sys::read_file(where(relative) / relative);
      if (!text) return text.error();
      it = texts_.emplace(relative, *std::move(text)).first;
    }
    return File{it->first, it->second};
  }

  // `folder/redistrib_*.json`, sorted by name.
  Result<std::vector<std::string>> manifests(const std::string& folder) const {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(root_ / folder, ec)) {
      const auto name = entry.path().filename().string();
      if (name.starts_with("redistrib_") && name.ends_with(".json"))
        names.push_back(folder + "/" + name);
    }
    if (ec) {
      return Error::input(fmt::format("cannot list {}", (root_ / folder).string()))
          .because(ec.message());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  fs::path where(const std::string& relative) const {
    std::error_code ec;
    for (const auto& root : roots_) {
      if (fs::exists(root / relative, ec)) return root;
    }
    return root_;  // reading it there names the first folder in the error
  }

  std::vector<fs::path> roots_;
  fs::path root_;
  std::map<std::string, std::string> texts_;
};

Result<void> merge_redist(UpstreamFiles& files, const std::string& folder, Recipe& into) {
  auto names = files.manifests(folder);
  if (!names) return names.error();
  for (const auto& name : *names) {
    auto file = files.read(name);
    if (!file) return file.error();
    auto imported = import_nvidia_redist(file->text, file->name);
    if (!imported) return imported.error();
    merge_into(into, *imported);
  }
  return {};
}

Result<CsvSource> csv(UpstreamFiles& files, const std::string& name) {
  auto file = files.read(name);
  if (!file) return file.error();
  return CsvSource{file->text, file->name};
}

Result<UpstreamText> upstream_text(UpstreamFiles& files, const std::string& name) {
  auto file = files.read(name);
  if (!file) return file.error();
  return UpstreamText{file->text, file->name};
}

Result<Recipe> cuda_recipe(UpstreamFiles& files) {
  Recipe cuda{.name = "cuda", .sources = {}, .default_components = {}, .versions = {}};
  if (auto merged = merge_redist(files, "nvidia-redist-cuda", cuda); !merged) return merged.error();
  auto drivers = csv(files, "nvidia-driver-compat/cuda_toolkit_driver_versions.csv");
  auto runfiles = csv(files, "cuda-runfile-installers/cuda_runfiles.csv");
  auto old_runfiles =
      csv(files, "legacy-cuda-cudnn-nixpkgs-old/cuda_runfiles_6_to_10_nixpkgs_old.csv");
  auto compat = csv(files, "nvidia-driver-compat/minor_version_compat.csv");
  auto capabilities =
      csv(files, "gpu-arch-and-compiler-support/nixpkgs_cuda_capabilities_current.csv");
  for (const auto* table : {&drivers, &runfiles, &old_runfiles, &compat, &capabilities}) {
    if (!*table) return table->error();
  }
  auto older = import_cuda_runfiles(*drivers, *runfiles, *old_runfiles);
  if (!older) return older.error();
  merge_into(cuda, *older);
  if (auto added = add_min_drivers(cuda, *drivers); !added) return added.error();
  if (auto added = add_minor_version_compat(cuda, *compat); !added) return added.error();
  if (auto added = add_compute_capabilities(cuda, *capabilities); !added) return added.error();
  return cuda;
}

Result<Recipe> cudnn_recipe(UpstreamFiles& files) {
  Recipe cudnn{.name = "cudnn", .sources = {}, .default_components = {}, .versions = {}};
  for (const std::string folder : {"nvidia-redist-cudnn", "nvidia-redist-cudnn-nixpkgs-newer"}) {
    if (auto merged = merge_redist(files, folder, cudnn); !merged) return merged.error();
  }
  auto releases = csv(files, "cudnn-legacy-tarballs/cudnn_releases_nixpkgs.csv");
  if (!releases) return releases.error();
  auto old = csv(files, "legacy-cuda-cudnn-nixpkgs-old/cudnn_4_to_7_tarballs_nixpkgs_old.csv");
  if (!old) return old.error();
  auto legacy = import_legacy_cudnn(*releases, *old, cudnn);
  if (!legacy) return legacy.error();
  merge_into(cudnn, *legacy);
  return cudnn;
}

// Drops builds that need a version the data lacks, then versions left without
// builds, until nothing changes (a dropped cuDNN version can strand a framework build).
std::vector<std::string> prune_unsatisfiable(std::vector<Recipe>& recipes) {
  std::vector<std::string> left_out;
  for (bool changed = true; changed;) {
    changed = false;
    const VersionIndex index = index_versions(recipes);
    for (auto& recipe : recipes) {
      for (auto& version : recipe.versions) {
        std::erase_if(version.builds, [&](const Build& build) {
          const auto unmet = unmet_requirements(build, index);
          if (unmet.empty()) return false;
          left_out.push_back(
              fmt::format("{} {}{}: needs {}", recipe.name, version.version.original(),
                          build.id.empty() ? "" : " " + build.id, text::join(unmet, ", ")));
          changed = true;
          return true;
        });
      }
      std::erase_if(recipe.versions, [](const RecipeVersion& v) { return v.builds.empty(); });
    }
  }
  return left_out;
}

}  // namespace

Result<UpstreamImport> import_upstream(const fs::path& upstream_dir) {
  return import_upstream(std::vector<fs::path>{upstream_dir});
}

Result<UpstreamImport> import_upstream(const std::vector<fs::path>& upstream_dirs) {
  if (upstream_dirs.empty()) return Error::input("no folder of upstream metadata given");
  for (const auto& dir : upstream_dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      return Error::input(fmt::format("{} is not a folder of upstream metadata", dir.string()));
    }
  }
  UpstreamFiles files(upstream_dirs);
  std::vector<Recipe> out;

  auto cuda = cuda_recipe(files);
  if (!cuda) return cuda.error();
  out.push_back(*std::move(cuda));
  auto cudnn = cudnn_recipe(files);
  if (!cudnn) return cudnn.error();
  out.push_back(*std::move(cudnn));

  const std::string python_file = "python-build-standalone-uv/download-metadata.json";
  auto python_json = files.read(python_file);
  if (!python_json) return python_json.error();
  auto python = import_python_standalone(python_json->text, python_json->name);
  if (!python) return python.error();
  out.push_back(*std::move(python));

  const std::string zlib_file = "zlib/zlib_releases.csv";
  auto zlib_csv = files.read(zlib_file);
  if (!zlib_csv) return zlib_csv.error();
  auto zlib = import_zlib(zlib_csv->text, zlib_csv->name);
  if (!zlib) return zlib.error();
  out.push_back(*std::move(zlib));

  auto release_matrix = upstream_text(files, "pytorch/pytorch_release_compat_matrix.csv");
  auto previous = upstream_text(files, "pytorch/previous_versions_wheel_cuda_variants.csv");
  auto arch =
      upstream_text(files, "gpu-arch-and-compiler-support/pytorch_cuda_arch_support_matrix.csv");
  auto tf_linux = upstream_text(files, "tensorflow-tested-builds/tensorflow_tested_linux_gpu.csv");
  auto tf_windows =
      upstream_text(files, "tensorflow-tested-builds/tensorflow_tested_windows_gpu.csv");
  for (const auto* text : {&release_matrix, &previous, &arch, &tf_linux, &tf_windows}) {
    if (!*text) return text->error();
  }
  auto torch = import_torch({*release_matrix, *previous, *arch});
  if (!torch) return torch.error();
  auto build_scripts = upstream_text(files, "pytorch-build-scripts/torch_cuda_arch_list.csv");
  if (!build_scripts) return build_scripts.error();
  if (auto added = add_torch_kernel_archs(*torch, *build_scripts); !added) return added.error();
  out.push_back(*std::move(torch));
  auto tensorflow = import_tensorflow({*tf_linux, *tf_windows});
  if (!tensorflow) return tensorflow.error();
  out.push_back(std::move(tensorflow->tensorflow));
  out.push_back(std::move(tensorflow->tensorflow_gpu));
  for (auto& recipe : out)
    canonicalize(recipe);
  auto left_out = prune_unsatisfiable(out);
  return UpstreamImport{std::move(out), std::move(left_out)};
}

}  // namespace envkit::recipes
