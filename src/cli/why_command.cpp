// `envkit why PACKAGE`: the chain of requirements and machine facts that chose
// a package's version.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "envkit/core/text.hpp"
#include "envkit/specs/package_name.hpp"
#include "locking.hpp"

namespace envkit::cli {

namespace {

struct WhyOptions {
  std::string package;
  std::vector<std::string> platforms;
  IndexFlags index;
};

std::string chosen_text(const solve::Choice& choice) {
  auto text = fmt::format("{} {}", choice.name, choice.version.original());
  if (!choice.build.empty()) text += fmt::format(" ({})", choice.build);
  return text;
}

// The lock on disk, when it disagrees with what solving gives now.
std::optional<std::string> lock_disagreement(const Context& context, specs::Platform platform,
                                             const solve::Choice& choice) {
  auto lockfile = lock::load(context.options.directory / lock::kFileName);
  if (!lockfile) return std::nullopt;
  for (const auto& locked : lockfile->platforms) {
    if (locked.platform != platform) continue;
    for (const auto& package : locked.packages) {
      if (package.name == choice.name && (package.version.original() != choice.version.original() ||
                                          package.build != choice.build)) {
        return fmt::format("envkit.lock has {} {} on {}; run `envkit lock` to update it",
                           package.name, package.version.original(), specs::to_string(platform));
      }
    }
  }
  return std::nullopt;
}

int run_why(Context& context, const WhyOptions& options) {
  auto platforms = parse_platform_flags(options.platforms);
  if (!platforms) return report(context, platforms.error());
  auto project = open_project(context, *platforms, options.index);
  if (!project) return report(context, project.error());
  const auto& database = project->database;
  const auto& inputs = project->inputs;
  for (const auto& warning : inputs.warnings)
    context.console.detail("warning: " + warning);
  // As `envkit lock` decides, closure included: the framework builds the
  // indexes serve, the CUDA the wheels pin. The lock on disk lends its closures.
  auto existing = locking::read_lock(context.options.directory / lock::kFileName);
  if (!existing) return report(context, existing.error());
  auto attempt = locking::solve_lock(database, inputs, *existing ? &**existing : nullptr,
                                     closure_resolver(context, inputs));
  if (!attempt) return report(context, attempt.error());
  if (attempt->failure) {
    return report_unsolvable(context, attempt->failure->first, attempt->failure->second);
  }
  const auto& solved = attempt->solved;
  const auto name = specs::known_package(options.package)
                        .value_or(specs::canonical_package_name(options.package));
  nlohmann::json per_platform = nlohmann::json::array();
  const solve::Choice* first = nullptr;
  for (const auto& [platform, solution] : solved->solutions) {
    const auto* choice = solution.find(name);
    if (choice == nullptr) continue;
    if (first == nullptr) first = choice;
    std::string text = fmt::format("{} on {}", chosen_text(*choice), specs::to_string(platform));
    if (choice->external) text += fmt::format(", provided by the machine ({})", *choice->external);
    text += ", because:";
    for (const auto& line : choice->because)
      text += "\n  " + line;
    context.console.info(text);
    if (const auto disagreement = lock_disagreement(context, platform, *choice)) {
      context.console.warn(*disagreement);
    }
    per_platform.push_back({{"platform", specs::to_string(platform)},
                            {"version", choice->version.original()},
                            {"build", choice->build},
                            {"because", choice->because}});
  }
  if (first == nullptr) {
    std::vector<std::string> names;
    for (const auto& package : solved->solutions.begin()->second.packages)
      names.push_back(package.name);
    return report(context,
                  Error::failed(fmt::format("`{}` is not part of the environment", name))
                      .hint(fmt::format("the environment has {}", text::join(names, ", "))));
  }
  if (context.options.json) {
    std::cout << nlohmann::json{{"package", first->name},
                                {"version", first->version.original()},
                                {"because", first->because},
                                {"platforms", per_platform}}
                     .dump()
              << '\n';
  }
  return 0;
}

}  // namespace

void register_why(CLI::App& root, Commands& out) {
  auto options = std::make_shared<WhyOptions>();
  auto* command = root.add_subcommand(
      "why", "Explain why a package has its version: the requirements and machine facts behind it");
  command->add_option("PACKAGE", options->package, "A package of the environment, e.g. cuda")
      ->required();
  command
      ->add_option("--platform", options->platforms,
                   "Explain for this platform (repeatable; default: the manifest's platforms)")
      ->option_text("P");
  add_index_flags(*command, options->index);
  out.push_back({command, [options](Context& context) { return run_why(context, *options); }});
}

}  // namespace envkit::cli
