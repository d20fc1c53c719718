#include "envkit/smoke/program.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "envkit/core/text.hpp"
#include "envkit/smoke/build.hpp"
#include "envkit/sys/process.hpp"

namespace envkit::smoke {

namespace {

using nlohmann::json;

constexpr std::size_t kStderrTailLines = 20;
// The program's own limit (smoke_model.hpp's check): relative error per tensor.
constexpr double kMaxReferenceError = 1e-3;

template <class T>
std::optional<T> optional_field(const json& object, const char* name) {
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

std::string number(double value) {
  return fmt::format("{:.4g}", value);
}

}  // namespace

Result<ProgramReport> parse_report(std::string_view output) {
  json object;
  try {
    object = json::parse(output);
  } catch (const json::parse_error& e) {
    return Error::failed("the smoke program printed no valid JSON").because(e.what());
  }
  try {
    if (!object.is_object()) return Error::failed("the smoke program's JSON is not an object");
    ProgramReport report;
    report.status = object.value("status", "");
    if (report.status != "pass" && report.status != "fail" && report.status != "skip") {
      return Error::failed(
          fmt::format("the smoke program's JSON has status {}", text::quoted(report.status)));
    }
    report.reason = optional_field<std::string>(object, "reason").value_or("");
    report.gpu = optional_field<std::string>(object, "gpu");
    report.compute_capability = optional_field<std::string>(object, "compute_capability");
    report.driver = optional_field<std::string>(object, "driver");
    report.cuda_runtime = optional_field<std::string>(object, "cuda_runtime");
    report.cudnn = optional_field<std::string>(object, "cudnn");
    report.steps = optional_field<long>(object, "steps");
    report.loss_first = optional_field<double>(object, "loss_first");
    report.loss_last = optional_field<double>(object, "loss_last");
    report.accuracy = optional_field<double>(object, "accuracy");
    report.max_reference_error = optional_field<double>(object, "max_reference_error");
    report.gpu_seconds = optional_field<double>(object, "gpu_seconds");
    report.cpu_seconds = optional_field<double>(object, "cpu_seconds");
    report.compiler = optional_field<std::string>(object, "compiler");
    report.gpu_uuid = optional_field<std::string>(object, "gpu_uuid");
    for (const auto& library : object.value("libraries", json::array())) {
      report.libraries.push_back({.path = library.at("path").get<std::string>(),
                                  .in_prefix = library.at("in_prefix").get<bool>(),
                                  .driver = library.value("driver", false)});
    }
    for (const auto& deferred : object.value("deferred", json::array()))
      report.deferred.push_back(deferred.get<std::string>());
    if (const auto v = object.find("versions"); v != object.end() && v->is_object()) {
      report.versions = fmt::format("NVRTC {}, cuBLAS {}, cuDNN {} (built for CUDA {})",
                                    v->value("nvrtc", "?"), v->value("cublas", "?"),
                                    v->value("cudnn", "?"), v->value("cudnn_built_for_cuda", "?"));
    }
    for (const auto& kernel : object.value("kernels", json::array())) {
      if (!kernel.contains("error"))
        report.kernels.push_back(kernel.at("target").get<std::string>());
    }
    return report;
  } catch (const json::exception& e) {
    return Error::failed("the smoke program's JSON has a field of the wrong type")
        .because(e.what());
  }
}

std::optional<double> speedup(const ProgramReport& report) {
  if (!report.gpu_seconds || !report.cpu_seconds || *report.gpu_seconds <= 0) return std::nullopt;
  return *report.cpu_seconds / *report.gpu_seconds;
}

std::vector<std::string> summary_lines(const ProgramReport& report) {
  std::vector<std::string> lines;
  if (report.gpu) {
    lines.push_back(fmt::format("device:        {} (compute capability {})", *report.gpu,
                                report.compute_capability.value_or("?")));
  } else if (report.status != "skip") {
    lines.emplace_back("device:        CPU only (the CPU reference; --cpu-only)");
  }
  if (report.driver)
    lines.push_back(fmt::format("driver:        supports CUDA {}", *report.driver));
  if (report.versions) {
    lines.push_back("libraries:     " + *report.versions);
  } else if (report.cuda_runtime || report.cudnn) {
    lines.push_back(fmt::format("libraries:     CUDA runtime {}, cuDNN {}",
                                report.cuda_runtime.value_or("?"), report.cudnn.value_or("?")));
  }
  if (!report.libraries.empty()) {
    std::vector<std::string> inside;
    std::vector<std::string> outside;
    for (const auto& library : report.libraries) {
      const auto name = std::filesystem::path(library.path).filename().string();
      if (library.in_prefix) inside.push_back(name);
      if (!library.in_prefix && !library.driver) outside.push_back(library.path);
    }
    lines.push_back(fmt::format("loaded:        {} from the prefix: {}", inside.size(),
                                fmt::join(inside, " ")));
    if (!outside.empty())
      lines.push_back(fmt::format("OUTSIDE it:    {}", fmt::join(outside, " ")));
  }
  for (const auto& deferred : report.deferred)
    lines.push_back("not loaded:    " + deferred);
  if (!report.kernels.empty()) {
    lines.push_back(fmt::format("kernels:       compiled by the prefix's NVRTC for {}",
                                fmt::join(report.kernels, " ")));
  }
  if (report.loss_first && report.loss_last) {
    lines.push_back(fmt::format(
        "training:      {} steps, loss {} -> {}{}", report.steps.value_or(0),
        number(*report.loss_first), number(*report.loss_last),
        report.accuracy ? fmt::format(", accuracy {:.1f}%", 100 * *report.accuracy) : ""));
  }
  if (report.max_reference_error) {
    lines.push_back(fmt::format("reference:     first step {} from the CPU's (limit {})",
                                number(*report.max_reference_error), number(kMaxReferenceError)));
  }
  if (const auto faster = speedup(report)) {
    lines.push_back(fmt::format("time:          GPU {:.4f} s, CPU reference {:.3f} s: {:.1f}x",
                                *report.gpu_seconds, *report.cpu_seconds, *faster));
  } else if (report.cpu_seconds) {
    lines.push_back(fmt::format("time:          CPU reference {:.3f} s", *report.cpu_seconds));
  }
  if (report.status == "pass") {
    lines.emplace_back("result:        PASS");
  } else {
    lines.push_back(fmt::format("result:        {}: {}", report.status == "skip" ? "SKIP" : "FAIL",
                                report.reason));
  }
  return lines;
}

Result<ProgramRun> run_program(const std::filesystem::path& binary, const ProgramOptions& options) {
  std::vector<std::string> argv = {binary.string()};
  argv.insert(argv.end(), options.arguments.begin(), options.arguments.end());
  argv.emplace_back("--json");
  if (options.steps) {
    argv.emplace_back("--steps");
    argv.push_back(std::to_string(*options.steps));
  }
  if (options.seed) {
    argv.emplace_back("--seed");
    argv.push_back(std::to_string(*options.seed));
  }
  if (options.cpu_only) argv.emplace_back("--cpu-only");
  auto output = sys::run_process(argv, {.env = options.environment, .timeout = options.timeout});
  if (!output) return std::move(output).error();
  const auto tail = last_lines(output->err, kStderrTailLines);
  const auto with_tail = [&](Error error) {
    if (!tail.empty()) error.because(fmt::format("its last lines on stderr:\n{}", tail));
    return error;
  };
  if (output->timed_out) {
    return with_tail(Error::failed(
        fmt::format("the smoke program did not finish in {} s",
                    std::chrono::duration_cast<std::chrono::seconds>(options.timeout).count())));
  }
  const int code = output->exit_code;
  if (code != kExitPass && code != kExitFail && code != kExitSkip) {
    return with_tail(Error::failed(
        code > 128 ? fmt::format("the smoke program was killed by signal {}", code - 128)
                   : fmt::format("the smoke program exited with status {}", code)));
  }
  auto report = parse_report(output->out);
  if (!report) return with_tail(std::move(report).error());
  return ProgramRun{.exit_code = code,
                    .report = *std::move(report),
                    .json = std::string(text::trim(output->out)),
                    .progress = std::move(output->err)};
}

}  // namespace envkit::smoke
