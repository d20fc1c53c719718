#include "envkit/sys/process.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "envkit/core/text.hpp"

extern char** environ;

namespace envkit::sys {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::optional<fs::path> find_on_path(std::string_view program) {
  if (program.find('/') != std::string_view::npos) return fs::path(program);
  const char* path = std::getenv("PATH");
  if (!path) return std::nullopt;
  for (auto dir : text::split(path, ':')) {
    if (dir.empty()) dir = ".";
    fs::path candidate = fs::path(dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate)) return candidate;
  }
  return std::nullopt;
}

namespace {

struct Pipe {
  int read = -1;
  int write = -1;
  ~Pipe() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
  bool open() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return false;
    read = fds[0];
    write = fds[1];
    return true;
  }
  void close_read() { ::close(std::exchange(read, -1)); }
  void close_write() { ::close(std::exchange(write, -1)); }
};

std::vector<std::string> child_environment(const ProcessOptions& options) {
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e; ++e) {
    std::string_view entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    merged[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  }
  for (const auto& [name, value] : options.env) {
    if (value) {
      merged[name] = *value;
    } else {
      merged.erase(name);
    }
  }
  std::vector<std::string> out;
  out.reserve(merged.size());
  for (const auto& [name, value] : merged)
    out.push_back(name + "=" + value);
  return out;
}

// Hands each complete line of `out` past `reported` to `on_line`, and moves `reported` on.
void report_lines(const std::string& out, std::size_t& reported,
                  const std::function<void(std::string_view)>& on_line) {
  for (auto end = out.find('\n', reported); end != std::string::npos;
       end = out.find('\n', reported)) {
    on_line(std::string_view(out).substr(reported, end - reported));
    reported = end + 1;
  }
}

}  // namespace

Result<ProcessOutput> run_process(const std::vector<std::string>& argv,
                                  const ProcessOptions& options) {
  if (argv.empty()) return Error::internal("run_process: empty command");
  const auto program = find_on_path(argv[0]);
  if (!program) return Error::failed(fmt::format("`{}` not found on PATH", argv[0]));

  Pipe in, out, err, exec_status;
  if (!in.open() || !out.open() || !err.open() || !exec_status.open()) {
    return Error::failed("cannot create pipes").because(std::strerror(errno));
  }
  std::vector<std::string> env_strings = child_environment(options);
  std::vector<char*> env_ptrs;
  for (auto& s : env_strings)
    env_ptrs.push_back(s.data());
  env_ptrs.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> arg_ptrs;
  for (auto& s : args)
    arg_ptrs.push_back(s.data());
  arg_ptrs.push_back(nullptr);
  const std::string program_path = program->string();
  const std::string cwd = options.cwd ? options.cwd->string() : std::string();

  const pid_t pid = ::fork();
  if (pid < 0) return Error::failed("cannot start a process").because(std::strerror(errno));
  if (pid == 0) {
    // Child: only async-signal-safe calls from here on.
    ::dup2(in.read, 0);
    ::dup2(out.write, 1);
    ::dup2(err.write, 2);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
      const int e = errno;
      (void)!::write(exec_status.write, &e, sizeof e);
      ::_exit(127);
    }
    ::execve(program_path.c_str(), arg_ptrs.data(), env_ptrs.data());
    const int e = errno;
    (void)!::write(exec_status.write, &e, sizeof e);
    ::_exit(127);
  }

  in.close_read();
  out.close_write();
  err.close_write();
  exec_status.close_write();
  int exec_errno = 0;
  if (::read(exec_status.read, &exec_errno, sizeof exec_errno) == sizeof exec_errno) {
    ::waitpid(pid, nullptr, 0);
    return Error::failed(fmt::format("cannot run `{}`", argv[0]))
        .because(std::strerror(exec_errno));
  }

  ProcessOutput result;
  std::size_t lines_reported = 0;  // offset in result.out past the last line reported
  std::size_t stdin_written = 0;
  if (options.stdin_data.empty()) in.close_write();
  ::fcntl(in.write, F_SETFL, O_NONBLOCK);
  const auto deadline = Clock::now() + options.timeout;
  char buffer[65536];
  while (out.read >= 0 || err.read >= 0) {
    pollfd fds[3];
    int count = 0;
    if (out.read >= 0) fds[count++] = {out.read, POLLIN, 0};
    if (err.read >= 0) fds[count++] = {err.read, POLLIN, 0};
    if (in.write >= 0) fds[count++] = {in.write, POLLOUT, 0};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    const int ready = ::poll(fds, static_cast<nfds_t>(count), static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < count && ready > 0; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in.write) {
        const auto n = ::write(in.write, options.stdin_data.data() + stdin_written,
                               options.stdin_data.size() - stdin_written);
        if (n > 0) stdin_written += static_cast<std::size_t>(n);
        if (n < 0 && errno != EAGAIN && errno != EINTR) stdin_written = options.stdin_data.size();
        if (stdin_written >= options.stdin_data.size()) in.close_write();
        continue;
      }
      const auto n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        (fds[i].fd == out.read ? result.out : result.err)
            .append(buffer, static_cast<std::size_t>(n));
        if (fds[i].fd == out.read && options.on_stdout_line)
          report_lines(result.out, lines_reported, options.on_stdout_line);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        if (fds[i].fd == out.read)
          out.close_read();
        else
          err.close_read();
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status))
    result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    result.exit_code = 128 + WTERMSIG(status);
  return result;
}

}  // namespace envkit::sys
