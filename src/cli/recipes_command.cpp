// `envkit recipes ...`: browse, check and refresh the recipe database.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/recipes/check.hpp"
#include "envkit/recipes/database.hpp"
#include "envkit/recipes/live_index.hpp"
#include "envkit/specs/package_name.hpp"
#include "locking.hpp"
#include "recipes_import.hpp"
#include "settings.hpp"

namespace envkit::cli {

namespace {

using nlohmann::json;
using recipes::Database;

// `PyTorch` -> `torch`; an unknown name stays as written so the error names it.
std::string package_name(const std::string& written) {
  return specs::known_package(written).value_or(written);
}

Result<Database> open_database(const Context& context) {
  return Database::open(recipes::default_database_dir(context.options.recipes));
}

// The index's overlay for every framework laid over `db`: the index `--index` names, else
// the configured index-url, else PyPI; read now (`refresh`) or only as cached.
Result<locking::LiveFacts> lay_every_framework(const Context& context, Database& db,
                                               const std::optional<std::string>& index_flag,
                                               IndexFlags flags) {
  auto settings = load_settings(context);
  if (!settings) return std::move(settings).error();
  const auto index =
      index_flag.value_or(settings->index_url.value.value_or(std::string(recipes::kPypiIndex)));
  return lay_index_over(
      context, db,
      {.index_url = index,
       .mirror = download_mirror(*settings),
       .frameworks = std::vector<std::string>(std::begin(recipes::kLiveFrameworks),
                                              std::end(recipes::kLiveFrameworks)),
       .flags = flags});
}

// The database with the index's overlay as cached laid over it (never read here): what
// `envkit lock` answers from. `--recipes` alone shows the database as built.
Result<Database> open_browsed(const Context& context) {
  auto db = open_database(context);
  if (!db || context.options.recipes) return db;
  auto live = lay_every_framework(context, *db, std::nullopt, {.offline = true, .refresh = false});
  if (!live) return std::move(live).error();
  if (live->state) {
    context.console.detail(fmt::format("with the releases read from {} on {}",
                                       live->state->index_url, live->state->read_date()));
  }
  return db;
}

json build_json(const recipes::RecipeVersion& version, const recipes::Build& build) {
  json requires_ = json::object();
  for (const auto& [package, spec] : build.requires_)
    requires_[package] = spec.to_string();
  json only_on = json::object();
  for (const auto& [package, platforms] : build.requires_only_on) {
    json list = json::array();
    for (auto p : platforms)
      list.push_back(specs::to_string(p));
    only_on[package] = list;
  }
  json system = json::object();
  const auto drivers = [](const auto& map) {
    json out = json::object();
    for (const auto& [platform, driver] : map)
      out[specs::to_string(platform)] = driver.original();
    return out;
  };
  if (!build.min_driver.empty()) system["min_driver"] = drivers(build.min_driver);
  if (!build.min_driver_compat.empty())
    system["min_driver_compat"] = drivers(build.min_driver_compat);
  if (!build.cuda_arch.empty()) {
    json arch = json::array();
    for (const auto& cc : build.cuda_arch)
      arch.push_back(cc.to_string());
    system["cuda_arch"] = arch;
  }
  json platforms = json::array();
  for (auto p : build.platforms)
    platforms.push_back(specs::to_string(p));
  system["platforms"] = platforms;
  json artifacts = json::array();
  for (const auto& a : build.artifacts) {
    json artifact = {{"platform", specs::to_string(a.platform)},
                     {"component", a.component},
                     {"kind", recipes::to_string(a.kind)},
                     {"format", a.format},
                     {"layout", recipes::to_string(a.layout)},
                     {"url", a.url},
                     {"sha256", a.sha256},
                     {"size", a.size ? json(*a.size) : json()}};
    if (!a.wheel_root.empty()) artifact["wheel_root"] = a.wheel_root;
    if (a.build_system) artifact["build_system"] = recipes::to_string(*a.build_system);
    if (!a.components.empty()) artifact["components"] = a.components;
    if (!a.also_at.empty()) artifact["also_at"] = a.also_at;
    if (!a.patches.empty()) {
      json patches = json::array();
      for (const auto& patch : a.patches) {
        patches.push_back({{"url", patch.url},
                           {"sha256", patch.sha256},
                           {"size", patch.size ? json(*patch.size) : json()}});
      }
      artifact["patches"] = patches;
    }
    artifacts.push_back(artifact);
  }
  json out = {{"version", version.version.original()},
              {"requires", requires_},
              {"system", system},
              {"artifacts", artifacts}};
  if (!only_on.empty()) out["requires_only_on"] = only_on;
  if (!build.id.empty()) out["build"] = build.id;
  if (!build.tested.empty()) out["tested"] = build.tested;
  if (!version.components.empty()) {
    json components = json::object();
    for (const auto& c : version.components)
      components[c.name] = c.version;
    out["components"] = components;
  }
  return out;
}

std::string describe_build(const recipes::RecipeVersion& version, const recipes::Build& build) {
  std::string out = fmt::format("{}{}\n", version.version.original(),
                                build.id.empty() ? "" : " [" + build.id + "]");
  for (const auto& [package, spec] : build.requires_) {
    std::string only_on;
    if (const auto it = build.requires_only_on.find(package); it != build.requires_only_on.end()) {
      std::vector<std::string> platforms;
      for (auto p : it->second)
        platforms.emplace_back(specs::to_string(p));
      only_on = fmt::format(" on {} only", text::join(platforms, ", "));
    }
    out += fmt::format("  requires {} {}{}\n", package, spec.empty() ? "(any)" : spec.to_string(),
                       only_on);
  }
  for (const auto& [package, tested] : build.tested) {
    out += fmt::format("  tested with {} {}\n", package, tested);
  }
  for (const auto& [platform, driver] : build.min_driver) {
    out += fmt::format("  driver >= {} on {}\n", driver.original(), specs::to_string(platform));
  }
  for (const auto& [platform, driver] : build.min_driver_compat) {
    out += fmt::format("  driver >= {} on {} (minor-version compatibility)\n", driver.original(),
                       specs::to_string(platform));
  }
  if (!build.cuda_arch.empty()) {
    std::vector<std::string> arch;
    for (const auto& cc : build.cuda_arch)
      arch.push_back(cc.to_string());
    out += fmt::format("  compute capability {}\n", text::join(arch, ", "));
  }
  std::vector<std::string> platforms;
  for (auto p : build.platforms)
    platforms.emplace_back(specs::to_string(p));
  out += fmt::format("  platforms {}\n", text::join(platforms, ", "));
  for (const auto& a : build.artifacts) {
    out += fmt::format("  {} {} {} {}{}\n", specs::to_string(a.platform), a.component,
                       recipes::to_string(a.kind), a.url,
                       a.size ? fmt::format(" ({} bytes)", *a.size) : "");
    for (const auto& other : a.also_at)
      out += fmt::format("    also at {}\n", other);
    if (a.kind != recipes::ArtifactKind::runfile) continue;
    // What the unpacker needs of a runfile: its era, what it places, the patches after it.
    out += fmt::format("    layout {}\n", recipes::to_string(a.layout));
    if (!a.components.empty())
      out += fmt::format("    components {}\n", text::join(a.components, ", "));
    for (std::size_t i = 0; i < a.patches.size(); ++i) {
      out +=
          fmt::format("    patch {} {} sha256 {}{}\n", i + 1, a.patches[i].url, a.patches[i].sha256,
                      a.patches[i].size ? fmt::format(" ({} bytes)", *a.patches[i].size) : "");
    }
  }
  return out;
}

int run_list(Context& context, const std::optional<std::string>& name) {
  auto db = open_browsed(context);
  if (!db) return report(context, db.error());
  std::vector<std::string> names = db->names();
  if (name) names = {package_name(*name)};
  json packages = json::array();
  for (const auto& package : names) {
    auto recipe = db->facts(package);
    if (!recipe) return report(context, recipe.error());
    std::vector<std::string> versions;
    for (const auto& v : (*recipe)->versions)
      versions.push_back(v.version.original());
    packages.push_back({{"name", package}, {"versions", versions}});
    if (!context.options.json) {
      fmt::print("{} ({} versions): {}\n", package, versions.size(), text::join(versions, " "));
    }
  }
  if (context.options.json) std::cout << json{{"packages", packages}}.dump() << '\n';
  return 0;
}

int run_show(Context& context, const std::string& name, const std::optional<std::string>& version) {
  auto db = open_browsed(context);
  if (!db) return report(context, db.error());
  const std::string package = package_name(name);
  std::optional<specs::Version> wanted;
  if (version) {
    auto parsed = specs::Version::parse(*version);
    if (!parsed) return report(context, parsed.error());
    wanted = *std::move(parsed);
  }
  auto recipe = wanted ? db->load_version(package, *wanted) : db->load_full(package);
  if (!recipe) return report(context, recipe.error());
  json versions = json::array();
  for (const auto& v : recipe->versions) {
    for (const auto& build : v.builds) {
      versions.push_back(build_json(v, build));
      if (!context.options.json) fmt::print("{} {}", package, describe_build(v, build));
    }
  }
  if (context.options.json)
    std::cout << json{{"name", package}, {"versions", versions}}.dump() << '\n';
  return 0;
}

int run_check(Context& context) {
  auto db = open_database(context);
  if (!db) return report(context, db.error());
  std::vector<recipes::Problem> warnings;
  auto problems = recipes::check_database(*db, &warnings);
  if (!problems) return report(context, problems.error());
  json warned = json::array();
  for (const auto& w : warnings) {
    warned.push_back({{"where", w.where}, {"message", w.message}});
    if (!context.options.json) fmt::print(stderr, "warning: {}: {}\n", w.where, w.message);
  }
  json list = json::array();
  for (const auto& p : *problems) {
    list.push_back({{"where", p.where}, {"message", p.message}});
    if (!context.options.json) fmt::print(stderr, "problem: {}: {}\n", p.where, p.message);
  }
  if (!problems->empty()) {
    const Error error = Error::failed(fmt::format("the recipe database {} has {} problem(s)",
                                                  db->dir().string(), problems->size()));
    if (!context.options.json) return report(context, error);
    // One JSON object on stdout, the problems and the error together.
    context.console.error(error);
    std::cout << json{{"problems", list},
                      {"warnings", warned},
                      {"error", error.headline()},
                      {"exit_code", error.exit_code()}}
                     .dump()
              << '\n';
    return error.exit_code();
  }
  if (context.options.json)
    std::cout << json{{"problems", list}, {"warnings", warned}}.dump() << '\n';
  context.console.info(
      fmt::format("{}: {} packages, consistent", db->dir().string(), db->names().size()));
  return 0;
}

// `envkit recipes update`: reads today's releases from the index now, for every framework,
// and says what the index adds to the database.
int run_update(Context& context, const std::optional<std::string>& index_flag) {
  auto db = open_database(context);
  if (!db) return report(context, db.error());
  auto live = lay_every_framework(context, *db, index_flag, {.offline = false, .refresh = true});
  if (!live) return report(context, live.error());
  for (const auto& warning : live->warnings)
    context.console.warn(warning);
  if (!live->read_now || !live->state) {
    return report(context, Error::failed("cannot read today's releases from the package index")
                               .hint("the warnings above name the index and why"));
  }
  json added = json::object();
  for (const auto& name : db->names()) {
    auto facts = db->facts(name);
    if (!facts) return report(context, facts.error());
    std::vector<std::string> versions;
    for (const auto& version : (*facts)->versions) {
      if (db->layer_of(name, version.version) != nullptr)
        versions.push_back(version.version.original());
    }
    if (versions.empty()) continue;
    added[name] = versions;
    context.console.info(fmt::format("{}: {}", name, text::join(versions, ", ")));
  }
  for (const auto& note : live->state->notes)
    context.console.detail(note);
  context.console.info(fmt::format("read {} on {}: facts of the versions above come from it",
                                   live->state->index_url, live->state->read_date()));
  if (context.options.json) {
    std::cout << json{{"index", live->state->index_url},
                      {"read", live->state->read_date()},
                      {"versions", added},
                      {"notes", live->state->notes},
                      {"problems", live->state->problems}}
                     .dump()
              << '\n';
  }
  return 0;
}

}  // namespace

void register_recipes(CLI::App& root, Commands& out) {
  auto* recipes_cmd =
      root.add_subcommand("recipes", "Browse, check and refresh the recipe database");
  recipes_cmd->require_subcommand(1);
  out.push_back({recipes_cmd, nullptr});

  auto list_name = std::make_shared<std::optional<std::string>>();
  auto* list = recipes_cmd->add_subcommand("list", "List the packages and their versions");
  list->add_option("NAME", *list_name, "Only this package");
  out.push_back({list, [list_name](Context& c) { return run_list(c, *list_name); }});

  auto show_name = std::make_shared<std::string>();
  auto show_version = std::make_shared<std::optional<std::string>>();
  auto* show =
      recipes_cmd->add_subcommand("show", "Show a package's versions, requirements and artifacts");
  show->add_option("NAME", *show_name, "Package")->required();
  show->add_option("VERSION", *show_version, "Only this version");
  out.push_back({show, [show_name, show_version](Context& c) {
                   return run_show(c, *show_name, *show_version);
                 }});

  auto* check = recipes_cmd->add_subcommand("check", "Check the database is consistent");
  out.push_back({check, run_check});

  auto update_index = std::make_shared<std::optional<std::string>>();
  auto* update = recipes_cmd->add_subcommand(
      "update",
      "Read today's releases from the package index now (the live overlay every lock uses)");
  update
      ->add_option("--index", *update_index,
                   "Simple-API index URL (default: index-url, else https://pypi.org/simple)")
      ->option_text("URL");
  out.push_back({update, [update_index](Context& c) { return run_update(c, *update_index); }});

  register_recipes_import(*recipes_cmd, out);
}

}  // namespace envkit::cli
