#pragma once

#include <string>
#include <vector>

#include "envkit/activation/activation.hpp"
#include "envkit/core/error.hpp"

// Replacing envkit with the command (`envkit run`, `envkit shell`), so the
// command gets the terminal, the signals and the exit status as if the user had
// started it: no envkit process stays behind.
namespace envkit::activation {

// Why the command could not start, and the exit status a shell gives for it.
struct ExecFailure {
  Error error;
  int exit_code = 127;  // 127: not found; 126: found but cannot be run
};

// Looks `argv[0]` up on `environment`'s PATH (not envkit's own: the prefix's
// bin/ must win), the way execvp does, and replaces this process with it,
// running in `environment`. Returns only when no candidate could start.
[[nodiscard]] ExecFailure exec_command(const std::vector<std::string>& argv,
                                       const Environment& environment);

}  // namespace envkit::activation
