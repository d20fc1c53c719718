#pragma once

// A project whose envkit runs the main path of a lock, the Python closure and today's index
// on, against a hermetic package index served by nginx as its download mirror (the real
// internet out of reach: a proxy on a closed port). Shared by the closure, today's-index and
// end-to-end tests.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/lock/lockfile.hpp"
#include "install_support.hpp"
#include "isolated_project.hpp"
#include "support/http_server.hpp"
#include "support/python_index.hpp"

namespace envkit::test {

using EnvVars = std::map<std::string, std::optional<std::string>>;

// Where a proxy would be, on a port nothing listens on: the real internet is out of reach.
inline constexpr std::string_view kClosedProxy = "http://127.0.0.1:9";

// The settings of a run with the closure and today's index on: `mirror` as the download
// mirror (nullopt: none), envkit's uv, no proxy but a closed port.
inline EnvVars closure_on(std::optional<std::string> mirror, const std::filesystem::path& uv) {
  return {{"ENVKIT_NO_PYTHON", std::nullopt},
          {"ENVKIT_NO_LIVE_INDEX", std::nullopt},
          {"ENVKIT_MIRRORS", std::move(mirror)},
          {"ENVKIT_UV", uv.string()},
          {"https_proxy", std::string(kClosedProxy)},
          {"http_proxy", std::string(kClosedProxy)},
          {"no_proxy", "127.0.0.1"}};
}

// The machine's CUDA 12.1.1 with cuDNN 9.1.0 in it, which the closure tests state under
// `external:`: envkit checks that against the tree (locking/external_check.hpp).
inline std::filesystem::path write_machine_cuda(const IsolatedProject& project) {
  const auto root = project.dir.path() / "machine-cuda";
  project.write(root / "version.json", R"({"cuda": {"name": "CUDA SDK", "version": "12.1.1"}})");
  project.write(root / "include" / "cudnn_version.h",
                "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n");
  return root;
}

struct ClosureOnProject {
  IsolatedProject project;
  std::filesystem::path machine_cuda = write_machine_cuda(project);
  std::filesystem::path served = project.dir.path() / "index";
  std::filesystem::path recipes = source_dir() / "recipes";
  std::optional<std::filesystem::path> uv = test_uv();
  std::vector<MirroredFile> files;
  std::optional<StaticHttpServer> index;

  // Records the skip and returns true without uv or nginx; else serves `descriptions`.
  bool skip(const std::vector<std::filesystem::path>& descriptions) {
    if (uv_missing() || nginx_missing()) return true;
    serve(descriptions);
    return false;
  }
  // (Re)builds the served folder from `descriptions`: the index as it is now.
  void serve(const std::vector<std::filesystem::path>& descriptions) {
    std::filesystem::remove_all(served);
    files = build_mirror(served, descriptions);
    if (!index) index.emplace(served);
  }

  [[nodiscard]] EnvVars env(std::optional<std::string> mirror = {}) const {
    if (!mirror && index) mirror = index->url("");
    auto vars = closure_on(std::move(mirror), *uv);
    vars.insert_or_assign("CUDA_HOME", machine_cuda.string());
    vars.insert_or_assign("CUDA_PATH", std::nullopt);
    return vars;
  }
  // envkit --recipes RECIPES ARGS in the project (through `mirror` when given).
  [[nodiscard]] sys::ProcessOutput envkit(std::vector<std::string> args,
                                          std::optional<std::string> mirror = {}) const {
    args.insert(args.begin(), {"--recipes", recipes.string()});
    return project.envkit(std::move(args), env(std::move(mirror)));
  }
  void write(const std::string& file, const std::string& text) const {
    project.write(project.root / file, text);
  }
  // `envkit lock FLAGS`, which must succeed, and the lock it wrote.
  [[nodiscard]] lock::Lockfile locked(std::vector<std::string> flags = {}) const {
    flags.insert(flags.begin(), "lock");
    const auto ran = envkit(std::move(flags));
    INFO(ran.err);
    REQUIRE(ran.exit_code == 0);
    auto loaded = lock::load(project.root / "envkit.lock");
    INFO((loaded ? "" : loaded.error().to_string()));
    REQUIRE(loaded);
    return *std::move(loaded);
  }
};

}  // namespace envkit::test
