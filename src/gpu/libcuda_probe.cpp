// Asks the CUDA driver library what the driver supports and which GPUs it sees.
// libcuda is loaded in a forked child, never in envkit itself: a wedged driver can
// hang cuInit, and a broken one can crash the process that loads it.
#include "envkit/gpu/libcuda_probe.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <thread>

#include "envkit/core/text.hpp"

namespace envkit::gpu {

namespace {

using Clock = std::chrono::steady_clock;

// ------------------------------------------------------------------ parse

// `key rest of the line` -> {key, rest}.
std::pair<std::string_view, std::string_view> split_first(std::string_view line) {
  const auto space = line.find(' ');
  if (space == std::string_view::npos) return {line, {}};
  return {line.substr(0, space), text::trim(line.substr(space + 1))};
}

std::optional<long> whole_number(std::string_view text) {
  long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// cuDriverGetVersion's 1000 * major + 10 * minor: 12040 is 12.4, 11080 is 11.8.
Result<specs::Version> cuda_version(std::string_view text) {
  const auto value = whole_number(text);
  if (!value || *value <= 0) {
    return Error::failed(fmt::format("{} is not a CUDA version number", text::quoted(text)));
  }
  return specs::Version::parse(fmt::format("{}.{}", *value / 1000, *value % 1000 / 10));
}

// `cuInit 100 CUDA_ERROR_NO_DEVICE` -> `cuInit failed: CUDA_ERROR_NO_DEVICE (100)`.
Result<std::string> failed_call(std::string_view value) {
  const auto [function, rest] = split_first(value);
  const auto [code, name] = split_first(rest);
  if (function.empty() || !whole_number(code)) {
    return Error::failed("expected `error <function> <code> [<name>]`");
  }
  if (name.empty()) return fmt::format("{} failed with code {}", function, code);
  return fmt::format("{} failed: {} ({})", function, name, code);
}

// `0 9.0 NVIDIA H100 80GB HBM3`, the `index`-th device.
Result<Gpu> device(std::string_view value, std::size_t index) {
  const auto [number, rest] = split_first(value);
  const auto [capability_text, name] = split_first(rest);
  const auto found = whole_number(number);
  if (!found || *found < 0 || static_cast<std::size_t>(*found) != index) {
    return Error::failed(fmt::format("expected device {}", index));
  }
  auto capability = specs::ComputeCapability::parse(capability_text);
  if (!capability) return std::move(capability).error();
  return Gpu{name.empty() ? std::nullopt : std::optional<std::string>(name), *capability};
}

// ------------------------------------------------------------------ child

// The driver API, as much of it as the probe calls (cuda.h need not be installed).
// CUresult is an int-sized enum, 0 for success; CUdevice is an int.
using CuResult = int;
using CuInit = CuResult (*)(unsigned int flags);
using CuDriverGetVersion = CuResult (*)(int* version);
using CuDeviceGetCount = CuResult (*)(int* count);
using CuDeviceGet = CuResult (*)(int* device, int ordinal);
using CuDeviceGetAttribute = CuResult (*)(int* value, int attribute, int device);
using CuDeviceGetName = CuResult (*)(char* name, int length, int device);
using CuGetErrorName = CuResult (*)(CuResult error, const char** name);
constexpr int kComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kComputeCapabilityMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

// Writes the report, a line at a time, so a child killed midway has said what it knew.
class ReportWriter {
 public:
  explicit ReportWriter(int fd) : fd_(fd) {}

  void line(std::string_view key, std::string_view value) {
    std::string text = fmt::format("{} {}\n", key, value);
    // One fact per line: a name or message with a newline stays on its line.
    std::replace(text.begin(), text.end() - 1, '\n', ' ');
    std::replace(text.begin(), text.end(), '\r', ' ');
    std::string_view left = text;
    while (!left.empty()) {
      const auto n = ::write(fd_, left.data(), left.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ::_exit(1);  // the parent stopped listening
      left.remove_prefix(static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_;
};

// The driver library, loaded; exits the child when it or a function is missing.
class Driver {
 public:
  Driver(const char* library, ReportWriter& out) : out_(out) {
    handle_ = ::dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* why = ::dlerror();
      out_.line("not_loaded", why != nullptr ? why : "dlopen failed");
      ::_exit(0);
    }
    out_.line("loaded", library);
    error_name_ = reinterpret_cast<CuGetErrorName>(::dlsym(handle_, "cuGetErrorName"));
  }

  template <class Function>
  Function function(const char* name) {
    void* found = ::dlsym(handle_, name);
    if (found == nullptr) {
      out_.line("missing", name);
      ::_exit(0);
    }
    return reinterpret_cast<Function>(found);
  }

  // Reports a failed call; true when `result` is one.
  bool failed(const char* function, CuResult result) {
    if (result == 0) return false;
    const char* name = nullptr;
    if (error_name_ == nullptr || error_name_(result, &name) != 0 || name == nullptr) name = "";
    out_.line("error", *name == '\0' ? fmt::format("{} {}", function, result)
                                     : fmt::format("{} {} {}", function, result, name));
    return true;
  }

 private:
  ReportWriter& out_;
  void* handle_ = nullptr;
  CuGetErrorName error_name_ = nullptr;
};

// The child: asks the driver and writes the report to `fd`. Never returns.
[[noreturn]] void report_from_child(const char* library, int fd) {
  // Whatever the driver prints must not land in envkit's output.
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
  }
  ReportWriter out(fd);
  Driver driver(library, out);
  const auto driver_get_version = driver.function<CuDriverGetVersion>("cuDriverGetVersion");
  const auto init = driver.function<CuInit>("cuInit");
  const auto device_get_count = driver.function<CuDeviceGetCount>("cuDeviceGetCount");
  const auto device_get = driver.function<CuDeviceGet>("cuDeviceGet");
  const auto device_get_attribute = driver.function<CuDeviceGetAttribute>("cuDeviceGetAttribute");
  const auto device_get_name = driver.function<CuDeviceGetName>("cuDeviceGetName");

  // The one answer that needs no cuInit, so a driver that fails it still says this.
  int version = 0;
  if (!driver.failed("cuDriverGetVersion", driver_get_version(&version))) {
    out.line("driver_version", std::to_string(version));
  }
  if (driver.failed("cuInit", init(0))) ::_exit(0);
  int count = 0;
  if (driver.failed("cuDeviceGetCount", device_get_count(&count))) ::_exit(0);
  out.line("device_count", std::to_string(count));
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    int device = 0;
    int major = 0;
    int minor = 0;
    char name[256] = {};
    if (driver.failed("cuDeviceGet", device_get(&device, ordinal)) ||
        driver.failed("cuDeviceGetAttribute",
                      device_get_attribute(&major, kComputeCapabilityMajor, device)) ||
        driver.failed("cuDeviceGetAttribute",
                      device_get_attribute(&minor, kComputeCapabilityMinor, device)) ||
        driver.failed("cuDeviceGetName",
                      device_get_name(name, static_cast<int>(sizeof name - 1), device))) {
      ::_exit(0);
    }
    out.line("device", fmt::format("{} {}.{} {}", ordinal, major, minor, name));
  }
  ::_exit(0);
}

// ----------------------------------------------------------------- parent

std::string duration_text(std::chrono::milliseconds duration) {
  if (duration.count() % 1000 == 0) return fmt::format("{} s", duration.count() / 1000);
  return fmt::format("{} ms", duration.count());
}

struct ChildRun {
  std::string report;
  bool timed_out = false;
  bool reaped = false;  // false: SIGKILL did not end it (stuck in the kernel); left behind
  int status = 0;       // waitpid's, when reaped
};

// Waits for the child to end; at `deadline` kills it, and gives up on it when
// even that does not end it within a grace period (a process stuck in the driver).
void reap(pid_t pid, Clock::time_point deadline, ChildRun& run) {
  constexpr auto kGrace = std::chrono::seconds(2);
  bool killed = false;
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno == ECHILD)) {  // ECHILD: SIGCHLD ignored, reaped
      run.reaped = true;
      run.status = done == pid ? status : 0;
      return;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      if (killed) return;
      ::kill(pid, SIGKILL);
      killed = true;
      deadline = now + kGrace;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// Forks the child, reads its report until it ends or `timeout` passes.
Result<ChildRun> run_child(const std::string& library, std::chrono::milliseconds timeout) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return Error::failed("cannot create a pipe").because(std::strerror(errno));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return Error::failed("cannot start the probe process").because(std::strerror(error));
  }
  if (pid == 0) {
    // Nothing may return or throw past here: the child must never run the parent's code.
    try {
      ::close(fds[0]);
      report_from_child(library.c_str(), fds[1]);
    } catch (...) {
      ::_exit(1);
    }
  }
  ::close(fds[1]);

  ChildRun run;
  const auto deadline = Clock::now() + timeout;
  char buffer[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      run.timed_out = true;
      break;
    }
    pollfd fd{fds[0], POLLIN, 0};
    const int ready = ::poll(&fd, 1, static_cast<int>(left.count()) + 1);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const auto n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // end of the report: the child has exited
    run.report.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  // A child that closed the pipe has ended or is about to; one that timed out is killed now.
  reap(pid, run.timed_out ? Clock::now() : deadline, run);
  return run;
}

// Why the child gave no full answer, if it did not.
std::optional<std::string> child_problem(const ChildRun& run, std::chrono::milliseconds timeout) {
  if (run.timed_out) {
    return fmt::format("did not answer within {} (a wedged driver?); the probe process {}",
                       duration_text(timeout),
                       run.reaped ? "was killed" : "could not be killed and was left behind");
  }
  if (!run.reaped) return "the probe process did not end and was left behind";
  if (WIFSIGNALED(run.status)) {
    const int signal = WTERMSIG(run.status);
    return fmt::format("the probe process died of signal {} ({})", signal, ::strsignal(signal));
  }
  if (WIFEXITED(run.status) && WEXITSTATUS(run.status) != 0) {
    return fmt::format("the probe process exited with {}", WEXITSTATUS(run.status));
  }
  return std::nullopt;
}

}  // namespace

Result<LibcudaReport> parse_libcuda_report(std::string_view text) {
  LibcudaReport report;
  std::optional<std::size_t> device_count;
  std::vector<Gpu> devices;
  int line_number = 0;
  for (auto line : text::split(text, '\n')) {
    ++line_number;
    line = text::trim(line);
    if (line.empty()) continue;
    const auto not_understood = [&](const std::string& why) {
      return Error::failed(fmt::format("libcuda report line {} not understood: {}", line_number,
                                       text::quoted(line)))
          .because(why);
    };
    const auto [key, value] = split_first(line);
    if (key == "loaded") {
      report.loaded = true;
      report.library = std::string(value);
    } else if (key == "not_loaded") {
      report.load_error = std::string(value);
      report.problems.push_back(fmt::format("cannot be loaded: {}", value));
    } else if (key == "missing") {
      report.problems.push_back(fmt::format("has no function {}", value));
    } else if (key == "driver_version") {
      auto version = cuda_version(value);
      if (!version) return not_understood(version.error().message());
      report.driver_cuda = std::move(version).value();
    } else if (key == "device_count") {
      const auto count = whole_number(value);
      if (!count || *count < 0) return not_understood("expected a number of devices");
      device_count = static_cast<std::size_t>(*count);
    } else if (key == "device") {
      if (!device_count || devices.size() >= *device_count) {
        return not_understood("more devices than device_count");
      }
      auto gpu = device(value, devices.size());
      if (!gpu) return not_understood(gpu.error().message());
      devices.push_back(std::move(gpu).value());
    } else if (key == "error") {
      auto problem = failed_call(value);
      if (!problem) return not_understood(problem.error().message());
      report.problems.push_back(std::move(problem).value());
    } else {
      return not_understood(fmt::format("unknown key {}", text::quoted(key)));
    }
  }
  if (device_count && devices.size() == *device_count) report.gpus = std::move(devices);
  return report;
}

std::optional<LibcudaReport> query_libcuda(const std::string& library,
                                           std::chrono::milliseconds timeout) {
  const auto run = run_child(library, timeout);
  if (!run) {
    LibcudaReport failed;
    failed.problems.push_back(run.error().message() + ": " +
                              text::join(run.error().causes(), "; "));
    return failed;
  }
  auto parsed = parse_libcuda_report(run->report);
  LibcudaReport report;
  if (parsed) {
    report = std::move(parsed).value();
  } else {
    report.problems.push_back(parsed.error().message() + ": " +
                              text::join(parsed.error().causes(), "; "));
  }
  const auto problem = child_problem(*run, timeout);
  if (problem) report.problems.push_back(*problem);
  // The usual machine without an NVIDIA driver: nothing to note.
  if (!report.loaded && !problem &&
      report.load_error.find("No such file or directory") != std::string::npos) {
    return std::nullopt;
  }
  return report;
}

}  // namespace envkit::gpu
