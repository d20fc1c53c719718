// `envkit config list`: the effective settings and where each came from
// (docs/config.md).
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "settings.hpp"

namespace envkit::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// One line of the listing; `value` is what a script reads (a list for mirrors).
struct Row {
  const config::Key* key;
  json value;
  std::string text;  // the value for people
  std::string source;
};

template <class T>
Row row(const config::Key& key, const config::Sourced<T>& setting, json value, std::string text) {
  return {&key, std::move(value), std::move(text), setting.source};
}

// What each setting is in effect, defaults resolved the way the commands
// resolve them (the cache folder, pip's index). URLs are shown redacted:
// a mirror's credentials belong in ~/.netrc, but a URL may carry them.
std::vector<Row> rows_of(const config::Settings& settings) {
  std::vector<std::string> mirrors;
  for (const auto& mirror : settings.mirrors.value)
    mirrors.push_back(url::redacted(mirror));
  const auto cache = cache_dir_of(settings).string();
  const auto index = url::redacted(index_url_of(settings));
  const auto& link = settings.link_mode.value;
  const auto& packaging = settings.packaging.value;
  const bool compile = settings.compile_bytecode.value;
  return {
      row(config::kMirrors, settings.mirrors, mirrors,
          mirrors.empty() ? "(none)" : text::join(mirrors, " ")),
      row(config::kJobs, settings.jobs, settings.jobs.value, std::to_string(settings.jobs.value)),
      row(config::kCacheDir, settings.cache_dir, cache, cache),
      row(config::kIndexUrl, settings.index_url, index, index),
      row(config::kLinkMode, settings.link_mode, link, link),
      row(config::kPackaging, settings.packaging, packaging, packaging),
      row(config::kCompileBytecode, settings.compile_bytecode, compile, compile ? "true" : "false"),
      row(config::kIndexTtl, settings.index_ttl, settings.index_ttl.value,
          std::to_string(settings.index_ttl.value)),
  };
}

json files_json(const config::Files& files) {
  json out = json::array();
  for (const auto& [scope, path] :
       {std::pair{"user", files.user}, std::pair{"project", std::optional(files.project)}}) {
    if (!path) continue;
    std::error_code ignored;
    out.push_back(
        {{"scope", scope}, {"path", path->string()}, {"exists", fs::exists(*path, ignored)}});
  }
  return out;
}

int run_config_list(Context& context) {
  auto settings = load_settings(context);
  if (!settings) return report(context, settings.error());
  const auto files = config_files(context);
  const auto rows = rows_of(*settings);
  if (context.options.json) {
    json out = json::array();
    for (const auto& r : rows)
      out.push_back({{"name", r.key->name}, {"value", r.value}, {"source", r.source}});
    std::cout << json{{"settings", out}, {"files", files_json(files)}}.dump() << '\n';
    return 0;
  }
  for (const auto& file : files_json(files)) {
    context.console.info(fmt::format("{} config: {}{}", file.at("scope").get<std::string>(),
                                     file.at("path").get<std::string>(),
                                     file.at("exists").get<bool>() ? "" : " (none)"));
  }
  for (const auto& r : rows)
    std::cout << fmt::format("{:<10} {:<40} {}\n", r.key->name, r.text, r.source);
  return 0;
}

}  // namespace

void register_config(CLI::App& root, Commands& out) {
  auto* config = root.add_subcommand(
      "config", "envkit's settings: .envkit/config.yaml, ~/.config/envkit/config.yaml, ENVKIT_*");
  config->require_subcommand(1);
  out.push_back({config, nullptr});
  out.push_back(
      {config->add_subcommand("list", "Show each setting's value in effect and where it came from"),
       [](Context& context) { return run_config_list(context); }});
}

}  // namespace envkit::cli
