#include "locking.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/locking/external_check.hpp"
#include "envkit/locking/live_facts.hpp"
#include "envkit/locking/python_closure.hpp"
#include "envkit/net/reachability.hpp"
#include "envkit/net/registry_url.hpp"
#include "envkit/net/transport.hpp"
#include "envkit/python/interpreters.hpp"
#include "envkit/python/uv.hpp"
#include "envkit/store/cache.hpp"
#include "envkit/store/tool.hpp"
#include "prefix_option.hpp"
#include "settings.hpp"

namespace envkit::cli {

Result<std::vector<specs::Platform>> parse_platform_flags(const std::vector<std::string>& flags) {
  std::vector<specs::Platform> platforms;
  for (const auto& flag : flags) {
    auto platform = specs::parse_platform(flag);
    if (!platform) {
      return Error::input(fmt::format("invalid `--platform` value {}", text::quoted(flag)))
          .because(platform.error().message());
    }
    if (std::find(platforms.begin(), platforms.end(), *platform) == platforms.end()) {
      platforms.push_back(*platform);
    }
  }
  return platforms;
}

int report_unsolvable(const Context& context, specs::Platform platform,
                      const solve::Unsolvable& unsolvable) {
  context.console.explanation(unsolvable.summary, unsolvable.explanation, unsolvable.hints);
  if (context.options.json) {
    std::cout << nlohmann::json{{"error", "unsatisfiable"},
                                {"platform", specs::to_string(platform)},
                                {"explanation", unsolvable.explanation},
                                {"hints", unsolvable.hints}}
                     .dump()
              << '\n';
  }
  return 1;
}

namespace {

// $ENVKIT_UV when set, else the uv envkit keeps in its cache (downloaded once,
// sha256-verified), never whatever `uv` is on PATH.
Result<python::Uv> locking_uv(const Context& context, const LockInputs& inputs) {
  if (const auto given = env::get(env::kUv); given && !given->empty()) return python::find_uv();
  auto settings = load_settings(context);
  if (!settings) return std::move(settings).error();
  auto transfer = transport_options(settings->jobs.value, std::nullopt);
  if (!transfer) return std::move(transfer).error();
  if (auto authorized = authorize_registries(*transfer, settings->mirrors.value); !authorized)
    return std::move(authorized).error();
  net::Transport transport(*transfer);
  const store::Cache cache(cache_dir_of(*settings));
  const auto& release = store::pinned_uv();
  auto path =
      store::provide_tool(cache, release,
                          {.transport = &transport,
                           .mirrors = settings->mirrors.value,
                           .indexes = inputs.manifest.indexes,
                           .index_fetch = {},
                           .note = [&](const std::string& line) { context.console.detail(line); }});
  if (!path) return std::move(path).error();
  return python::Uv{.path = *path, .version = release.version};
}

}  // namespace

locking::ResolverFactory closure_resolver(const Context& context, const LockInputs& inputs) {
  return [&context, &inputs]() -> Result<locking::ClosureResolver> {
    auto uv = locking_uv(context, inputs);
    if (!uv) return std::move(uv).error();
    const auto& mirror = inputs.mirror;
    context.console.detail(
        fmt::format("resolving Python closures with uv {} ({}){}", uv->version, uv->path.string(),
                    mirror ? " through the mirror " + url::redacted(*mirror) : std::string()));
    return locking::resolver_with_uv(*std::move(uv), mirror);
  };
}

locking::MachineSources machine_sources(const Context& context, const config::Settings& settings,
                                        const IndexFlags& index) {
  locking::MachineSources sources;
  sources.mirrors = settings.mirrors.value;
  if (env::get(env::kAssumeReachable).value_or("") == "1") return sources;
  const net::ReachabilityOptions options{
      .cache_file = cache_dir_of(settings) / "net" / "reachability.json",
      .ttl = std::chrono::seconds(600),
      .refresh = index.refresh,
      .ask = !index.offline};
  // Each host is asked (or read from the kept answers) once per process.
  auto known = std::make_shared<std::map<std::string, net::HostReachability>>();
  sources.reach = [&context, options, known](const std::vector<std::string>& urls) {
    std::vector<std::string> unasked;
    for (const auto& url : urls) {
      if (!known->contains(net::reachability_host(url))) unasked.push_back(url);
    }
    for (auto& [host, answer] : net::check_reachability(unasked, options)) {
      if (!answer.reachable) {
        context.console.detail(fmt::format("{} is not reachable{}: {}", host,
                                           answer.cached ? " (as kept)" : "", answer.reason));
      }
      known->insert_or_assign(host, std::move(answer));
    }
    std::map<std::string, net::HostReachability> answers;
    for (const auto& url : urls) {
      const auto host = net::reachability_host(url);
      if (const auto it = known->find(host); it != known->end()) answers.insert(*it);
    }
    return answers;
  };
  sources.interpreter = [](const specs::Version& version) {
    return python::machine_interpreter(version);
  };
  sources.zlib = [] { return locking::machine_zlib(); };
  return sources;
}

void add_index_flags(CLI::App& command, IndexFlags& flags) {
  command.add_flag("--offline", flags.offline,
                   "Never ask the package index: today's releases as cached (or none)");
  command.add_flag("--refresh", flags.refresh,
                   "Read today's releases from the package index again, however fresh the cache");
}

Result<locking::LiveFacts> lay_index_over(const Context& context, recipes::Database& database,
                                          const IndexOverlay& overlay) {
  auto settings = load_settings(context);
  if (!settings) return std::move(settings).error();
  const auto cache = cache_dir_of(*settings);
  std::optional<std::string> mirror = overlay.mirror;
  std::function<std::string(const std::string&)> origin_of;
  if (mirror)
    origin_of = [mirror](const std::string& url) { return net::origin_url(*mirror, url); };
  const locking::LiveFactsRequest request{
      .cache_root = cache,
      .index_url = overlay.index_url,
      .frameworks = overlay.frameworks,
      .policy = {.offline = overlay.flags.offline,
                 .refresh = overlay.flags.refresh,
                 .ttl = std::chrono::seconds(settings->index_ttl.value),
                 .now = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count()},
      .fetch = locking::index_fetch(mirror, cache / "recipes" / "live" / "files"),
      .origin_of = std::move(origin_of)};
  auto live = locking::add_live_facts(database, request);
  if (!live) return std::move(live).error();
  if (live->read_now && live->state) {
    context.console.detail(fmt::format("read today's releases from {}", live->state->index_url));
  }
  return live;
}

std::optional<std::string> download_mirror(const config::Settings& settings) {
  // uv and the overlay read an index through a mirror of files; a registry holds blobs.
  for (const auto& mirror : settings.mirrors.value) {
    if (!net::is_registry_mirror(mirror)) return mirror;
  }
  return std::nullopt;
}

Result<Project> open_project(const Context& context, const std::vector<specs::Platform>& platforms,
                             const IndexFlags& index) {
  auto database = recipes::Database::open(recipes::default_database_dir(context.options.recipes));
  if (!database) return std::move(database).error();
  auto inputs =
      locking::gather_lock_inputs(context.options.directory, platforms, gpu::host_sources());
  if (!inputs) return std::move(inputs).error();
  auto settings = load_settings(context);
  if (!settings) return std::move(settings).error();
  // Parsed recipes are kept in the cache folder: most of a lock's time is reading YAML.
  database->use_cache(cache_dir_of(*settings));
  inputs->default_index = settings->index_url.value.value_or("");
  inputs->mirror = download_mirror(*settings);
  inputs->cache_root = cache_dir_of(*settings);
  Project project{.database = *std::move(database), .inputs = *std::move(inputs)};
  auto live = lay_index_over(context, project.database,
                             {.index_url = locking::effective_indexes(project.inputs).front(),
                              .mirror = project.inputs.mirror,
                              .frameworks = locking::live_frameworks(project.inputs),
                              .flags = index});
  if (!live) return std::move(live).error();
  for (auto& warning : live->warnings)
    project.inputs.warnings.push_back(std::move(warning));
  project.inputs.live_index = std::move(live->state);
  project.inputs.live_index_read_now = live->read_now;
  // Among what envkit.yaml allows, what this machine can obtain (docs/python.md#which-python).
  project.machine = machine_sources(context, *settings, index);
  // The index options of requirement files are asked the same way (python_closure.hpp).
  project.inputs.reach = project.machine.reach;
  auto notes = locking::prefer_obtainable(project.database, project.inputs, project.machine);
  if (!notes) return std::move(notes).error();
  project.inputs.notes = *std::move(notes);
  // `external: {cuda: ..., cudnn: ...}` against what this machine's trees hold.
  if (auto stacks = locking::check_external_stacks(project.database, project.inputs,
                                                   project::TreeSearch::from_host());
      !stacks)
    return std::move(stacks).error();
  return project;
}

}  // namespace envkit::cli
