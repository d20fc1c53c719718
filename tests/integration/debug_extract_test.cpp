// `envkit debug extract`: the safe extractor from the command line.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/envkit_runner.hpp"
#include "support/runfile_fixture.hpp"
#include "support/temp_dir.hpp"
#include "unit/archive/archive_maker.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using envkit::test::Entry;
using envkit::test::Format;
using envkit::test::make_archive;
using envkit::test::run_envkit;
using envkit::test::TempDir;
using nlohmann::json;

TEST_CASE("debug extract unpacks an archive and reports it as JSON", "[cli][debug]") {
  TempDir tmp;
  const std::string top = "cuda_cudart-linux-x86_64-12.4.127-archive/";
  envkit::test::write_bytes(
      tmp.path() / "cudart.tar.xz",
      make_archive(Format::tar_xz,
                   {Entry::file(top + "lib/libcudart.so.12.4.127", "elf", 0755),
                    Entry::symlink(top + "lib/libcudart.so.12", "libcudart.so.12.4.127"),
                    Entry::file(top + "LICENSE", "licence")}));
  const auto r = run_envkit(
      {.args = {"debug", "extract", "cudart.tar.xz", "out", "--strip-components", "1", "--json"},
       .cwd = tmp.path()});
  CHECK(r.err.find("error") == std::string::npos);
  REQUIRE(r.exit_code == 0);
  const auto answer = json::parse(r.out);
  CHECK(answer["entries"] == 4);  // lib/ made on the way, the file, the link, LICENSE
  CHECK(answer["bytes"] == 10);
  CHECK(answer["destination"] == "out");
  CHECK(answer["warnings"].empty());
  CHECK(fs::read_symlink(tmp.path() / "out/lib/libcudart.so.12") == "libcudart.so.12.4.127");
  CHECK(envkit::test::read_bytes(tmp.path() / "out/lib/libcudart.so.12") == "elf");
  CHECK(envkit::test::mode_of(tmp.path() / "out/lib/libcudart.so.12.4.127") == 0755);
}

TEST_CASE("debug extract warns of a wheel's RECORD row that disagrees, and unpacks it",
          "[cli][debug]") {
  // As PyPI's torch 1.11.0 lists its METADATA: the size it had before a rewrite.
  TempDir tmp;
  envkit::test::ZipBuilder zip;
  zip.add("demo-1.0.dist-info/METADATA", "Name: demo\nVersion: 1.0\n");
  zip.add("demo-1.0.dist-info/RECORD",
          envkit::test::record_row("demo-1.0.dist-info/METADATA", "Name: demo\nVersion: 1.0rc\n") +
              "demo-1.0.dist-info/RECORD,,\n");
  envkit::test::write_bytes(tmp.path() / "demo-1.0-py3-none-any.whl", zip.finish());
  const auto r =
      run_envkit({.args = {"debug", "extract", "demo-1.0-py3-none-any.whl", "out", "--json"},
                  .cwd = tmp.path()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Contains("warning:") &&
                        Contains("entry `demo-1.0.dist-info/METADATA` (it holds 24 bytes, RECORD "
                                 "says 26)"));
  CHECK(json::parse(r.out)["warnings"].size() == 1);
  CHECK(envkit::test::read_bytes(tmp.path() / "out/demo-1.0.dist-info/METADATA") ==
        "Name: demo\nVersion: 1.0\n");
}

TEST_CASE("debug extract refuses a hostile archive with the entry and the reason", "[cli][debug]") {
  TempDir tmp;
  envkit::test::write_bytes(tmp.path() / "evil.tar",
                            make_archive(Format::tar, {Entry::file("fine", "ok"),
                                                       Entry::file("a/../../escaped", "evil")}));
  const auto r = run_envkit({.args = {"debug", "extract", "evil.tar", "out"}, .cwd = tmp.path()});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("error: refused to unpack `evil.tar`"));
  CHECK_THAT(r.err, Contains("entry `a/../../escaped`: `..` in a path is not allowed"));
  CHECK_FALSE(fs::exists(tmp.path() / "escaped"));
  CHECK_FALSE(fs::exists(tmp.path().parent_path() / "escaped"));
}

TEST_CASE("debug extract stops at --max-bytes", "[cli][debug]") {
  TempDir tmp;
  envkit::test::write_bytes(tmp.path() / "bomb.tar.zst",
                            make_archive(Format::tar_zst, {{.path = "zeros", .zeros = 1 << 20}}));
  const auto r = run_envkit(
      {.args = {"debug", "extract", "bomb.tar.zst", "out", "--max-bytes", "4096", "--json"},
       .cwd = tmp.path()});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err,
             Contains("entry `zeros`: the archive unpacks to more than 4096 bytes, the limit"));
  const auto answer = json::parse(r.out);
  CHECK_THAT(answer["error"].get<std::string>(), Contains("refused to unpack"));
}

TEST_CASE("debug extract: a missing archive or a bad flag is a usage error", "[cli][debug]") {
  TempDir tmp;
  const auto missing =
      run_envkit({.args = {"debug", "extract", "missing.tar.gz", "out"}, .cwd = tmp.path()});
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Contains("`missing.tar.gz` does not exist"));
  CHECK_FALSE(fs::exists(tmp.path() / "out"));

  const auto negative =
      run_envkit({.args = {"debug", "extract", "a.tar", "out", "--strip-components", "-1"},
                  .cwd = tmp.path()});
  CHECK(negative.exit_code == 2);
  const auto no_dest = run_envkit({.args = {"debug", "extract", "a.tar"}, .cwd = tmp.path()});
  CHECK(no_dest.exit_code == 2);
}

TEST_CASE("debug extract unpacks a runfile and its nested runfiles without running them",
          "[cli][debug][runfile]") {
  TempDir tmp;
  const envkit::test::RunfileFixture fixture(tmp.path() / "runs");
  const auto run = fixture.nested("9.0.176", "22781540", "384.81",
                                  {{.path = "lib64/libcudart.so.9.0.176",
                                    .content = "\x7f"
                                               "ELF cudart"}});
  const auto r = run_envkit(
      {.args = {"debug", "extract", run.path.string(), "out", "--json"}, .cwd = tmp.path()});
  REQUIRE(r.exit_code == 0);
  CHECK(envkit::test::read_bytes(
            tmp.path() / "out/run_files/cuda-linux.9.0.176-22781540/lib64/libcudart.so.9.0.176") ==
        "\x7f"
        "ELF cudart");
  CHECK(fs::exists(tmp.path() / "out/run_files/cuda-samples.9.0.176-22781540-linux"));
  CHECK(json::parse(r.out)["bytes"].get<int>() > 0);

  const auto cut = fixture.truncated(run, "cut.run", 100);
  const auto refused =
      run_envkit({.args = {"debug", "extract", cut.path.string(), "cut"}, .cwd = tmp.path()});
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.err, Contains("cut.run") && Contains("ends early"));
}

namespace {

// Runs `envkit debug extract NAME out` in `dir` and checks it refuses with
// exit 1 (CLI.md: the operation failed), naming the archive, and `why`.
void refuses_corrupt(const fs::path& dir, const std::string& name, const std::string& bytes,
                     const std::string& why) {
  INFO(name);
  envkit::test::write_bytes(dir / name, bytes);
  const auto r = run_envkit({.args = {"debug", "extract", name, "out-" + name}, .cwd = dir});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("error: cannot unpack `" + name + "`"));
  CHECK_THAT(r.err, Contains(why));
}

std::string with_flipped_byte(std::string bytes, std::size_t from_end) {
  auto& byte = bytes[bytes.size() - from_end];
  byte = static_cast<char>(byte ^ 0x21);
  return bytes;
}

}  // namespace

TEST_CASE("debug extract refuses corrupt, cut and padded compressed archives", "[cli][debug]") {
  TempDir tmp;
  const std::vector<Entry> entries = {Entry::file("lib/libcudart.so.12", "elf library", 0755),
                                      Entry::file("LICENSE", "licence")};
  const auto gz = make_archive(Format::tar_gz, entries);
  const auto xz = make_archive(Format::tar_xz, entries);
  // gzip's trailer: CRC32, then ISIZE, 4 bytes each.
  refuses_corrupt(tmp.path(), "crc.tar.gz", with_flipped_byte(gz, 8),
                  "gzip CRC mismatch: the download is corrupt");
  refuses_corrupt(tmp.path(), "isize.tar.gz", with_flipped_byte(gz, 2), "gzip length mismatch");
  refuses_corrupt(tmp.path(), "cut.tar.xz", xz.substr(0, xz.size() - 8),
                  "the xz data is cut short");
  refuses_corrupt(tmp.path(), "garbage.tar.gz", gz + "garbage", "trailing garbage");
  refuses_corrupt(tmp.path(), "garbage.tar.bz2", make_archive(Format::tar_bz2, entries) + "garbage",
                  "trailing garbage");
  // The whole archive is good: it unpacks.
  envkit::test::write_bytes(tmp.path() / "good.tar.gz", gz);
  CHECK(run_envkit({.args = {"debug", "extract", "good.tar.gz", "good"}, .cwd = tmp.path()})
            .exit_code == 0);
}

TEST_CASE("debug extract unpacks UTF-8 names in a zip whatever the locale", "[cli][debug]") {
  TempDir tmp;
  const std::string name = "caf\xc3\xa9/\xe6\x95\xb0\xe6\x8d\xae.txt";
  envkit::test::ZipBuilder zip;
  zip.add(name, "utf-8\n");
  envkit::test::write_bytes(tmp.path() / "names.whl", zip.finish());
  for (const char* locale : {"C", "C.UTF-8", "POSIX"}) {
    INFO(locale);
    const std::string out = std::string("out-") + locale;
    const auto r = run_envkit({.args = {"debug", "extract", "names.whl", out, "--json"},
                               .cwd = tmp.path(),
                               .env = {{"LC_ALL", locale}, {"LANG", locale}}});
    CHECK(r.err.find("error") == std::string::npos);
    REQUIRE(r.exit_code == 0);
    CHECK(envkit::test::read_bytes(tmp.path() / out / name) == "utf-8\n");
  }
}

TEST_CASE("debug extract: an empty zip is 0 entries, an overlapping one is refused",
          "[cli][debug]") {
  TempDir tmp;
  envkit::test::write_bytes(tmp.path() / "empty.zip", envkit::test::ZipBuilder().finish());
  const auto empty =
      run_envkit({.args = {"debug", "extract", "empty.zip", "out", "--json"}, .cwd = tmp.path()});
  REQUIRE(empty.exit_code == 0);
  CHECK(json::parse(empty.out)["entries"] == 0);
  CHECK(fs::is_directory(tmp.path() / "out"));

  envkit::test::ZipBuilder bomb;
  const auto kernel = bomb.add("f0", std::string(4096, 'A'));
  for (int i = 1; i < 100; ++i) {
    auto record = kernel;
    record.name = "f" + std::to_string(i);
    bomb.records().push_back(record);
  }
  envkit::test::write_bytes(tmp.path() / "overlap.zip", bomb.finish());
  const auto r =
      run_envkit({.args = {"debug", "extract", "overlap.zip", "bomb"}, .cwd = tmp.path()});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("error: refused to unpack `overlap.zip`"));
  CHECK_THAT(r.err, Contains("overlap in the file"));
  CHECK_FALSE(fs::exists(tmp.path() / "bomb/f0"));
}

TEST_CASE("debug extract keeps restrictive modes", "[cli][debug]") {
  TempDir tmp;
  envkit::test::write_bytes(
      tmp.path() / "keys.tar.gz",
      make_archive(Format::tar_gz,
                   {{.path = "ssh/", .kind = envkit::test::Kind::directory, .mode = 0700},
                    Entry::file("ssh/id_ed25519", "private", 0600),
                    Entry::file("bin/tool", "#!/bin/sh\n", 0750),
                    Entry::file("bin/own", "#!/bin/sh\n", 0700),
                    Entry::file("bin/suid", "#!/bin/sh\n", 04777)}));
  const auto r =
      run_envkit({.args = {"debug", "extract", "keys.tar.gz", "out"}, .cwd = tmp.path()});
  REQUIRE(r.exit_code == 0);
  CHECK(envkit::test::mode_of(tmp.path() / "out/ssh") == 0700);
  CHECK(envkit::test::mode_of(tmp.path() / "out/ssh/id_ed25519") == 0600);
  CHECK(envkit::test::mode_of(tmp.path() / "out/bin/tool") == 0750);
  CHECK(envkit::test::mode_of(tmp.path() / "out/bin/own") == 0700);
  CHECK(envkit::test::mode_of(tmp.path() / "out/bin/suid") == 0755);
}
