#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

// A PEP 503 "simple" package index on disk, with tiny real wheels, for tests of
// pip and of installing wheels. Serve its root with StaticHttpServer
// (support/http_server.hpp); the index URL is then server.url("/simple/").
namespace envkit::test {

// A wheel to make: a real zip pip and envkit can read.
struct FakeWheel {
  std::string name;                        // as written: "alpha", "Beta_Pkg"
  std::string version;                     // "1.0"
  std::vector<std::string> requires_dist;  // Requires-Dist lines: "beta>=2.0", "x; os_name == 'nt'"
  // Path in the wheel -> content. Empty: one `<name>/__init__.py` holding `__version__`.
  // The .dist-info folder (METADATA, WHEEL, RECORD) is always added.
  std::vector<std::pair<std::string, std::string>> files;
  std::string tag = "py3-none-any";  // `{python}-{abi}-{platform}`, e.g. "cp311-cp311-linux_x86_64"
};

// Lays out, under `root`:
//   files/<wheel file name>          each wheel added
//   simple/index.html                a link per project
//   simple/<project>/index.html      `<a href="../../files/X.whl#sha256=...">X.whl</a>` per wheel
// Wheels are stored zips with fixed timestamps: the same FakeWheel gives the same bytes.
class PythonIndex {
 public:
  explicit PythonIndex(std::filesystem::path root);

  // Writes the wheel into files/ and rewrites the simple/ pages; returns the wheel's path.
  std::filesystem::path add(const FakeWheel& wheel);

  [[nodiscard]] const std::filesystem::path& root() const { return root_; }

  // The wheel's file name: "alpha-1.0-py3-none-any.whl" (name normalized, `-` as `_`).
  [[nodiscard]] static std::string filename_of(const FakeWheel& wheel);
  // The sha256 of a file (a wheel add() wrote), 64 lowercase hex digits.
  [[nodiscard]] static std::string sha256_of(const std::filesystem::path& file);

 private:
  void write_pages() const;

  std::filesystem::path root_;
  std::map<std::string, std::vector<std::string>> wheels_;  // project -> wheel file names
};

// The bytes of a zip archive holding `entries` (path -> content), stored without
// compression, with fixed timestamps (1980-01-01) and mode 0644.
[[nodiscard]] std::string make_zip(const std::vector<std::pair<std::string, std::string>>& entries);

}  // namespace envkit::test
