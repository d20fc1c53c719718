#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// The environment a prefix gives the programs run in it: what `envkit run`,
// `envkit shell` and `envkit activate` set (docs/activation.md). Values from
// values: the inherited environment is a plain map, so every rule is testable
// without touching the process's own environment.
namespace envkit::activation {

// Variables by name, as a process inherits them.
using Environment = std::map<std::string, std::string>;

// One variable to set, or to unset (no value).
struct Assignment {
  std::string name;
  std::optional<std::string> value;
  // A colon-separated list (PATH, LD_LIBRARY_PATH, ...): fish writes it as a list.
  bool list = false;

  bool operator==(const Assignment&) const = default;
};

// What the prefix holds that changes its environment.
struct PrefixFacts {
  bool has_python = false;  // bin/python3: its own Python comes first, PYTHONHOME goes
};

// Looks at the prefix (the current generation, through its symlink).
[[nodiscard]] PrefixFacts probe(const std::filesystem::path& prefix);

// The assignments that activate `prefix`, in a fixed order, with the lists
// built from `inherited`. `prefix` is used as given (the symlink the user
// named, not the generation it points at), so a later install's switch is
// seen by everything already activated.
[[nodiscard]] std::vector<Assignment> assignments(const std::filesystem::path& prefix,
                                                  const PrefixFacts& facts,
                                                  const Environment& inherited);

// `first`, then the elements of `existing` (colon-separated) that are neither
// empty nor in `first` or `drop` (compared as normalized paths), in order. An
// empty element means the current directory to the loader, the shell and the
// compiler, so none is ever left, and an unset or empty `existing` adds nothing.
[[nodiscard]] std::string prepend_list(std::span<const std::string> first,
                                       std::optional<std::string_view> existing,
                                       std::span<const std::string> drop = {});

// `environment` with the assignments applied.
[[nodiscard]] Environment with_changes(Environment environment,
                                       std::span<const Assignment> changes);

// This process's environment.
[[nodiscard]] Environment current_environment();

// Warnings about CUDA files that programs in the activated environment would
// still take from outside the prefix: a libcudart/libcudnn soname the prefix
// lacks but an inherited LD_LIBRARY_PATH folder has, one named in LD_PRELOAD
// (loaded before anything else). Each names the file found; nothing is said
// about files that do not exist. An `nvcc` on PATH that is not the prefix's is
// doctor's to say (its toolkit check), once, not every `run`'s: most prefixes
// made of NVIDIA's wheels have none, and nothing is wrong with that.
[[nodiscard]] std::vector<std::string> shadowing_warnings(const std::filesystem::path& prefix,
                                                          const Environment& activated);

// Notes on inherited values the activation replaces (CUDA_HOME=/usr/local/cuda
// becoming the prefix): expected, so they are details, not warnings.
[[nodiscard]] std::vector<std::string> replaced_values(std::span<const Assignment> changes,
                                                       const Environment& inherited);

}  // namespace envkit::activation
