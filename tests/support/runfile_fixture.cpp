#include "support/runfile_fixture.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "envkit/core/sha256.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {

namespace fs = std::filesystem;

namespace {

void run_makeself_or_throw(const std::vector<std::string>& argv) {
  auto result = sys::run_process(argv, {.timeout = std::chrono::minutes(10)});
  if (!result) throw std::runtime_error(result.error().to_string());
  if (result->exit_code != 0) {
    throw std::runtime_error(argv.front() + " failed: " + result->err + result->out);
  }
}

void stage_files(const std::vector<FixtureFile>& files, const fs::path& dir) {
  for (const auto& file : files) {
    const auto to = dir / file.path;
    fs::create_directories(to.parent_path());
    if (!file.symlink_target.empty()) {
      fs::create_symlink(file.symlink_target, to);
      continue;
    }
    if (!file.source.empty()) {
      fs::copy_file(file.source, to, fs::copy_options::overwrite_existing);
    } else {
      std::ofstream(to, std::ios::binary) << file.content;
    }
    fs::permissions(to, file.executable ? fs::perms(0755) : fs::perms(0644));
  }
}

BuiltRunfile describe_runfile(const fs::path& file) {
  auto sha256 = core::sha256_file(file);
  if (!sha256) throw std::runtime_error("cannot read " + file.string());
  return {.path = file, .sha256 = *sha256, .size = fs::file_size(file)};
}

std::string read_all(const fs::path& file) {
  auto bytes = sys::read_file(file);
  if (!bytes) throw std::runtime_error(bytes.error().to_string());
  return *bytes;
}

// The quoted value of `name="..."` at the start of a line of the header.
std::pair<std::size_t, std::size_t> quoted_value(const std::string& bytes, std::string_view name) {
  const auto key = "\n" + std::string(name) + "=\"";
  const auto at = bytes.find(key);
  if (at == std::string::npos) throw std::runtime_error("no " + std::string(name) + " in header");
  const auto begin = at + key.size();
  return {begin, bytes.find('"', begin) - begin};
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

const std::string kInstallScript =
    "#!/bin/sh\n# test fixture: NVIDIA's installer is a perl script; envkit never runs it\nexit "
    "0\n";

}  // namespace

RunfileFixture::RunfileFixture(fs::path dir) : dir_(std::move(dir)) {
  if (!sys::find_on_path("makeself")) {
    throw std::runtime_error(
        "makeself is not installed: run scripts/setup (it installs Debian's makeself package)");
  }
  fs::create_directories(dir_);
}

BuiltRunfile RunfileFixture::make_from_dir(const fs::path& staged, std::string_view file_name,
                                           RunfileCompression compression,
                                           const std::vector<std::string>& extra_args) const {
  const auto out = dir_ / file_name;
  // Level 1: quick to make, and still the real format.
  std::vector<std::string> argv{
      "makeself",      "--quiet",
      "--nox11",       "--noprogress",
      "--tar-quietly", compression == RunfileCompression::xz ? "--xz" : "--gzip",
      "--complevel",   "1"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  argv.insert(argv.end(), {staged.string(), out.string(), "envkit test runfile", "./install.sh"});
  run_makeself_or_throw(argv);
  return describe_runfile(out);
}

BuiltRunfile RunfileFixture::make(std::string_view file_name, const std::vector<FixtureFile>& files,
                                  RunfileCompression compression) const {
  const TempDir work;
  stage_files(files, work.path());
  if (!fs::exists(work.path() / "install.sh")) {
    std::ofstream(work.path() / "install.sh") << kInstallScript;
    fs::permissions(work.path() / "install.sh", fs::perms(0755));
  }
  return make_from_dir(work.path(), file_name, compression);
}

BuiltRunfile RunfileFixture::nested(std::string_view version, std::string_view build,
                                    std::string_view driver,
                                    const std::vector<FixtureFile>& toolkit,
                                    RunfileCompression compression) const {
  const TempDir inner_dir;
  const RunfileFixture inner(inner_dir.path());
  auto toolkit_files = toolkit;
  toolkit_files.push_back(
      {.path = "version.txt", .content = "CUDA Version " + std::string(version) + "\n"});
  toolkit_files.push_back({.path = "EULA.txt", .content = "test EULA\n"});
  const auto v = std::string(version);
  const auto b = std::string(build);
  const auto d = std::string(driver);
  const auto toolkit_run =
      inner.make("cuda-linux." + v + "-" + b + ".run", toolkit_files, compression);
  const auto samples_run =
      inner.make("cuda-samples." + v + "-" + b + "-linux.run",
                 {{.path = "NVIDIA_CUDA-" + v.substr(0, v.rfind('.')) + "_Samples/Makefile",
                   .content = "all:\n"}},
                 compression);
  const auto driver_run = inner.make(
      "NVIDIA-Linux-x86_64-" + d + ".run",
      {{.path = "nvidia-installer", .content = "#!/bin/sh\n", .executable = true}}, compression);
  std::vector<FixtureFile> outer{
      {.path = "run_files/" + toolkit_run.path.filename().string(),
       .source = toolkit_run.path,
       .executable = true},
      {.path = "run_files/" + samples_run.path.filename().string(),
       .source = samples_run.path,
       .executable = true},
      {.path = "run_files/" + driver_run.path.filename().string(),
       .source = driver_run.path,
       .executable = true},
      {.path = "cuda-installer.pl", .content = "#!/usr/bin/perl\nexit 0;\n", .executable = true},
      {.path = "InstallUtils.pm", .content = "1;\n"},
      {.path = "uninstall_cuda.pl", .content = "#!/usr/bin/perl\nexit 0;\n", .executable = true}};
  return make("cuda_" + v + "_" + d + "_linux.run", outer, compression);
}

BuiltRunfile RunfileFixture::builds(std::string_view version,
                                    const std::vector<FixtureComponent>& components,
                                    RunfileCompression compression) const {
  std::vector<FixtureFile> files;
  for (const auto& component : components) {
    auto placed = under("builds/" + component.name, component.files);
    files.insert(files.end(), placed.begin(), placed.end());
  }
  files.push_back({.path = "builds/cuda_documentation/EULA.txt", .content = "test EULA\n"});
  files.push_back(
      {.path = "builds/nsight_compute/ncu", .content = "#!/bin/sh\n", .executable = true});
  files.push_back({.path = "builds/version.json",
                   .content = "{\"cuda\": {\"version\": \"" + std::string(version) + "\"}}\n"});
  files.push_back({.path = "cuda-installer",
                   .content = "\x7f"
                              "ELF test",
                   .executable = true});
  return make("cuda_" + std::string(version) + "_linux.run", files, compression);
}

BuiltRunfile RunfileFixture::patch(std::string_view version, int number,
                                   const std::vector<FixtureFile>& files,
                                   RunfileCompression compression) const {
  return make("cuda_" + std::string(version) + "." + std::to_string(number) + "_linux.run", files,
              compression);
}

BuiltRunfile RunfileFixture::edited(const BuiltRunfile& runfile, std::string_view new_name,
                                    const std::string& bytes) const {
  const auto out = runfile.path.parent_path() / new_name;
  std::ofstream(out, std::ios::binary | std::ios::trunc) << bytes;
  return describe_runfile(out);
}

BuiltRunfile RunfileFixture::lying_line_count(const BuiltRunfile& runfile,
                                              std::string_view new_name, int delta) const {
  auto bytes = read_all(runfile.path);
  const auto [begin, length] = quoted_value(bytes, "skip");
  const auto stated = std::stoll(bytes.substr(begin, length));
  bytes.replace(begin, length, std::to_string(stated + delta));
  replace_all(bytes, "head -n " + std::to_string(stated) + " ",
              "head -n " + std::to_string(stated + delta) + " ");
  return edited(runfile, new_name, bytes);
}

BuiltRunfile RunfileFixture::lying_filesizes(const BuiltRunfile& runfile, std::string_view new_name,
                                             std::int64_t delta) const {
  auto bytes = read_all(runfile.path);
  for (const auto* key : {"filesizes", "totalsize"}) {
    const auto [begin, length] = quoted_value(bytes, key);
    const auto stated = std::stoll(bytes.substr(begin, length));
    bytes.replace(begin, length, std::to_string(stated + delta));
  }
  return edited(runfile, new_name, bytes);
}

BuiltRunfile RunfileFixture::truncated(const BuiltRunfile& runfile, std::string_view new_name,
                                       std::uint64_t cut) const {
  auto bytes = read_all(runfile.path);
  bytes.resize(bytes.size() - std::min<std::size_t>(cut, bytes.size()));
  return edited(runfile, new_name, bytes);
}

BuiltRunfile RunfileFixture::wrong_md5(const BuiltRunfile& runfile,
                                       std::string_view new_name) const {
  auto bytes = read_all(runfile.path);
  const auto [begin, length] = quoted_value(bytes, "MD5");
  // Same length, so the header's line count and size still hold.
  bytes.replace(begin, length, std::string(length, 'a'));
  return edited(runfile, new_name, bytes);
}

BuiltRunfile RunfileFixture::wrong_crc(const BuiltRunfile& runfile,
                                       std::string_view new_name) const {
  auto bytes = read_all(runfile.path);
  const auto [begin, length] = quoted_value(bytes, "CRCsum");
  auto value = bytes.substr(begin, length);
  value.back() = value.back() == '1' ? '2' : '1';
  bytes.replace(begin, length, value);
  return edited(runfile, new_name, bytes);
}

BuiltRunfile RunfileFixture::escaping(std::string_view file_name,
                                      const std::vector<FixtureFile>& files,
                                      std::string_view escape_name) const {
  const TempDir work;
  auto staged = files;
  staged.push_back({.path = std::string(escape_name), .content = "escaped\n"});
  staged.push_back({.path = "install.sh", .content = kInstallScript, .executable = true});
  stage_files(staged, work.path());
  // GNU tar keeps `..` in member names only with -P; the transform renames the
  // staged file to ../<name>.
  return make_from_dir(work.path(), file_name, RunfileCompression::gzip,
                       {"--tar-extra", "-P --transform=s,^\\./" + std::string(escape_name) +
                                           "$,../" + std::string(escape_name) + ","});
}

std::vector<FixtureFile> under(std::string_view prefix, std::vector<FixtureFile> files) {
  for (auto& file : files)
    file.path = std::string(prefix) + "/" + file.path;
  return files;
}

std::vector<FixtureFile> real_cuda_libraries(std::uint64_t max_bytes) {
  const fs::path lib = "/usr/local/cuda/lib64";
  std::error_code error;
  if (!fs::is_directory(lib, error)) return {};
  // Sorted by name, so each test gets the same files on every run.
  std::set<fs::path> names;
  for (const auto& entry : fs::directory_iterator(lib, error)) {
    const auto name = entry.path().filename().string();
    if (entry.is_regular_file() && !entry.is_symlink() && name.find(".so") != std::string::npos) {
      names.insert(entry.path());
    }
  }
  std::vector<FixtureFile> files;
  std::uint64_t total = 0;
  for (const auto& path : names) {
    const auto size = fs::file_size(path, error);
    if (error || total + size > max_bytes) continue;
    total += size;
    files.push_back({.path = "lib64/" + path.filename().string(), .source = path});
  }
  return files;
}

}  // namespace envkit::test
