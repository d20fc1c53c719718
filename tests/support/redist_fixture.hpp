#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// Artifacts in NVIDIA's two packagings, made by tests from files they choose
// (real ones from /usr/local/cuda where it exists): redist archives
// `<comp>/linux-x86_64/<comp>-linux-x86_64-<ver>-archive.tar.xz` (xz -0) with a
// generated redistrib_<label>.json, and PyPI-style wheels (`nvidia/cu13/...`).
namespace envkit::test {

struct FixtureFile {
  std::string path;              // inside the component: "lib/libcudart.so.13"
  std::filesystem::path source;  // a real file to copy, or empty to use `content`
  std::string content;
  std::string symlink_target;  // non-empty: a symlink (archives only)
  bool executable = false;
  std::optional<unsigned> mode;  // permission bits; else 0755 or 0644 by `executable`
};

struct FixtureComponent {
  std::string name;     // cuda_cudart
  std::string version;  // 13.0.96
  std::vector<FixtureFile> files;
  std::string license = "test licence\n";
};

struct BuiltArtifact {
  std::string component;
  std::string version;
  std::string relative_path;  // under the mirror root
  std::string sha256;
  std::uint64_t size = 0;
  bool wheel = false;
  std::string wheel_root;  // wheels: nvidia/cu13
};

class RedistMirror {
 public:
  explicit RedistMirror(std::filesystem::path root);

  [[nodiscard]] const std::filesystem::path& root() const { return root_; }
  // NVIDIA's <name>-linux-x86_64-<version>-archive.tar.xz. `gzip`: .tar.gz instead, a format
  // NVIDIA's manifests also use, for components so large (cuBLAS: 570 MiB) that xz would
  // take most of a test's time.
  enum class Compression : std::uint8_t { xz, gzip };
  BuiltArtifact add_archive(const FixtureComponent& component,
                            Compression compression = Compression::xz) const;
  // A wheel holding `component` under nvidia/cu13/, with a dist-info licence.
  BuiltArtifact add_wheel(const FixtureComponent& component, std::string_view dist_name) const;
  // redistrib_<label>.json (NVIDIA's format) listing `artifacts` (archives only).
  std::filesystem::path write_redistrib(std::string_view release_label,
                                        const std::vector<BuiltArtifact>& artifacts) const;

 private:
  std::filesystem::path root_;
};

// A stream of `bytes` that no compressor shrinks away (the same every run), for
// fixture files whose transfers and unpacking must take a while.
inline std::string incompressible(std::size_t bytes, std::uint32_t seed) {
  std::string noise(bytes, '\0');
  for (auto& c : noise)
    c = static_cast<char>((seed = seed * 1664525u + 1013904223u) >> 24);
  return noise;
}

// A component made of /usr/local/cuda's real files, as its wheel's RECORD
// (under /usr/local/cuda/dist-info) lists them; nullopt where that is absent.
// `dist_info` is the dist-info folder's name prefix, e.g. "nvidia_cuda_runtime-".
std::optional<FixtureComponent> real_cuda_component(std::string_view dist_info, std::string name);

}  // namespace envkit::test
