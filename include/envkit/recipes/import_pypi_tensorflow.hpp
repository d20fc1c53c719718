#pragma once

#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/recipes/import_pypi.hpp"
#include "envkit/recipes/recipe.hpp"

// Completes the TensorFlow recipes from the package index. TensorFlow's tested-build
// tables list one row per minor (2.12.0) and list tensorflow-gpu 2.x for Windows only;
// PyPI has every release (2.12.1) and tensorflow-gpu's manylinux wheels up to 2.10.
// For each release with wheels, the overlay gives the builds of its minor's row, on the
// platforms the release has wheels for, with the Python range of its wheels' CPython
// tags and the glibc its manylinux wheels need. The result is an overlay for
// recipes/pypi/tensorflow.yaml and recipes/pypi/tensorflow-gpu.yaml.
namespace envkit::recipes {

struct PypiTensorflowImport {
  Recipe tensorflow;
  Recipe tensorflow_gpu;
  std::vector<std::string> added;  // "tensorflow 2.12.1: builds of 2.12.0", for the log
  std::size_t releases = 0;        // releases with wheels read from the index
};

// Asks the index for the `tensorflow` and `tensorflow-gpu` pages once each.
// `tensorflow` and `tensorflow_gpu` are the recipes the tables make.
[[nodiscard]] Result<PypiTensorflowImport> import_pypi_tensorflow(const Recipe& tensorflow,
                                                                  const Recipe& tensorflow_gpu,
                                                                  const PypiImportOptions& options);

}  // namespace envkit::recipes
