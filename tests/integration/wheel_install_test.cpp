// envkit installs a closure's wheels itself (src/pyenv/wheel_install.cpp),
// checked against pip's own result for the same wheels: the machine's real
// pip 23.0.1 and setuptools 66.1.1 wheels (Debian's python-wheels, deflated,
// with entry points) and a wheel the test makes with `.data/` files and
// console and GUI scripts, served by nginx, installed by `envkit install
// --frozen` into a venv of the machine's python3, and by pip 23.0.1 (run from
// its wheel) into a venv of its own with `--no-compile`.
#include <fmt/format.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <set>

#include "envkit/lock/lockfile.hpp"
#include "isolated_project.hpp"
#include "support/closure_lock.hpp"
#include "support/http_server.hpp"
#include "support/python_index.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

const fs::path kPipWheel = "/usr/share/python-wheels/pip-23.0.1-py3-none-any.whl";
const fs::path kSetuptoolsWheel = "/usr/share/python-wheels/setuptools-66.1.1-py3-none-any.whl";

// A wheel with every `.data` scheme key, a `#!python` script, a plain one, and
// console and GUI entry points.
const FakeWheel kDataWheel{
    .name = "datapkg",
    .version = "1.0",
    .requires_dist = {},
    .files = {{"datapkg/__init__.py", "def main():\n    print('datapkg main')\n"},
              {"datapkg/cli.py", "def run():\n    print('datapkg cli')\n"},
              {"datapkg-1.0.data/scripts/datatool", "#!python\nprint('datatool ran')\n"},
              {"datapkg-1.0.data/scripts/plain.sh", "#!/bin/sh\necho plain\n"},
              {"datapkg-1.0.data/data/share/datapkg/readme.txt", "data files\n"},
              {"datapkg-1.0.data/headers/datapkg.h", "#define DATAPKG 1\n"},
              {"datapkg-1.0.data/purelib/datapkg_extra.py", "EXTRA = 1\n"},
              {"datapkg-1.0.dist-info/entry_points.txt",
               "[console_scripts]\ndatapkg-cli = datapkg.cli:run\n\n"
               "[gui_scripts]\ndatapkg-gui = datapkg:main\n"}}};

std::string wheel_read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct stat wheel_stat(const fs::path& path) {
  struct stat status {};
  REQUIRE(::stat(path.c_str(), &status) == 0);
  return status;
}

// Regular files under `root`'s site-packages and bin/, relative to `root`,
// without the interpreter and venv's own scripts and bytecode.
std::set<std::string> installed_set(const fs::path& root) {
  std::set<std::string> files;
  for (const auto* top : {"lib", "bin", "include", "share"}) {
    std::error_code ignored;
    if (!fs::exists(root / top, ignored)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      if (!entry.is_regular_file() || fs::is_symlink(entry.symlink_status())) continue;
      const auto relative = entry.path().lexically_relative(root).generic_string();
      const auto name = entry.path().filename().string();
      if (relative.find("__pycache__") != std::string::npos) continue;
      if (relative.starts_with("bin/") &&
          (name.starts_with("python") || name.starts_with("activate") ||
           name.starts_with("Activate")))
        continue;
      files.insert(relative);
    }
  }
  return files;
}

// A RECORD: path -> "hash,size".
std::map<std::string, std::string> record_rows(const fs::path& record) {
  std::map<std::string, std::string> rows;
  std::istringstream lines(wheel_read(record));
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto comma = line.find(',');
    if (comma == std::string::npos) continue;
    rows[line.substr(0, comma)] = line.substr(comma + 1);
  }
  return rows;
}

sys::ProcessOutput wheel_run(const std::vector<std::string>& argv) {
  auto output = sys::run_process(
      argv, {.env = {{"PIP_CONFIG_FILE", "/dev/null"}}, .timeout = std::chrono::minutes(3)});
  REQUIRE(output);
  return *output;
}

// Every RECORD row with a hash matches its file, as importlib.metadata reads them.
constexpr std::string_view kVerifyRecords = R"py(import base64, hashlib, importlib.metadata as m
bad, seen = [], 0
for name in ("pip", "setuptools", "datapkg"):
    dist = m.distribution(name)
    for f in dist.files:
        if f.hash is None:
            continue
        seen += 1
        data = f.locate().read_bytes()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        if digest != f.hash.value or len(data) != f.size:
            bad.append(str(f))
print(seen, dist.read_text("INSTALLER").strip(), m.version("datapkg"), bad)
)py";

// Whether Debian 12's pip and setuptools wheels, the ones compared with pip, are
// missing; records the skip (scripts/setup installs python3-pip-whl, and
// python3-venv brings python3-setuptools-whl).
bool debian_wheels_missing(std::source_location where = std::source_location::current()) {
  for (const auto& wheel : {kPipWheel, kSetuptoolsWheel}) {
    if (fs::exists(wheel)) continue;
    skip_test(SkipKind::setup_should_provide,
              "no " + wheel.string() +
                  " (Debian 12's python3-pip-whl and python3-setuptools-whl; scripts/setup "
                  "installs them)",
              where);
    return true;
  }
  return false;
}

struct WheelProject {
  IsolatedProject project;
  fs::path served = project.dir.path() / "index";
  PythonIndex index{served};
  std::optional<StaticHttpServer> server;
  fs::path pip_wheel, setuptools_wheel, data_wheel;

  bool skip() {
    if (nginx_missing() || host_python_missing() || debian_wheels_missing()) return true;
    pip_wheel = index.add_file(kPipWheel);
    setuptools_wheel = index.add_file(kSetuptoolsWheel);
    data_wheel = index.add(kDataWheel);
    server.emplace(served);
    return false;
  }

  [[nodiscard]] lock::PythonWheel locked(const std::string& name, const std::string& version,
                                         const fs::path& file) const {
    return locked_distribution(name, version, file,
                               server->url("/files/" + file.filename().string()));
  }

  // envkit.lock: the machine's python3 as a venv, and `packages` as its closure.
  void write_lock(std::vector<lock::PythonWheel> packages) const {
    project.write(project.root / "envkit.lock", venv_closure_lock(std::move(packages)));
  }

  void write_all() const {
    write_lock({locked("datapkg", "1.0", data_wheel), locked("pip", "23.0.1", pip_wheel),
                locked("setuptools", "66.1.1", setuptools_wheel)});
  }

  [[nodiscard]] sys::ProcessOutput envkit(std::vector<std::string> args) const {
    return project.envkit(std::move(args));
  }
  [[nodiscard]] fs::path prefix() const { return project.prefix(); }
  [[nodiscard]] fs::path site() const { return prefix() / "lib" / "python3.11" / "site-packages"; }

  // pip 23.0.1's own install of the same wheels, into a venv without pip.
  [[nodiscard]] fs::path pip_reference() const {
    const auto reference = project.dir.path() / "reference";
    REQUIRE(wheel_run({"python3", "-m", "venv", "--without-pip", reference.string()}).exit_code ==
            0);
    const auto installed =
        wheel_run({(reference / "bin" / "python").string(), (kPipWheel / "pip").string(), "install",
                   "--no-index", "--no-deps", "--no-compile", "--disable-pip-version-check",
                   pip_wheel.string(), setuptools_wheel.string(), data_wheel.string()});
    INFO(installed.err);
    REQUIRE(installed.exit_code == 0);
    return reference;
  }
};

// Past the shebang: pip's one line, envkit's three-line /bin/sh trampoline.
std::string script_body(const std::string& text, int shebang_lines) {
  std::size_t at = 0;
  for (int i = 0; i < shebang_lines; ++i)
    at = text.find('\n', at) + 1;
  return text.substr(at);
}

TEST_CASE("envkit installs wheels as pip 23 does: the same files and bytes and metadata",
          "[python][wheel-install][integration][slow]") {
  WheelProject fixture;
  if (fixture.skip()) return;
  fixture.write_all();
  const auto installed = fixture.envkit({"install", "--frozen", "--link-mode", "hardlink"});
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  const auto reference = fixture.pip_reference();

  const auto ours = installed_set(fixture.prefix());
  auto theirs = installed_set(reference);
  // pip was given wheel files by path: direct references (PEP 610) the user asked for. The
  // lock's wheels come from an index and it does not say which were asked for: neither file.
  for (const auto* name : {"datapkg-1.0", "pip-23.0.1", "setuptools-66.1.1"}) {
    for (const auto* file : {"direct_url.json", "REQUESTED"}) {
      const auto path = fmt::format("lib/python3.11/site-packages/{}.dist-info/{}", name, file);
      CHECK(theirs.erase(path) == 1);
      CHECK_FALSE(ours.contains(path));
    }
  }
  CHECK(ours == theirs);
  // The scripts written per environment: those naming their interpreter in pip's install.
  std::set<std::string> rewritten;
  for (const auto& path : theirs) {
    const auto text = wheel_read(reference / path);
    if (path.starts_with("bin/") && text.starts_with("#!") && text.find("python") < text.find('\n'))
      rewritten.insert("../../../" + path);
  }
  CHECK(rewritten.size() == 6);  // pip, pip3, pip3.11 and datapkg's three
  const std::string dist_info = "lib/python3.11/site-packages/pip-23.0.1.dist-info/";
  for (const auto& path : theirs) {
    if (!ours.contains(path)) continue;
    INFO(path);
    const auto mine = wheel_read(fixture.prefix() / path);
    const auto pips = wheel_read(reference / path);
    if (path.ends_with(".dist-info/INSTALLER")) {
      CHECK(mine == "envkit\n");
      CHECK(pips == "pip\n");
    } else if (path.ends_with(".dist-info/RECORD")) {
      // The same rows, hashes and sizes, but for what is written per environment.
      auto our_rows = record_rows(fixture.prefix() / path);
      const auto their_rows = record_rows(reference / path);
      std::set<std::string> our_paths, their_paths;
      for (const auto& [row, fields] : our_rows)
        our_paths.insert(row);
      for (const auto& [row, fields] : their_rows) {
        if (!row.ends_with("/direct_url.json") && !row.ends_with("/REQUESTED"))
          their_paths.insert(row);
      }
      CHECK(our_paths == their_paths);
      for (const auto& [row, fields] : their_rows) {
        INFO(row);
        const bool per_environment = row.ends_with("/INSTALLER") || rewritten.contains(row);
        if (!their_paths.contains(row)) continue;
        if (row.ends_with("/RECORD")) {
          CHECK(fields == ",");
          CHECK(our_rows[row] == ",");
        } else if (per_environment) {
          CHECK(our_rows[row] != fields);
        } else {
          CHECK(our_rows[row] == fields);
        }
      }
      CHECK(mine.find("\r\n") != std::string::npos);  // pip's csv writer's line ends
    } else if (rewritten.contains("../../../" + path)) {
      // A script naming its interpreter: the same program under envkit's trampoline.
      CHECK(mine.starts_with("#!/bin/sh\n'''exec' \"$(dirname -- \"$(realpath -- \"$0\")\")/"));
      CHECK(script_body(mine, 3) == script_body(pips, 1));
    } else {
      CHECK(mine == pips);
    }
  }
  // pip's versioned scripts for this Python, not the wheel's.
  CHECK(ours.contains("bin/pip3.11"));

  // .data/ went where the scheme says.
  CHECK(ours.contains("share/datapkg/readme.txt"));
  CHECK(ours.contains("include/site/python3.11/datapkg/datapkg.h"));
  CHECK(ours.contains("lib/python3.11/site-packages/datapkg_extra.py"));
  // The wheel stores them 0644, and pip leaves them so: run through sh.
  const auto bin = fixture.prefix() / "bin";
  CHECK(fixture.envkit({"run", "--", "sh", (bin / "datatool").string()}).out == "datatool ran\n");
  CHECK(fixture.envkit({"run", "--", "sh", (bin / "plain.sh").string()}).out == "plain\n");
  CHECK(fixture.envkit({"run", "--", "datapkg-cli"}).out == "datapkg cli\n");
  CHECK(fixture.envkit({"run", "--", "datapkg-gui"}).out == "datapkg main\n");

  // Files come from the cache as hard links; what is written per environment is not.
  CHECK(wheel_stat(fixture.site() / "pip" / "__init__.py").st_nlink >= 2);
  CHECK(wheel_stat(fixture.site() / "pip-23.0.1.dist-info" / "RECORD").st_nlink == 1);

  // What a user checks: doctor, the pip script, importlib.metadata, pip list/show/uninstall.
  const auto doctor = fixture.envkit({"doctor"});
  CHECK_THAT(doctor.out + doctor.err,
             !Contains("differs from what envkit") && !Contains("missing"));
  const auto pip_version = wheel_run({(fixture.prefix() / "bin" / "pip").string(), "--version"});
  CHECK_THAT(pip_version.out,
             Contains("pip 23.0.1 from ") && Contains("site-packages/pip (python 3.11)"));
  const auto verified = fixture.envkit({"run", "--", "python", "-c", std::string(kVerifyRecords)});
  INFO(verified.err);
  CHECK_THAT(verified.out, Contains(" envkit 1.0 []"));
  const auto listed = fixture.envkit({"run", "--", "python", "-m", "pip", "list"});
  CHECK_THAT(listed.out, Contains("datapkg") && Contains("23.0.1") && Contains("66.1.1"));
  const auto shown = fixture.envkit({"run", "--", "python", "-m", "pip", "show", "-f", "datapkg"});
  CHECK_THAT(shown.out, Contains("Version: 1.0") && Contains("../../../bin/datatool") &&
                            Contains("datapkg/cli.py"));

  SECTION("pip uninstalls a package envkit installed") {
    const auto removed =
        fixture.envkit({"run", "--", "python", "-m", "pip", "uninstall", "-y", "datapkg"});
    INFO(removed.err);
    CHECK(removed.exit_code == 0);
    CHECK_FALSE(fs::exists(fixture.site() / "datapkg"));
    CHECK_FALSE(fs::exists(fixture.prefix() / "bin" / "datapkg-cli"));
    CHECK_FALSE(fs::exists(fixture.prefix() / "share" / "datapkg" / "readme.txt"));
    // The cache's copy stays: the next install links it again.
    const auto again = fixture.envkit({"install", "--frozen", "--reinstall"});
    INFO(again.err);
    CHECK(again.exit_code == 0);
    CHECK(fixture.envkit({"run", "--", "datapkg-cli"}).out == "datapkg cli\n");
  }

  SECTION("a second prefix shares every linked file with the first") {
    const auto other = fixture.project.dir.path() / "other";
    const auto second = fixture.envkit(
        {"install", "--frozen", "--link-mode", "hardlink", "--prefix", other.string()});
    INFO(second.err);
    REQUIRE(second.exit_code == 0);
    std::size_t shared = 0;
    for (const auto& path : ours) {
      const auto first = wheel_stat(fixture.prefix() / path);
      const auto again = wheel_stat(other / path);
      if (path.ends_with("/RECORD") || path.ends_with("/INSTALLER") ||
          rewritten.contains("../../../" + path)) {
        CHECK(first.st_ino != again.st_ino);
      } else {
        CHECK(first.st_ino == again.st_ino);
        ++shared;
      }
    }
    CHECK(shared > 500);  // pip alone has ~800 files
  }

  SECTION("installing again changes nothing; --reinstall keeps every file intact") {
    CHECK_THAT(fixture.envkit({"install", "--frozen"}).err, Contains("nothing to do"));
    const auto again = fixture.envkit({"install", "--frozen", "--reinstall"});
    INFO(again.err);
    REQUIRE(again.exit_code == 0);
    const auto after = fixture.envkit({"doctor"});
    CHECK_THAT(after.out + after.err,
               !Contains("differs from what envkit") && !Contains("missing"));
    CHECK(fixture.envkit({"run", "--", "datapkg-cli"}).out == "datapkg cli\n");
  }
}

TEST_CASE("envkit install --compile-bytecode writes .pyc files into the receipts and RECORD",
          "[python][wheel-install][integration][slow]") {
  WheelProject fixture;
  if (fixture.skip()) return;
  fixture.write_lock({fixture.locked("datapkg", "1.0", fixture.data_wheel)});
  const auto installed = fixture.envkit({"install", "--frozen", "--compile-bytecode"});
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  const auto tag = wheel_run({"python3", "-c", "import sys; print(sys.implementation.cache_tag)"});
  const auto pyc_name = "cli." + tag.out.substr(0, tag.out.size() - 1) + ".pyc";
  const auto pyc = fixture.site() / "datapkg" / "__pycache__" / pyc_name;
  REQUIRE(fs::is_regular_file(pyc));
  const auto receipt = wheel_read(fixture.prefix() / ".envkit" / "receipts" / "datapkg.json");
  CHECK_THAT(receipt, Contains("datapkg/__pycache__/" + pyc_name));
  const auto rows = record_rows(fixture.site() / "datapkg-1.0.dist-info" / "RECORD");
  REQUIRE(rows.contains("datapkg/__pycache__/" + pyc_name));
  CHECK(rows.at("datapkg/__pycache__/" + pyc_name) == ",");  // as pip lists them
  // Python takes the .pyc as it is: importing rewrites nothing, and doctor finds it intact.
  const auto before = wheel_read(pyc);
  CHECK(fixture.envkit({"run", "--", "python", "-c", "import datapkg.cli"}).exit_code == 0);
  CHECK(wheel_read(pyc) == before);
  const auto doctor = fixture.envkit({"doctor"});
  CHECK_THAT(doctor.out + doctor.err, !Contains("differs from what envkit"));

  const auto pycache = [](const fs::path& prefix) {
    return prefix / "lib" / "python3.11" / "site-packages" / "datapkg" / "__pycache__";
  };
  SECTION("without the flag there is no bytecode") {
    const auto plain = fixture.project.dir.path() / "plain";
    REQUIRE(fixture.envkit({"install", "--frozen", "--prefix", plain.string()}).exit_code == 0);
    CHECK_FALSE(fs::exists(pycache(plain)));
  }
  SECTION("the project's compile-bytecode: true compiles without the flag, unless told not to") {
    fixture.project.write(fixture.project.project_config(), "compile-bytecode: true\n");
    const auto configured = fixture.project.dir.path() / "configured";
    REQUIRE(fixture.envkit({"install", "--frozen", "--prefix", configured.string()}).exit_code ==
            0);
    CHECK(fs::is_regular_file(pycache(configured) / pyc_name));
    const auto declined = fixture.project.dir.path() / "declined";
    REQUIRE(
        fixture
            .envkit({"install", "--frozen", "--no-compile-bytecode", "--prefix", declined.string()})
            .exit_code == 0);
    CHECK_FALSE(fs::exists(pycache(declined)));
  }
}

// Copies the wheel `from` to `to` with the bytes of its entry `member` replaced
// by the Python expression `replaced` (of the old bytes, `data`), its RECORD
// left as it was: a wheel changed after it was built.
void rewrite_member(const fs::path& from, const fs::path& to, const std::string& member,
                    const std::string& replaced) {
  const auto rewritten =
      wheel_run({"python3", "-c",
                 "import sys, zipfile\n"
                 "src, dst = zipfile.ZipFile(sys.argv[1]), zipfile.ZipFile(sys.argv[2], 'w')\n"
                 "for item in src.infolist():\n"
                 "    data = src.read(item)\n"
                 "    if item.filename == sys.argv[3]:\n"
                 "        data = " +
                     replaced +
                     "\n"
                     "    dst.writestr(item, data)\n"
                     "dst.close()\n",
                 from.string(), to.string(), member});
  INFO(rewritten.err);
  REQUIRE(rewritten.exit_code == 0);
}

TEST_CASE("a wheel whose RECORD lists a stale METADATA installs with a warning, as pip does",
          "[python][wheel-install][integration][slow]") {
  // As PyPI's torch 1.10.2, 1.11.0 and 1.12.1: METADATA rewritten after the
  // wheel was built, its RECORD row left as it was.
  WheelProject fixture;
  if (fixture.skip()) return;
  const auto built = fixture.index.add({.name = "stalepkg", .version = "1.0"},
                                       "built/stalepkg-1.0-py3-none-any.whl");
  const auto stale = fixture.served / "files" / "stalepkg-1.0-py3-none-any.whl";
  rewrite_member(built, stale, "stalepkg-1.0.dist-info/METADATA",
                 "data.replace(b'Version: 1.0\\n', b'Version: 1.0\\nKeywords: rewritten\\n', 1)");
  fixture.write_lock({fixture.locked("stalepkg", "1.0", stale)});
  const auto installed = fixture.envkit({"install", "--frozen"});
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  CHECK_THAT(installed.err, Contains("warning:") && Contains("stalepkg-1.0-py3-none-any.whl") &&
                                Contains("its RECORD disagrees with entry "
                                         "`stalepkg-1.0.dist-info/METADATA`"));
  // The file as the wheel holds it; the environment's RECORD keeps the
  // wheel's row, as pip leaves it (get_csv_rows_for_installed rehashes only
  // what it changed); the receipt holds the file's own hash, so doctor finds
  // nothing changed.
  const auto metadata = wheel_read(fixture.site() / "stalepkg-1.0.dist-info" / "METADATA");
  CHECK_THAT(metadata, Contains("Keywords: rewritten"));
  const auto wheel_row =
      wheel_run({"python3", "-c",
                 "import sys, zipfile\n"
                 "z = zipfile.ZipFile(sys.argv[1])\n"
                 "rows = z.read('stalepkg-1.0.dist-info/RECORD').decode()\n"
                 "print([r for r in rows.splitlines() if '/METADATA,' in r][0])\n",
                 stale.string()});
  const auto rows = record_rows(fixture.site() / "stalepkg-1.0.dist-info" / "RECORD");
  CHECK("stalepkg-1.0.dist-info/METADATA," + rows.at("stalepkg-1.0.dist-info/METADATA") + "\n" ==
        wheel_row.out);
  const auto doctor = fixture.envkit({"doctor"});
  CHECK_THAT(doctor.out + doctor.err, !Contains("differs from what envkit"));
}

TEST_CASE("a wheel envkit cannot install is refused and the previous environment stays",
          "[python][wheel-install][integration][slow]") {
  WheelProject fixture;
  if (fixture.skip()) return;
  fixture.write_lock({fixture.locked("datapkg", "1.0", fixture.data_wheel)});
  REQUIRE(fixture.envkit({"install", "--frozen"}).exit_code == 0);
  const auto generation = fs::read_symlink(fixture.prefix());
  std::string name;
  fs::path bad;
  std::vector<std::string> expected;
  SECTION("a .data folder under no scheme key") {
    name = "badpkg";
    bad = fixture.index.add(
        {.name = name,
         .version = "1.0",
         .requires_dist = {},
         .files = {{"badpkg/__init__.py", ""}, {"badpkg-1.0.data/bogus/x.txt", "x\n"}}});
    expected = {"badpkg-1.0.data/bogus/x.txt", "scheme key"};
  }
  SECTION("a module that disagrees with its RECORD") {
    name = "tamperpkg";
    const auto built = fixture.index.add({.name = name,
                                          .version = "1.0",
                                          .requires_dist = {},
                                          .files = {{"tamperpkg/__init__.py", "answer = 42\n"}}},
                                         "built/tamperpkg-1.0-py3-none-any.whl");
    // The module changed after the wheel was built, its RECORD row left as it was.
    bad = fixture.served / "files" / "tamperpkg-1.0-py3-none-any.whl";
    rewrite_member(built, bad, "tamperpkg/__init__.py", "b'answer = 41\\n'");
    expected = {"tamperpkg-1.0-py3-none-any.whl", "entry `tamperpkg/__init__.py`: its sha256 is",
                "changed after it was built"};
  }
  fixture.write_lock(
      {fixture.locked("datapkg", "1.0", fixture.data_wheel), fixture.locked(name, "1.0", bad)});
  const auto failed = fixture.envkit({"install", "--frozen"});
  CHECK(failed.exit_code == 1);
  for (const auto& text : expected)
    CHECK_THAT(failed.err, Contains(text));
  CHECK(fs::read_symlink(fixture.prefix()) == generation);
  CHECK_FALSE(fs::exists(fixture.site() / name));
  CHECK(fixture.envkit({"run", "--", "datapkg-cli"}).out == "datapkg cli\n");
}

}  // namespace
}  // namespace envkit::test
