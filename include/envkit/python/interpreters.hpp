#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "envkit/specs/version.hpp"

// The Python interpreters this machine already has (pyenv's versions, /usr/bin,
// PATH, a conda base, uv's managed Pythons): where the lock's own Python cannot
// be downloaded, one of the same minor version stands in for it
// (docs/python.md#which-python), and sdists are built by one of the lock's minor.
namespace envkit::python {

struct MachineInterpreter {
  std::filesystem::path path;  // the executable, as found (not resolved)
  specs::Version version;      // what it said it is: 3.8.18
  std::string source;          // where it was found: "pyenv", "PATH", "conda base", ...
};

struct InterpreterSearch {
  // Newest version first; one per real executable.
  std::vector<MachineInterpreter> found;
  // Executables left out, one sentence each: a `python3.8` that is 3.9.18, one
  // that does not run.
  std::vector<std::string> refused;
};

// Every interpreter in the usual places: $PYENV_ROOT (~/.pyenv) versions,
// ~/.local/share/uv/python, conda bases (~/miniconda3, ~/miniforge3,
// ~/anaconda3, /opt/conda, $CONDA_PREFIX), PATH, /usr/local/bin, /usr/bin.
// ENVKIT_PYTHON_SEARCH_PATH (folders, `:`-separated) replaces those places.
// Each is run once (`-c` printing its version): a name is a claim, the answer
// is the fact.
[[nodiscard]] InterpreterSearch search_interpreters();

// search_interpreters(), run once per process and value of ENVKIT_PYTHON_SEARCH_PATH.
[[nodiscard]] const InterpreterSearch& machine_interpreters();

// The newest machine interpreter of `version`'s major.minor; nullopt when the
// machine has none.
[[nodiscard]] std::optional<MachineInterpreter> machine_interpreter(const specs::Version& version);

// Runs `path` and answers its version; nullopt when it does not run or answer.
[[nodiscard]] std::optional<specs::Version> interpreter_version(const std::filesystem::path& path);

}  // namespace envkit::python
