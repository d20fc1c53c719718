#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

// A PEP 503 "simple" package index on disk, with tiny real wheels and sdists,
// for tests of resolvers (pip, uv) and of installing. Serve its root with
// StaticHttpServer (support/http_server.hpp); the index URL is then
// server.url("/simple/") (or the `pages` folder given).
namespace envkit::test {

// A distribution to make: a wheel (a real zip pip, uv and envkit read) or, with
// `sdist`, a source archive (.tar.gz) whose PKG-INFO and pyproject.toml state
// the metadata statically, so a resolver reads it without building.
struct FakeWheel {
  std::string name;                        // as the metadata writes it: "alpha", "Beta_Pkg"
  std::string version;                     // "1.0", "2.4.1+cu124"
  std::vector<std::string> requires_dist;  // Requires-Dist lines: "beta>=2.0", "x; os_name == 'nt'"
  // Path in the wheel -> content. Empty: one `<name>/__init__.py` holding `__version__`.
  // The .dist-info folder (METADATA, WHEEL, RECORD) is always added.
  std::vector<std::pair<std::string, std::string>> files;
  std::string tag = "py3-none-any";  // `{python}-{abi}-{platform}`, e.g. "cp311-cp311-linux_x86_64"
  std::string requires_python;       // Requires-Python, also the page's data-requires-python
  std::vector<std::string> provides_extra;  // Provides-Extra: "and-cuda"
  bool sdist = false;                       // a source distribution: `tag` and `files` unused
  // PEP 700 `upload-time` ("2019-11-27T10:00:00Z"): the project's page is then also
  // served as PEP 691 JSON (index.pyjson, which the server answers before index.html).
  std::string upload_time;
};

// Lays out, under `root`:
//   files/<file name>                each distribution added (or the path add() is given)
//   PAGES/index.html                 a link per project (PAGES: "simple" unless given)
//   PAGES/<project>/index.html       a link per file, relative, `+` as %2B:
//       <a href="../../files/X.whl#sha256=..." data-requires-python="&gt;=3.8"
//          data-dist-info-metadata="sha256=..." data-core-metadata="sha256=...">X.whl</a>
//   <wheel>.metadata                 next to each wheel, its METADATA (PEP 658)
//   PAGES/<project>/index.pyjson     the same as PEP 691 JSON (api-version 1.1, with
//                                    `upload-time`), when a file of the project has one
// Files are stored zips and uncompressed tar.gz with fixed timestamps: the same
// FakeWheel gives the same bytes.
class PythonIndex {
 public:
  explicit PythonIndex(std::filesystem::path root, std::string pages = "simple");

  // Writes the distribution to `path` (relative to the root, as on the server;
  // empty: files/<filename_of>) and rewrites the pages; returns the file's path.
  std::filesystem::path add(const FakeWheel& wheel, const std::filesystem::path& path = {});

  // Copies a real wheel file to files/<its name> and lists it on its project's
  // page (no PEP 658 metadata); returns the copy's path.
  std::filesystem::path add_file(const std::filesystem::path& wheel,
                                 const std::string& upload_time = {});

  [[nodiscard]] const std::filesystem::path& root() const { return root_; }

  // The file name: "alpha-1.0-py3-none-any.whl" (name normalized, `-` as `_`),
  // "alpha-1.0.tar.gz" for an sdist.
  [[nodiscard]] static std::string filename_of(const FakeWheel& wheel);
  // The sha256 of a file (a wheel add() wrote), 64 lowercase hex digits.
  [[nodiscard]] static std::string sha256_of(const std::filesystem::path& file);

 private:
  struct Link {
    std::filesystem::path path;  // relative to the root
    std::string sha256, requires_python, metadata_sha256;
    std::string upload_time;
  };
  void write_pages() const;
  [[nodiscard]] std::string json_page(const std::string& project, const std::vector<Link>& links,
                                      const std::filesystem::path& page_dir) const;

  std::filesystem::path root_;
  std::string pages_;
  std::map<std::string, std::vector<Link>> links_;  // project -> its files
};

// One file of a mirror build_mirror() made.
struct MirroredFile {
  std::string url;              // upstream: https://files.pythonhosted.org/packages/.../x.whl
  std::string sha256;           // of the generated file
  std::string upstream_sha256;  // the real file's, as the description records it; may be empty
};

// Builds under `root`, in the layout of `envkit mirror` (ROOT/<host>/<path>),
// the indexes that JSON descriptions (tests/data/pyindex/*.json, written by
// scripts/collect-pyindex) list: for each project's releases, each file at its
// upstream URL's place with generated contents, and each index's pages at
// ROOT/<index host>/<index path>/. Serve `root` and ask for
// MIRROR/pypi.org/simple/. Throws std::runtime_error on a malformed description.
std::vector<MirroredFile> build_mirror(const std::filesystem::path& root,
                                       const std::vector<std::filesystem::path>& descriptions);

// The descriptions of the hermetic index: tests/data/pyindex/*.json but seeds.json.
[[nodiscard]] std::vector<std::filesystem::path> pyindex_descriptions(
    const std::filesystem::path& data_dir);

// The bytes of a zip archive holding `entries` (path -> content), stored without
// compression, with fixed timestamps (1980-01-01) and mode 0644.
[[nodiscard]] std::string make_zip(const std::vector<std::pair<std::string, std::string>>& entries);

// The bytes of a gzip-compressed tar (ustar) archive holding `entries`, with
// deflate's stored blocks (no compression), mtime 0, mode 0644, owner root.
[[nodiscard]] std::string make_tar_gz(
    const std::vector<std::pair<std::string, std::string>>& entries);

}  // namespace envkit::test
