// Parsers for what the host says about its NVIDIA driver: the override
// variables, /sys/module/nvidia/version, /proc/driver/nvidia/version and
// nvidia-smi's CSV query.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "envkit/core/text.hpp"
#include "envkit/gpu/host_probe.hpp"

namespace envkit::gpu {

namespace {

bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

// `550.54.15`: the driver's dotted number, as opposed to a date, a time or `x86_64`.
bool is_dotted_number(std::string_view word) {
  return word.find('.') != std::string_view::npos && is_digit(word.front()) &&
         is_digit(word.back()) && word.find("..") == std::string_view::npos &&
         std::all_of(word.begin(), word.end(), [](char c) { return is_digit(c) || c == '.'; });
}

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  for (auto word : text::split(line, ' ')) {
    word = text::trim(word);  // tabs
    if (!word.empty()) out.push_back(word);
  }
  return out;
}

Result<SmiGpu> parse_smi_line(std::string_view line) {
  const auto fields = text::split(line, ',');
  if (fields.size() < 3) {
    return Error::failed("expected `driver_version, compute_cap, name`");
  }
  auto driver = specs::Version::parse(text::trim(fields[0]));
  if (!driver) return std::move(driver).error();
  auto capability = specs::ComputeCapability::parse(text::trim(fields[1]));
  if (!capability) return std::move(capability).error();
  // The name is everything after the second comma, should a name ever hold one.
  const auto name_start = fields[0].size() + fields[1].size() + 2;
  return SmiGpu{std::move(driver).value(), *capability,
                std::string(text::trim(line.substr(name_start)))};
}

}  // namespace

Result<std::optional<specs::Version>> parse_driver_override(std::string_view text) {
  const auto value = text::trim(text);
  if (text::iequals(value, "none")) return std::optional<specs::Version>();
  auto version = specs::Version::parse(value);
  if (!version) {
    return Error::input(fmt::format("{} is not a driver version: {}",
                                    text::quoted(env::kOverrideDriver.name), text::quoted(value)))
        .because(version.error().message())
        .hint("set it to a version such as `550.54.15`, or to `none` for a machine without one");
  }
  return std::optional<specs::Version>(std::move(version).value());
}

Result<std::vector<specs::ComputeCapability>> parse_cuda_arch_override(std::string_view text) {
  std::vector<specs::ComputeCapability> capabilities;
  if (text::trim(text).empty()) return capabilities;
  for (auto item : text::split(text, ',')) {
    auto capability = specs::ComputeCapability::parse(item);
    if (!capability) {
      return Error::input(fmt::format("{} is not a list of compute capabilities: {}",
                                      text::quoted(env::kOverrideCudaArch.name),
                                      text::quoted(text::trim(text))))
          .because(capability.error().message())
          .hint("write them comma-separated, e.g. `8.0,9.0`");
    }
    capabilities.push_back(*capability);
  }
  return capabilities;
}

Result<specs::Version> parse_sys_driver_version(std::string_view text) {
  const auto value = text::trim(text);
  if (value.empty()) return Error::failed("empty");
  if (!is_dotted_number(value)) {
    return Error::failed(fmt::format("{} is not a driver version", text::quoted(value)));
  }
  return specs::Version::parse(value);
}

Result<specs::Version> parse_proc_driver_version(std::string_view text) {
  constexpr std::string_view kPrefix = "NVRM version:";
  for (auto line : text::split(text, '\n')) {
    line = text::trim(line);
    if (!line.starts_with(kPrefix)) continue;
    const auto found = words(line.substr(kPrefix.size()));
    const auto version = std::find_if(found.begin(), found.end(), is_dotted_number);
    if (version == found.end()) {
      return Error::failed(fmt::format("no driver version in {}", text::quoted(line)));
    }
    return specs::Version::parse(*version);
  }
  return Error::failed(fmt::format("no {} line", text::quoted(kPrefix)));
}

Result<std::vector<SmiGpu>> parse_nvidia_smi_query(std::string_view output) {
  std::vector<SmiGpu> gpus;
  int line_number = 0;
  for (auto line : text::split(output, '\n')) {
    ++line_number;
    line = text::trim(line);
    if (line.empty()) continue;
    auto gpu = parse_smi_line(line);
    if (!gpu) {
      return Error::failed(fmt::format("nvidia-smi line {} is not a GPU: {}", line_number,
                                       text::quoted(line)))
          .because(gpu.error().message());
    }
    gpus.push_back(std::move(gpu).value());
  }
  return gpus;
}

}  // namespace envkit::gpu
