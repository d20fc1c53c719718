#include "envkit/activation/exec.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/text.hpp"
#include "path_list.hpp"

namespace envkit::activation {

namespace {

namespace fs = std::filesystem;

// Signal dispositions and the mask survive execve. envkit ignores SIGPIPE
// (main.cpp), and an ignored SIGPIPE in the command would turn `envkit run --
// yes | head` into an endless stream of EPIPE errors; so the command gets the
// defaults, and envkit gets its own back if no command started.
class DefaultSignalsForExec {
 public:
  DefaultSignalsForExec() {
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    ::sigaction(SIGPIPE, &default_action, &saved_pipe_);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, &saved_mask_);
  }
  ~DefaultSignalsForExec() {
    ::sigaction(SIGPIPE, &saved_pipe_, nullptr);
    ::sigprocmask(SIG_SETMASK, &saved_mask_, nullptr);
  }
  DefaultSignalsForExec(const DefaultSignalsForExec&) = delete;
  DefaultSignalsForExec& operator=(const DefaultSignalsForExec&) = delete;

 private:
  struct sigaction saved_pipe_ {};
  sigset_t saved_mask_{};
};

// NUL-terminated pointer arrays over strings that outlive them, for execve.
std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings)
    out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Where execvp would look for `program`: itself when it names a path, else each
// folder of PATH in order.
std::vector<std::string> candidates(const std::string& program, const Environment& environment) {
  if (program.find('/') != std::string::npos) return {program};
  const auto path = environment.find(std::string(env::kPath.name));
  std::vector<std::string> out;
  if (path == environment.end()) return out;
  for (const auto& dir : list_elements(path->second))
    out.push_back((dir / program).string());
  return out;
}

// One try: execve, or (for a file without #! or ELF header, as execvp does)
// the same file run by /bin/sh. Returns errno when nothing started.
int try_exec(const std::string& file, std::vector<std::string> argv, char** envp) {
  auto args = pointers(argv);
  ::execve(file.c_str(), args.data(), envp);
  if (errno != ENOEXEC) return errno;
  argv.insert(argv.begin(), "/bin/sh");
  argv[1] = file;
  auto with_shell = pointers(argv);
  ::execve("/bin/sh", with_shell.data(), envp);
  return errno;
}

// The errors execvp passes over to try the next folder of PATH.
bool try_next(int error) {
  return error == ENOENT || error == ENOTDIR || error == ESTALE || error == ENODEV ||
         error == ETIMEDOUT || error == EACCES;
}

}  // namespace

ExecFailure exec_command(const std::vector<std::string>& argv, const Environment& environment) {
  if (argv.empty() || argv.front().empty()) {
    return {.error = Error::input("no command to run"), .exit_code = 2};
  }
  std::vector<std::string> variables;
  variables.reserve(environment.size());
  for (const auto& [name, value] : environment)
    variables.push_back(name + "=" + value);
  auto envp = pointers(variables);

  // What envkit wrote must come out before the command's own output.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);

  const auto& program = argv.front();
  std::optional<std::pair<std::string, int>> unrunnable;  // a file found that would not start
  {
    const DefaultSignalsForExec signals;
    for (const auto& file : candidates(program, environment)) {
      const int error = try_exec(file, argv, envp.data());
      std::error_code ignored;
      // ENOENT for a file that is there: its #! interpreter or ELF loader is missing.
      if (error != ENOENT || fs::exists(file, ignored)) {
        if (!unrunnable || unrunnable->second == EACCES) unrunnable.emplace(file, error);
      }
      if (!try_next(error)) break;
    }
  }
  if (unrunnable) {
    return {.error = Error::failed(fmt::format("cannot run {}", text::quoted(unrunnable->first)))
                         .because(std::strerror(unrunnable->second)),
            .exit_code = 126};
  }
  return {.error = Error::failed(fmt::format("command not found: {}", text::quoted(program)))
                       .hint(program.find('/') == std::string::npos
                                 ? "it is in neither the prefix's bin/ nor the inherited PATH"
                                 : "no such file"),
          .exit_code = 127};
}

}  // namespace envkit::activation
