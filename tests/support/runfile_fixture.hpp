#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "support/redist_fixture.hpp"

// NVIDIA-shaped runfiles made by Debian's real `makeself` (scripts/setup
// installs it), filled with files the test chooses (real ELF libraries from
// /usr/local/cuda where it exists), in the three shapes NVIDIA shipped:
//   - nested (CUDA 9.x-10.0): run_files/cuda-linux.<ver>-<build>.run (itself a
//     runfile holding the toolkit tree), samples and driver runfiles, and
//     cuda-installer.pl;
//   - builds (CUDA 10.1-11.x): builds/<component>/{bin,include,lib64,...};
//   - patch: a toolkit tree with an install script.
// Plus hostile copies: a header that lies, a cut payload, a wrong checksum.
namespace envkit::test {

enum class RunfileCompression : std::uint8_t { gzip, xz };

struct BuiltRunfile {
  std::filesystem::path path;
  std::string sha256;
  std::uint64_t size = 0;
};

class RunfileFixture {
 public:
  // Runfiles are written into `dir` (created when missing). Throws, naming
  // scripts/setup, when makeself is not installed.
  explicit RunfileFixture(std::filesystem::path dir);

  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }

  // A makeself runfile named `file_name` whose payload holds `files` (paths
  // relative to the payload's root; symlinks included).
  BuiltRunfile make(std::string_view file_name, const std::vector<FixtureFile>& files,
                    RunfileCompression compression = RunfileCompression::gzip) const;

  // cuda_<version>_<driver>_linux.run in the 9.x-10.0 form: the toolkit files
  // (bin/..., lib64/..., paths inside the toolkit tree) go into
  // run_files/cuda-linux.<version>-<build>.run.
  BuiltRunfile nested(std::string_view version, std::string_view build, std::string_view driver,
                      const std::vector<FixtureFile>& toolkit,
                      RunfileCompression compression = RunfileCompression::gzip) const;

  // cuda_<version>_linux.run in the builds/ form: each component's files under
  // builds/<name>/, plus builds/cuda_documentation and builds/nsight_compute
  // (which envkit must skip) and the NVIDIA driver runfile.
  BuiltRunfile builds(std::string_view version, const std::vector<FixtureComponent>& components,
                      RunfileCompression compression = RunfileCompression::gzip) const;

  // cuda_<version>.<n>_linux.run, a patch: a toolkit tree with an install script.
  BuiltRunfile patch(std::string_view version, int number, const std::vector<FixtureFile>& files,
                     RunfileCompression compression = RunfileCompression::gzip) const;

  // Hostile copies of `runfile`, written next to it as `new_name`.
  // The `head -n` line count changed by `delta` (skip="N" and every head -n N).
  BuiltRunfile lying_line_count(const BuiltRunfile& runfile, std::string_view new_name,
                                int delta) const;
  // filesizes="N" changed by `delta` bytes.
  BuiltRunfile lying_filesizes(const BuiltRunfile& runfile, std::string_view new_name,
                               std::int64_t delta) const;
  // The last `cut` bytes removed.
  BuiltRunfile truncated(const BuiltRunfile& runfile, std::string_view new_name,
                         std::uint64_t cut) const;
  // The stated MD5 (or CRC) replaced by a wrong one; the payload is intact.
  BuiltRunfile wrong_md5(const BuiltRunfile& runfile, std::string_view new_name) const;
  BuiltRunfile wrong_crc(const BuiltRunfile& runfile, std::string_view new_name) const;
  // A runfile whose payload holds `files` plus an entry named `../<escape_name>`.
  BuiltRunfile escaping(std::string_view file_name, const std::vector<FixtureFile>& files,
                        std::string_view escape_name) const;

 private:
  BuiltRunfile make_from_dir(const std::filesystem::path& staged, std::string_view file_name,
                             RunfileCompression compression,
                             const std::vector<std::string>& extra_args = {}) const;
  BuiltRunfile edited(const BuiltRunfile& runfile, std::string_view new_name,
                      const std::string& bytes) const;

  std::filesystem::path dir_;
};

// `files` under `prefix/` (e.g. "lib64/libcudart.so" -> "builds/cuda_cudart/lib64/libcudart.so").
std::vector<FixtureFile> under(std::string_view prefix, std::vector<FixtureFile> files);

// Real ELF libraries of /usr/local/cuda as toolkit-tree files (lib64/<name>),
// up to `max_bytes` in all; empty where /usr/local/cuda has none.
std::vector<FixtureFile> real_cuda_libraries(std::uint64_t max_bytes);

}  // namespace envkit::test
