#include "envkit/smoke/framework.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "envkit/core/text.hpp"
#include "envkit/smoke/build.hpp"
#include "envkit/sys/process.hpp"

namespace envkit::smoke {

namespace {

// Importing a framework and starting CUDA takes a while; 100 small steps do not.
constexpr auto kTimeout = std::chrono::minutes(10);

FrameworkResult made_here(std::string status, std::string reason) {
  const nlohmann::json object = {{"status", status}, {"reason", reason}};
  return {std::move(status), std::move(reason), object.dump()};
}

}  // namespace

FrameworkResult run_framework_smoke(const FrameworkOptions& options) {
  const auto python = options.prefix / "bin" / "python3";
  std::error_code ec;
  if (!std::filesystem::exists(python, ec)) {
    return made_here("skip", fmt::format("the prefix has no Python of its own ({} is absent), so "
                                         "there is no framework to test",
                                         python.string()));
  }
  std::vector<std::string> argv = {python.string(), options.script.string()};
  if (options.cpu_only) argv.emplace_back("--cpu");
  auto output = sys::run_process(argv, {.env = options.environment, .timeout = kTimeout});
  if (!output) return made_here("fail", output.error().headline());
  const auto line = std::string(text::trim(output->out));
  try {
    const auto object = nlohmann::json::parse(line);
    const auto status = object.value("status", "");
    if ((status == "pass" || status == "fail" || status == "skip") && !output->timed_out)
      return {status, object.value("reason", ""), object.dump()};
  } catch (const nlohmann::json::exception&) {
    // Reported below with the script's stderr.
  }
  const auto why = output->timed_out ? std::string("did not finish in 10 minutes")
                                     : fmt::format("exited {} without a result", output->exit_code);
  return made_here("fail",
                   fmt::format("{} {}: {}", python.string(), why, last_lines(output->err, 10)));
}

}  // namespace envkit::smoke
