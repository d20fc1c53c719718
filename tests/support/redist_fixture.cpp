#include "support/redist_fixture.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "envkit/core/sha256.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kCudaRoot = "/usr/local/cuda";

void run_or_throw(const std::vector<std::string>& argv,
                  std::map<std::string, std::optional<std::string>> env = {}) {
  auto result = sys::run_process(argv, {.env = std::move(env), .timeout = std::chrono::minutes(5)});
  if (!result) throw std::runtime_error(result.error().to_string());
  if (result->exit_code != 0)
    throw std::runtime_error(argv.front() + " failed: " + result->err + result->out);
}

// Lays `component`'s files out under `dir`.
void stage(const FixtureComponent& component, const fs::path& dir, bool symlinks) {
  for (const auto& file : component.files) {
    const auto to = dir / file.path;
    fs::create_directories(to.parent_path());
    if (!file.symlink_target.empty()) {
      if (symlinks) fs::create_symlink(file.symlink_target, to);
      continue;
    }
    if (!file.source.empty()) {
      fs::copy_file(file.source, to, fs::copy_options::overwrite_existing);
    } else {
      std::ofstream(to, std::ios::binary) << file.content;
    }
    fs::permissions(to, file.mode ? fs::perms(*file.mode)
                                  : (file.executable ? fs::perms(0755) : fs::perms(0644)));
  }
}

BuiltArtifact describe(const fs::path& root, const fs::path& file, const FixtureComponent& c) {
  // Streamed: a real component (cuBLAS) is larger than envkit reads of an input file.
  auto sha256 = core::sha256_file(file);
  if (!sha256) throw std::runtime_error("cannot read " + file.string());
  return {.component = c.name,
          .version = c.version,
          .relative_path = file.lexically_relative(root).generic_string(),
          .sha256 = *sha256,
          .size = fs::file_size(file)};
}

}  // namespace

RedistMirror::RedistMirror(fs::path root) : root_(std::move(root)) {
  fs::create_directories(root_);
}

BuiltArtifact RedistMirror::add_archive(const FixtureComponent& component,
                                        Compression compression) const {
  const auto top = component.name + "-linux-x86_64-" + component.version + "-archive";
  const TempDir work;
  stage(component, work.path() / top, true);
  std::ofstream(work.path() / top / "LICENSE") << component.license;
  const bool xz = compression == Compression::xz;
  const auto file = root_ / component.name / "linux-x86_64" / (top + (xz ? ".tar.xz" : ".tar.gz"));
  fs::create_directories(file.parent_path());
  // Level 0 or 1: quick to make, and still the real format.
  run_or_throw({"tar", "-C", work.path().string(), "-I", xz ? "xz -0 -T1" : "gzip -1", "-cf",
                file.string(), top});
  return describe(root_, file, component);
}

BuiltArtifact RedistMirror::add_wheel(const FixtureComponent& component,
                                      std::string_view dist_name) const {
  const TempDir work;
  stage(component, work.path() / "nvidia" / "cu13", false);
  const auto dist_info = std::string(dist_name) + "-" + component.version + ".dist-info";
  fs::create_directories(work.path() / dist_info / "licenses");
  std::ofstream(work.path() / dist_info / "licenses" / "License.txt") << component.license;
  std::ofstream(work.path() / dist_info / "WHEEL") << "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n";
  const auto file =
      root_ / "wheels" /
      (std::string(dist_name) + "-" + component.version + "-py3-none-manylinux_2_27_x86_64.whl");
  fs::create_directories(file.parent_path());
  // Python's zipfile writes what pip's wheels are: unix modes in the external attributes.
  run_or_throw({"python3", "-c",
                "import os,sys,zipfile\n"
                "root,out=sys.argv[1],sys.argv[2]\n"
                "with zipfile.ZipFile(out,'w',zipfile.ZIP_DEFLATED,compresslevel=1) as z:\n"
                "  for d,_,fs in sorted(os.walk(root)):\n"
                "    for f in sorted(fs):\n"
                "      p=os.path.join(d,f); z.write(p, os.path.relpath(p, root))\n",
                work.path().string(), file.string()});
  auto built = describe(root_, file, component);
  built.wheel = true;
  built.wheel_root = "nvidia/cu13";
  return built;
}

fs::path RedistMirror::write_redistrib(std::string_view release_label,
                                       const std::vector<BuiltArtifact>& artifacts) const {
  nlohmann::json manifest = {{"release_date", "2025-10-01"},
                             {"release_label", std::string(release_label)},
                             {"release_product", "cuda"}};
  for (const auto& artifact : artifacts) {
    if (artifact.wheel) continue;
    manifest[artifact.component] = {{"name", artifact.component},
                                    {"license", "CUDA Toolkit"},
                                    {"version", artifact.version},
                                    {"linux-x86_64",
                                     {{"relative_path", artifact.relative_path},
                                      {"sha256", artifact.sha256},
                                      {"md5", "00000000000000000000000000000000"},
                                      {"size", std::to_string(artifact.size)}}}};
  }
  const auto file = root_ / ("redistrib_" + std::string(release_label) + ".json");
  std::ofstream(file) << manifest.dump(4) << '\n';
  return file;
}

std::optional<FixtureComponent> real_cuda_component(std::string_view dist_info, std::string name) {
  const fs::path cuda(kCudaRoot);
  std::error_code ignored;
  if (!fs::is_directory(cuda / "dist-info", ignored)) return std::nullopt;
  for (const auto& entry : fs::directory_iterator(cuda / "dist-info", ignored)) {
    const auto folder = entry.path().filename().string();
    if (!folder.starts_with(dist_info)) continue;
    const auto version = folder.substr(
        dist_info.size(), folder.size() - dist_info.size() - std::string_view(".dist-info").size());
    FixtureComponent component{.name = std::move(name), .version = version};
    std::ifstream record(entry.path() / "RECORD");
    constexpr std::string_view kPrefix = "nvidia/cu13/";
    for (std::string line; std::getline(record, line);) {
      const auto path = line.substr(0, line.find(','));
      if (!path.starts_with(kPrefix)) continue;
      const auto inside = path.substr(kPrefix.size());
      const auto source = cuda / inside;
      if (!fs::is_regular_file(source, ignored)) return std::nullopt;
      component.files.push_back(
          {.path = inside, .source = source, .executable = inside.starts_with("bin/")});
    }
    // NVIDIA's archives carry the development links (libcudart.so -> libcudart.so.13)
    // that wheels cannot; a linker looking for -lcudart needs them.
    const auto files = component.files;
    for (const auto& file : files) {
      const fs::path path(file.path);
      const auto filename = path.filename().string();
      const auto so = filename.rfind(".so.");
      if (path.parent_path() != "lib" || so == std::string::npos) continue;
      const auto link = "lib/" + filename.substr(0, so + 3);
      if (std::any_of(files.begin(), files.end(), [&](const auto& f) { return f.path == link; }))
        continue;
      component.files.push_back({.path = link, .symlink_target = filename});
    }
    if (auto license = sys::read_file(entry.path() / "licenses" / "License.txt"))
      component.license = *license;
    return component;
  }
  return std::nullopt;
}

}  // namespace envkit::test
