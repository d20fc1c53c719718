// `envkit init`: writes envkit.yaml for a project, with the framework given or
// inferred from the project's own pins, and this machine's GPU facts as comments.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "command.hpp"
#include "envkit/core/text.hpp"
#include "envkit/gpu/host_probe.hpp"
#include "envkit/manifest/manifest.hpp"
#include "envkit/project/pin.hpp"
#include "envkit/project/scan.hpp"
#include "envkit/specs/package_name.hpp"
#include "envkit/specs/platform.hpp"
#include "envkit/sys/fs.hpp"
#include "yaml_source.hpp"

namespace envkit::cli {

namespace {

namespace fs = std::filesystem;
using project::Pin;

struct InitOptions {
  std::optional<std::string> framework;
  std::optional<std::string> python;
  std::optional<std::string> cuda;
  bool force = false;
};

// Everything envkit.yaml will say, before it is text.
struct InitPlan {
  fs::path path;
  std::string name;
  Pin framework;
  std::map<std::string, Pin> requires_;  // `requires:` package -> constraint
  std::vector<std::string> python_requirements;
  std::vector<std::string> warnings;  // what the scan of the project passed over
  specs::Platform platform = specs::host_platform();
  gpu::HostFacts host;
};

// ------------------------------------------------------------------- flags

// A value given on the command line is "written" at the flag.
Pin flag_pin(std::string name, specs::VersionSpec spec, std::string_view flag,
             std::string_view written) {
  return {std::move(name), std::move(spec), SourceLocation{std::string(flag)},
          std::string(written)};
}

Error bad_flag(std::string_view flag, std::string_view value, const Error& cause) {
  Error error =
      Error::input(fmt::format("invalid `{}` value {}", flag, text::quoted(text::trim(value))));
  error.because(cause.message());
  for (const auto& hint : cause.hints()) {
    error.hint(hint);
  }
  return error;
}

// A version specifier as manifests write it: a bare `3.10` means `==3.10.*`.
Result<Pin> requirement_flag(std::string_view flag, std::string package, std::string_view value) {
  if (text::trim(value).empty()) {
    return Error::input(fmt::format("`{}` needs a version specifier", flag))
        .hint(fmt::format("e.g. `{} 3.10` or `{} \">=3.9,<3.12\"`", flag, flag));
  }
  auto spec = specs::VersionSpec::parse(value, specs::SpecSyntax::envkit);
  if (!spec) return bad_flag(flag, value, spec.error());
  return flag_pin(std::move(package), std::move(spec).value(), flag, text::trim(value));
}

// The manifest's framework syntax: `torch 2.1.*`, `tensorflow-gpu ==1.6.0`, `torch`.
Result<Pin> framework_flag(std::string_view value) {
  constexpr std::string_view flag = "--framework";
  const auto [name, spec_text] = manifest::split_framework(value);
  auto package = manifest::framework_name(name);
  if (!package) {
    return bad_flag(flag, value, package.error())
        .hint("write the framework, then its versions: `--framework \"torch 2.1.*\"`");
  }
  auto spec = specs::VersionSpec::parse(spec_text, specs::SpecSyntax::envkit);
  if (!spec) return bad_flag(flag, value, spec.error());
  return flag_pin(*std::move(package), std::move(spec).value(), flag, text::trim(value));
}

// ------------------------------------------------------------------ plan

// The folder's name, also for `-C .` and `-C dir/`.
std::string project_name(const fs::path& directory) {
  return fs::absolute(directory / manifest::kFileName)
      .lexically_normal()
      .parent_path()
      .filename()
      .string();
}

// The Python versions given with --python, else those the project states, if any.
Result<std::optional<Pin>> python_requirement(const project::ProjectScan& scan,
                                              const InitOptions& options) {
  if (!options.python) return project::infer_python(scan);
  auto python = requirement_flag("--python", "python", *options.python);
  if (!python) return std::move(python).error();
  return std::optional<Pin>(std::move(python).value());
}

// The CUDA versions given with --cuda, else those the project's conda packages fix, if any.
Result<std::optional<Pin>> cuda_requirement(const project::ProjectScan& scan,
                                            const InitOptions& options) {
  if (!options.cuda) return project::infer_cuda(scan);
  auto cuda = requirement_flag("--cuda", "cuda", *options.cuda);
  if (!cuda) return std::move(cuda).error();
  return std::optional<Pin>(std::move(cuda).value());
}

// `requires:`: Python and CUDA, each given or the project's.
Result<std::map<std::string, Pin>> requirements_of(const project::ProjectScan& scan,
                                                   const InitOptions& options) {
  std::map<std::string, Pin> requirements;
  auto python = python_requirement(scan, options);
  if (!python) return std::move(python).error();
  if (*python) requirements.emplace("python", std::move(**python));
  auto cuda = cuda_requirement(scan, options);
  if (!cuda) return std::move(cuda).error();
  if (*cuda) requirements.emplace("cuda", std::move(**cuda));
  return requirements;
}

Result<InitPlan> plan_init(const fs::path& directory, const InitOptions& options) {
  InitPlan plan;
  plan.path = (directory / manifest::kFileName).lexically_normal();
  plan.name = project_name(directory);
  // Given the framework, init needs no file of the project: a bad one is passed over.
  auto scan = project::scan(directory, {.skip_bad_files = options.framework.has_value()});
  if (!scan) return std::move(scan).error();
  plan.python_requirements = scan->python_requirements();
  plan.warnings = scan->warnings;

  auto framework =
      options.framework ? framework_flag(*options.framework) : project::infer_framework(*scan);
  if (!framework) return std::move(framework).error();
  plan.framework = std::move(framework).value();
  auto requirements = requirements_of(*scan, options);
  if (!requirements) return std::move(requirements).error();
  plan.requires_ = std::move(requirements).value();

  auto host = gpu::probe_host();
  if (!host) return std::move(host).error();
  plan.host = std::move(host).value();
  return plan;
}

// ----------------------------------------------------------------- render

// "pyproject.toml:9" for a file, "--framework" for a flag.
std::string source_text(const Pin& pin) {
  return SourceLocation{pin.source.file, pin.source.line, 0}.to_string();
}

std::string origin(const Pin& pin) {
  if (pin.source.line == 0) return fmt::format("given with {}", pin.source.file);
  return fmt::format("inferred from {} ({})", source_text(pin), text::quoted(pin.written));
}

std::string framework_text(const Pin& framework) {
  const auto spec = framework.spec.to_string();
  return spec.empty() ? framework.name : fmt::format("{} {}", framework.name, spec);
}

std::vector<std::string> host_lines(const gpu::HostFacts& host) {
  std::vector<std::string> lines;
  if (host.driver) {
    lines.push_back(fmt::format("NVIDIA driver {} ({})", host.driver->original(),
                                host.driver_source.to_string()));
  } else {
    lines.push_back(fmt::format("no NVIDIA driver found ({})", host.driver_source.to_string()));
  }
  if (host.driver_cuda) {
    lines.push_back(fmt::format("driver supports CUDA up to {} ({})", host.driver_cuda->original(),
                                host.driver_cuda_source.to_string()));
  }
  for (std::size_t i = 0; i < host.gpus.size(); ++i) {
    const auto& gpu = host.gpus[i];
    lines.push_back(fmt::format("GPU {}: {}compute capability {} ({})", i,
                                gpu.name ? *gpu.name + ", " : "",
                                gpu.compute_capability.to_string(), host.gpus_source.to_string()));
  }
  if (host.driver && host.gpus.empty()) {
    lines.push_back(fmt::format("no GPU found ({})", host.gpus_source.to_string()));
  }
  return lines;
}

// envkit.yaml as docs/manifest.md describes it: the same plan gives the same bytes.
std::string render(const InitPlan& plan) {
  std::string out = fmt::format(
      "# envkit.yaml for {}, written by `envkit init`. The keys: docs/manifest.md.\n", plan.name);
  out += fmt::format("# framework: {}\n", origin(plan.framework));
  for (const auto& [package, pin] : plan.requires_) {
    out += fmt::format("# requires.{}: {}\n", package, origin(pin));
  }
  out +=
      "#\n# This machine when `envkit init` ran (`envkit lock` looks again, or reads `system:`):\n";
  for (const auto& line : host_lines(plan.host)) {
    out += fmt::format("#   {}\n", line);
  }

  out += fmt::format("\nname: {}\n", yaml::scalar(plan.name));
  out += fmt::format("framework: {}\n", yaml::scalar(framework_text(plan.framework)));
  if (!plan.requires_.empty()) out += "requires:\n";
  for (const auto& [package, pin] : plan.requires_) {
    out += fmt::format("  {}: {}\n", package, yaml::scalar(pin.spec.to_string()));
  }
  out += fmt::format("platforms:\n  - {}\n", specs::to_string(plan.platform));
  if (!plan.python_requirements.empty()) {
    out += "# The project's other Python requirements:\npython-requirements:\n";
  }
  for (const auto& file : plan.python_requirements) {
    out += fmt::format("  - {}\n", yaml::scalar(file));
  }
  out += "# Training steps of the GPU smoke test (`envkit smoke`):\n# smoke:\n#   steps: 200\n";
  return out;
}

nlohmann::json to_json(const InitPlan& plan) {
  nlohmann::json constraints = nlohmann::json::object();
  for (const auto& [package, pin] : plan.requires_) {
    constraints[package] = pin.spec.to_string();
  }
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& gpu : plan.host.gpus) {
    gpus.push_back({{"name", gpu.name ? nlohmann::json(*gpu.name) : nlohmann::json()},
                    {"compute_capability", gpu.compute_capability.to_string()}});
  }
  const auto& host = plan.host;
  return {
      {"path", plan.path.string()},
      {"framework",
       {{"name", plan.framework.name},
        {"spec", plan.framework.spec.to_string()},
        {"source", source_text(plan.framework)}}},
      {"requires", constraints},
      {"python_requirements", plan.python_requirements},
      {"host",
       {{"driver", host.driver ? nlohmann::json(host.driver->original()) : nlohmann::json()},
        {"driver_source", host.driver_source.to_string()},
        {"gpus", gpus},
        {"gpus_source", host.gpus_source.to_string()}}},
  };
}

// ------------------------------------------------------------------- run

Result<InitPlan> init(const fs::path& directory, const InitOptions& options) {
  const fs::path path = directory / manifest::kFileName;
  std::error_code ignored;
  if (!options.force && fs::exists(path, ignored)) {
    return Error::failed(fmt::format("{} already exists", path.lexically_normal().string()))
        .hint("pass `--force` to overwrite it");
  }
  auto plan = plan_init(directory, options);
  if (!plan) return plan;
  const std::string text = render(*plan);
  // What init writes must be a manifest envkit reads; anything else is a bug here.
  if (auto check = manifest::parse(text, plan->path.string()); !check) {
    return Error::internal("`envkit init` composed a manifest it cannot read")
        .because(check.error().headline());
  }
  if (auto written = sys::write_file_atomic(path, text); !written) return written.error();
  return plan;
}

int run_init(Context& context, const InitOptions& options) {
  auto plan = init(context.options.directory, options);
  if (!plan) return report(context, plan.error());
  for (const auto& warning : plan->warnings)
    context.console.warn(warning);
  for (const auto& note : plan->host.notes) {
    context.console.detail(note);
  }
  // CUDA read from a conda package of another name (`cudatoolkit=10.1`): say so.
  if (const auto cuda = plan->requires_.find("cuda");
      cuda != plan->requires_.end() && cuda->second.source.line > 0) {
    context.console.info(fmt::format("cuda {} from {} ({})", cuda->second.spec.to_string(),
                                     source_text(cuda->second),
                                     text::quoted(cuda->second.written)));
  }
  context.console.info(fmt::format("wrote {}: framework {}, {}", plan->path.string(),
                                   text::quoted(framework_text(plan->framework)),
                                   origin(plan->framework)));
  if (context.options.json) std::cout << to_json(*plan).dump() << '\n';
  return 0;
}

}  // namespace

void register_init(CLI::App& root, Commands& out) {
  auto options = std::make_shared<InitOptions>();
  auto* command = root.add_subcommand(
      "init",
      "Write envkit.yaml for the project: the framework (given, or inferred from its "
      "requirements.txt, pyproject.toml, setup.py, setup.cfg or conda environment) and this "
      "machine's GPU facts");
  command
      ->add_option("--framework", options->framework,
                   "Framework and versions, e.g. \"torch 2.1.*\" (default: the project's pin)")
      ->option_text("SPEC");
  command
      ->add_option("--python", options->python,
                   "Python versions, e.g. 3.10 (default: the project's requires-python)")
      ->option_text("SPEC");
  command
      ->add_option("--cuda", options->cuda,
                   "CUDA versions, e.g. 12.1 (default: the project's conda cudatoolkit, "
                   "cuda-version or pytorch-cuda pin, else any)")
      ->option_text("SPEC");
  command->add_flag("--force", options->force, "Overwrite an existing envkit.yaml");
  out.push_back({command, [options](Context& context) { return run_init(context, *options); }});
}

}  // namespace envkit::cli
