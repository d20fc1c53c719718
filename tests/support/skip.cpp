#include "support/skip.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "envkit/sys/process.hpp"

namespace envkit::test {

namespace {

struct RecordedSkip {
  SkipKind kind;
  std::string why;
};

// One test process runs one case at a time, on one thread.
struct SkipTracking {
  std::string program;  // `cli`: CTest names the case's test `cli:<case>`
  std::string current_case;
  std::vector<RecordedSkip> recorded;
};

SkipTracking& tracking() {
  static SkipTracking state;
  return state;
}

std::string_view kind_name(SkipKind kind) {
  return kind == SkipKind::expected ? "expected" : "setup";
}

std::string_view kind_words(SkipKind kind) {
  return kind == SkipKind::expected ? "skipped [expected here]"
                                    : "skipped [setup should provide it]";
}

// A field of the log's tab-separated line: no tab or newline inside.
std::string one_field(std::string_view text) {
  std::string field(text);
  std::replace_if(
      field.begin(), field.end(), [](char c) { return c == '\t' || c == '\n'; }, ' ');
  return field;
}

// Appends `line` to $ENVKIT_TEST_SKIP_LOG, where it is set. CTest runs tests in
// parallel processes: O_APPEND and one write() per line keep their lines whole.
void append_to_log(const std::string& line) {
  const char* log = std::getenv("ENVKIT_TEST_SKIP_LOG");
  if (log == nullptr || *log == '\0') return;
  const int fd = ::open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t written = 0;
  do {
    written = ::write(fd, line.data(), line.size());
  } while (written < 0 && errno == EINTR);
  ::close(fd);
}

}  // namespace

void skip_test(SkipKind kind, std::string_view why, std::source_location where) {
  tracking().recorded.push_back({kind, std::string(why)});
  // As WARN(...) at the caller's line: Catch's reporters show it with the case.
  Catch::AssertionHandler warning("WARN"_catch_sr,
                                  Catch::SourceLineInfo(where.file_name(), where.line()),
                                  Catch::StringRef(), Catch::ResultDisposition::ContinueOnFailure);
  warning.handleMessage(Catch::ResultWas::Warning,
                        std::string(kind_words(kind)) + ": " + std::string(why));
  warning.complete();
}

bool program_missing(std::string_view program, std::source_location where) {
  if (sys::find_on_path(program)) return false;
  skip_test(SkipKind::setup_should_provide,
            std::string(program) + " is not installed (scripts/setup installs it)", where);
  return true;
}

bool live_tests_off(std::string_view what, std::source_location where) {
  const char* live = std::getenv("ENVKIT_LIVE_TESTS");
  if (live != nullptr && std::string_view(live) == "1") return false;
  skip_test(SkipKind::expected, "set ENVKIT_LIVE_TESTS=1 to " + std::string(what), where);
  return true;
}

namespace skip_tracking {

void set_program(std::string_view argv0) {
  std::string name = std::filesystem::path(argv0).filename().string();
  if (name.starts_with("test_")) name.erase(0, 5);
  tracking().program = std::move(name);
}

void case_starting(std::string_view name) {
  tracking().current_case = name;
  tracking().recorded.clear();
}

bool case_ended(bool failed) {
  auto& state = tracking();
  const bool skipped = !state.recorded.empty();
  if (!failed) {
    for (const auto& skip : state.recorded) {
      append_to_log(std::string(kind_name(skip.kind)) + '\t' + one_field(state.program) + ":" +
                    one_field(state.current_case) + '\t' + one_field(skip.why) + '\n');
    }
  }
  state.recorded.clear();
  return skipped;
}

}  // namespace skip_tracking

}  // namespace envkit::test
