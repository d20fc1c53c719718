#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/recipes/recipe.hpp"

// Debian's archive as a second place for python.org's CPython tarballs
// (docs/recipes.md, "The Debian overlay"): Debian builds its python3.X packages from
// the upstream tarball, kept in its pool as `python3.X_X.Y.Z.orig.tar.xz`. Where that
// file's sha256 is the one recorded for python.org's tarball of the release, it is
// the same file: its Debian URL becomes an `also-at` URL of the recorded artifact.
namespace envkit::recipes {

// One upstream tarball of a python3.X source package, as Debian's Sources index lists it.
struct DebianTarball {
  std::string package;  // python3.11
  std::string version;  // the upstream release: 3.11.2
  std::string file;     // python3.11_3.11.2.orig.tar.xz
  std::string url;      // ARCHIVE/pool/main/p/python3.11/python3.11_3.11.2.orig.tar.xz
  std::string sha256;   // as the index lists it (Checksums-Sha256)
  std::uint64_t size = 0;
};

// The `.orig.tar.*` files of every `python3.X` source package of a Sources index (the
// text of dists/SUITE/main/source/Sources), each once, with its URL under `archive`
// (https://deb.debian.org/debian). Signatures (`.asc`), Debian's own files and
// pre-releases (`3.14.0~rc1`) are left out. A stanza whose python3.X orig line is
// malformed is an error naming `file` and the line.
[[nodiscard]] Result<std::vector<DebianTarball>> debian_python_tarballs(std::string_view sources,
                                                                        std::string_view file,
                                                                        std::string_view archive);

struct DebianImport {
  // Recipe `python`: each matched release with the recorded source artifact at its Debian
  // URL (merged over the pyenv/ overlay, it becomes that artifact's `also-at`).
  Recipe recipe;
  // The tarballs matched, to be downloaded and checked before anything is written.
  std::vector<DebianTarball> matched;
  // One sentence per tarball that is not a recorded artifact, and why.
  std::vector<std::string> left_out;
};

// Matches `tarballs` against the source artifacts of `sources` (recipe `python` with the
// pyenv/ overlay's artifacts: python.org's tarballs and their sha256): a tarball whose
// listed sha256 equals the recorded one of its release is matched, anything else is left
// out (a release with no recorded tarball, another file of it: `.tgz` against a recorded
// `.tar.xz`, or a repacked one). `provenance` is the recipe's source.
[[nodiscard]] DebianImport import_debian_python(const Recipe& sources,
                                                std::span<const DebianTarball> tarballs,
                                                std::string_view provenance);

}  // namespace envkit::recipes
