#pragma once
// A test that cannot run says so: it is reported as skipped, never as passed.
//
//   if (!fs::exists("/usr/local/cuda")) {
//     skip_test(SkipKind::expected, "no CUDA toolkit at /usr/local/cuda");
//     return;
//   }
//
// skip_test records the skip and warns with the reason; the case then returns (or
// leaves out what cannot run). A test process whose cases all skipped, with no
// failure, exits 77 (support/catch_main.cpp), which CTest reports as "Not Run
// (Skipped)" (SKIP_RETURN_CODE in tests/CMakeLists.txt). Each skip is one line of
// $ENVKIT_TEST_SKIP_LOG, `kind<TAB>test<TAB>reason`, which scripts/test sums up; with
// CI=true it fails on any skip of the setup_should_provide kind (docs/testing.md).

#include <source_location>
#include <string>
#include <string_view>

namespace envkit::test {

enum class SkipKind {
  // What some test machines rightly lack: a GPU or driver, /usr/local/cuda,
  // ../shared/upstream, root, a kernel feature, opt-in live tests not asked for.
  expected,
  // What scripts/setup (or scripts/fetch-test-tools, which it runs) installs: after
  // it, such a skip is a broken setup, and CI fails on it.
  setup_should_provide,
};

// Records that the running test case cannot do (all of) its job, and why.
void skip_test(SkipKind kind, std::string_view why,
               std::source_location where = std::source_location::current());

// The skips of the common kinds; each returns true (the test should return) after
// recording the skip.

// Whether `program` is missing from PATH: a skip of what scripts/setup installs.
bool program_missing(std::string_view program,
                     std::source_location where = std::source_location::current());

// Whether the opt-in live tests are off (ENVKIT_LIVE_TESTS is not 1): an expected
// skip, saying what setting it would do (`what`: "download torch from PyPI").
bool live_tests_off(std::string_view what,
                    std::source_location where = std::source_location::current());

// For support/catch_main.cpp: the skip bookkeeping of one test process.
namespace skip_tracking {
// The test program's label, `cli` for test_cli: CTest names its tests `cli:<case>`.
void set_program(std::string_view argv0);
void case_starting(std::string_view name);
// Ends the case; writes its skips to the log unless it failed. True when it skipped.
bool case_ended(bool failed);
}  // namespace skip_tracking

}  // namespace envkit::test
