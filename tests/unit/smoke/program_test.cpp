// Reading the smoke program's JSON and summing it up for people.
#include "envkit/smoke/program.hpp"

#include <catch2/catch.hpp>

namespace envkit::smoke {
namespace {

constexpr std::string_view kGpuPass =
    R"({"status":"pass","reason":"","gpu":"NVIDIA H100 80GB HBM3","compute_capability":"9.0",)"
    R"("driver":"12.4","cuda_runtime":"12.4","cudnn":"9.1.0","steps":200,"loss_first":1.39245,)"
    R"("loss_last":0.0867,"accuracy":1,"max_reference_error":1.2e-06,"gpu_seconds":0.021,)"
    R"("cpu_seconds":0.45})";

constexpr std::string_view kCpuPass =
    R"({"status":"pass","reason":"","gpu":null,"compute_capability":null,"driver":null,)"
    R"("cuda_runtime":null,"cudnn":null,"steps":200,"loss_first":1.39,"loss_last":0.09,)"
    R"("accuracy":1,"max_reference_error":null,"gpu_seconds":null,"cpu_seconds":0.4})";

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines)
    out += line + "\n";
  return out;
}

TEST_CASE("a GPU pass reads field for field, with the speedup", "[smoke]") {
  auto report = parse_report(kGpuPass);
  REQUIRE(report);
  CHECK(report->status == "pass");
  CHECK(report->gpu == "NVIDIA H100 80GB HBM3");
  CHECK(report->cudnn == "9.1.0");
  CHECK(report->steps == 200);
  CHECK(report->accuracy == Approx(1.0));
  REQUIRE(speedup(*report));
  CHECK(*speedup(*report) == Approx(0.45 / 0.021));
  const auto text = joined(summary_lines(*report));
  CHECK_THAT(text, Catch::Contains("NVIDIA H100 80GB HBM3 (compute capability 9.0)"));
  CHECK_THAT(text, Catch::Contains("supports CUDA 12.4"));
  CHECK_THAT(text, Catch::Contains("CUDA runtime 12.4, cuDNN 9.1.0"));
  CHECK_THAT(text, Catch::Contains("200 steps, loss 1.392 -> 0.0867, accuracy 100.0%"));
  CHECK_THAT(text, Catch::Contains("21.4x"));
  CHECK_THAT(text, Catch::EndsWith("PASS\n"));
}

TEST_CASE("a CPU-only pass has no GPU fields and no speedup", "[smoke]") {
  auto report = parse_report(kCpuPass);
  REQUIRE(report);
  CHECK_FALSE(report->gpu);
  CHECK_FALSE(report->max_reference_error);
  CHECK_FALSE(speedup(*report));
  const auto text = joined(summary_lines(*report));
  CHECK_THAT(text, Catch::Contains("CPU only"));
  CHECK_THAT(text, Catch::Contains("CPU reference 0.400 s"));
}

TEST_CASE("a failure's summary carries the program's reason", "[smoke]") {
  auto report =
      parse_report(R"({"status":"fail","reason":"loss did not halve: 1.39 -> 1.2","steps":20,)"
                   R"("loss_first":1.39,"loss_last":1.2})");
  REQUIRE(report);
  CHECK_THAT(joined(summary_lines(*report)),
             Catch::Contains("FAIL: loss did not halve: 1.39 -> 1.2"));
}

TEST_CASE("output that is not the program's JSON is refused", "[smoke]") {
  CHECK_FALSE(parse_report(""));
  CHECK_FALSE(parse_report("smoke: PASS"));
  CHECK_FALSE(parse_report("[1, 2]"));
  CHECK_FALSE(parse_report(R"({"status":"maybe"})"));
  CHECK_FALSE(parse_report(R"({"status":"pass","steps":"many"})"));
  CHECK_FALSE(parse_report(R"({"status":"pass"} {"status":"pass"})"));
}

}  // namespace
}  // namespace envkit::smoke
