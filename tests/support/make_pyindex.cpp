// envkit-pyindex OUT [DESCRIPTION.json...]: builds the hermetic package index
// (support/python_index.hpp, build_mirror) under OUT, from the descriptions
// given or tests/data/pyindex/*.json, and prints one line per file made:
// `<upstream URL> <sha256 of the generated file> <upstream sha256, or ->`.
#include <exception>
#include <iostream>

#include "support/python_index.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: envkit-pyindex OUT [DESCRIPTION.json...]\n";
    return 2;
  }
  std::vector<std::filesystem::path> descriptions(argv + 2, argv + argc);
  if (descriptions.empty()) descriptions = envkit::test::pyindex_descriptions(ENVKIT_TEST_DATA_DIR);
  try {
    for (const auto& file : envkit::test::build_mirror(argv[1], descriptions)) {
      std::cout << file.url << ' ' << file.sha256 << ' '
                << (file.upstream_sha256.empty() ? "-" : file.upstream_sha256) << '\n';
    }
  } catch (const std::exception& e) {
    std::cerr << "envkit-pyindex: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
