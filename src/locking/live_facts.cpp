#include "envkit/locking/live_facts.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/locking/inputs.hpp"
#include "envkit/locking/python_closure.hpp"
#include "envkit/net/fetch.hpp"
#include "envkit/net/transport.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::locking {

namespace fs = std::filesystem;

namespace {

bool covers(const recipes::LiveState& state, const std::vector<std::string>& frameworks) {
  return std::all_of(frameworks.begin(), frameworks.end(),
                     [&](const std::string& f) { return state.covers(f); });
}

bool fresh(const recipes::LiveState& state, const LiveFactsPolicy& policy) {
  const auto age = policy.now - state.read_at;
  return age >= 0 && age < policy.ttl.count();
}

// The frameworks a new read covers: those asked now and those the overlay had, so that
// two projects sharing a cache do not take turns reading the index.
std::vector<std::string> united(std::vector<std::string> asked,
                                const std::optional<recipes::LiveState>& previous) {
  if (previous) asked.insert(asked.end(), previous->frameworks.begin(), previous->frameworks.end());
  std::sort(asked.begin(), asked.end());
  asked.erase(std::unique(asked.begin(), asked.end()), asked.end());
  return asked;
}

void lay_over(recipes::Database& database, const fs::path& overlay, const recipes::LiveState& state,
              LiveFacts& out) {
  database.add_layer(recipes::live_layer(overlay, state));
  for (const auto& problem : state.problems)
    out.warnings.push_back(fmt::format("{}: {}", state.index_url, problem));
  out.state = state;
}

// A request for a file that never changes: a wheel's PEP 658 metadata, a byte range of a
// wheel (the importers read METADATA out of wheels that way).
bool immutable(const std::string& url, const std::vector<std::string>& headers) {
  return url.ends_with(".metadata") ||
         std::any_of(headers.begin(), headers.end(),
                     [](const std::string& h) { return h.starts_with("Range:"); });
}

}  // namespace

std::vector<std::string> live_frameworks(const LockInputs& inputs) {
  std::vector<std::string> frameworks;
  if (const auto& framework = inputs.manifest.framework) {
    for (const auto known : recipes::kLiveFrameworks) {
      if (framework->name == known) frameworks.emplace_back(known);
    }
  }
  return frameworks;
}

Result<LiveFacts> add_live_facts(recipes::Database& database, const LiveFactsRequest& request) {
  LiveFacts out;
  if (env::get(env::kNoLiveIndex) == "1") return out;
  const auto overlay = recipes::live_overlay_dir(request.cache_root, request.index_url);
  auto cached = recipes::read_live_state(overlay);
  if (!cached) {
    out.warnings.push_back(cached.error().message());
    cached = std::optional<recipes::LiveState>{};
  }
  const auto& previous = *cached;
  const auto& policy = request.policy;
  const bool usable = previous && covers(*previous, request.frameworks);
  if (policy.offline || (usable && fresh(*previous, policy) && !policy.refresh)) {
    if (previous) {
      lay_over(database, overlay, *previous, out);
    } else {
      out.warnings.push_back(fmt::format(
          "offline: no facts read from {} are cached; the recipe database envkit was built with "
          "answers alone (its newest releases may not be today's)",
          url::redacted(request.index_url)));
    }
    return out;
  }
  recipes::PypiImportOptions options{.index_url = request.index_url,
                                     .fetch = request.fetch,
                                     .origin_of = request.origin_of,
                                     .known_release = {}};
  auto imported = recipes::import_live(database, options, united(request.frameworks, previous));
  Result<recipes::LiveState> written =
      imported ? recipes::write_live_overlay(overlay, *std::move(imported), policy.now)
               : Result<recipes::LiveState>(imported.error());
  if (!written) {
    const auto kept = previous ? fmt::format("the facts read on {} are used", previous->read_date())
                               : std::string(
                                     "the recipe database envkit was built with answers "
                                     "alone");
    std::vector<std::string> why = {written.error().headline()};
    why.insert(why.end(), written.error().causes().begin(), written.error().causes().end());
    out.warnings.push_back(fmt::format("cannot read today's releases from {} ({}); {}",
                                       url::redacted(request.index_url), text::join(why, ": "),
                                       kept));
    if (previous) lay_over(database, overlay, *previous, out);
    return out;
  }
  out.read_now = true;
  lay_over(database, overlay, *written, out);
  return out;
}

Result<std::vector<solve::UnavailableBuild>> releases_not_served(const recipes::Database& database,
                                                                 const LockInputs& inputs,
                                                                 const recipes::LiveState& state) {
  std::vector<solve::UnavailableBuild> unavailable;
  const auto& framework = inputs.manifest.framework;
  if (!framework || effective_indexes(inputs).size() != 1 ||
      !state.releases.contains(framework->name) || !database.contains(framework->name))
    return unavailable;
  const auto& served = state.releases.at(framework->name);
  auto recipe = database.facts(framework->name);
  if (!recipe) return std::move(recipe).error();
  for (const auto& version : (*recipe)->versions) {
    const bool on_index = std::any_of(served.begin(), served.end(), [&](const std::string& s) {
      const auto parsed = specs::Version::parse(s);
      return parsed && *parsed == version.version;
    });
    if (on_index) continue;
    unavailable.push_back({.package = framework->name,
                           .version = version.version.original(),
                           .build = {},
                           .reason = fmt::format("the index {} serves no {} {}", state.index_url,
                                                 framework->name, version.version.original()),
                           .hint = {}});
  }
  return unavailable;
}

recipes::FetchIndexPage index_fetch(std::optional<std::string> mirror,
                                    std::optional<fs::path> files_cache) {
  return [mirror = std::move(mirror), files_cache = std::move(files_cache)](
             const std::string& url,
             const std::vector<std::string>& headers) -> Result<recipes::IndexResponse> {
    std::optional<fs::path> kept;
    if (files_cache && immutable(url, headers)) {
      kept = *files_cache / core::sha256_hex(url + "\n" + text::join(headers, "\n"));
      // Kept as "<status>\n<body>": a range a server answered whole (200) stays whole.
      if (auto text = sys::read_file(*kept); text && text->find('\n') != std::string::npos) {
        const auto newline = text->find('\n');
        return recipes::IndexResponse{text->starts_with("206") ? 206 : 200, "", url,
                                      text->substr(newline + 1)};
      }
    }
    const auto asked = mirror ? net::mirror_url(*mirror, url) : url;
    auto response = net::fetch(asked, {.headers = headers});
    if (!response) return std::move(response).error();
    if (kept && (response->status == 200 || response->status == 206)) {
      std::error_code ec;
      fs::create_directories(kept->parent_path(), ec);
      // A cache: best effort.
      (void)sys::write_file_atomic(*kept, fmt::format("{}\n{}", response->status, response->body));
    }
    return recipes::IndexResponse{response->status, response->content_type, response->url,
                                  std::move(response->body)};
  };
}

}  // namespace envkit::locking
