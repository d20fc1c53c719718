#pragma once

// Helpers the recipes tests share: fixture files, looking builds up, an index in memory.

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/recipes/import_pypi.hpp"
#include "envkit/recipes/recipe.hpp"
#include "envkit/sys/fs.hpp"
#include "support/envkit_runner.hpp"

namespace envkit::test {

// The text of tests/data/recipes/<folder>/<name>.
inline std::string recipes_fixture(std::string_view folder, std::string_view name) {
  return sys::read_file(test_data_dir() / "recipes" / folder / name).value();
}

// The versions of `recipe`, as written, in its order.
inline std::vector<std::string> versions_of(const recipes::Recipe& recipe) {
  std::vector<std::string> versions;
  for (const auto& version : recipe.versions)
    versions.push_back(version.version.original());
  return versions;
}

// Build `id` of `version` of `recipe`; the test fails when there is none.
inline const recipes::Build& build_of(const recipes::Recipe& recipe, std::string_view version,
                                      std::string_view id) {
  INFO(recipe.name << " " << version << " " << id);
  const auto* entry = recipe.find(specs::Version::parse(version).value());
  REQUIRE(entry != nullptr);
  const auto it = std::find_if(entry->builds.begin(), entry->builds.end(),
                               [&](const recipes::Build& build) { return build.id == id; });
  REQUIRE(it != entry->builds.end());
  return *it;
}

// The index URL the PyPI importer tests read from, with `path` appended.
inline std::string fake_index_url(std::string_view path = "") {
  std::string url = "https://index.example.test/simple/";
  url.append(path);
  return url;
}

// A PEP 691 project page listing the wheels `filenames` (under files.example.test, each
// with a sha256); those in `yanked` are marked yanked.
inline std::string json_page(const std::vector<std::string>& filenames,
                             const std::vector<std::string>& yanked = {}) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& name : filenames) {
    files.push_back({{"filename", name},
                     {"url", "https://files.example.test/" + name},
                     {"hashes", {{"sha256", std::string(64, 'a')}}},
                     {"yanked", std::find(yanked.begin(), yanked.end(), name) != yanked.end()}});
  }
  return nlohmann::json{{"meta", {{"api-version", "1.1"}}}, {"files", files}}.dump();
}

// An index in memory: responses by URL, 404 for the rest; remembers what was asked, and with
// which headers.
struct FakeIndex {
  std::map<std::string, recipes::IndexResponse> pages;
  std::vector<std::string> asked;
  std::vector<std::vector<std::string>> headers;
  // Answer `Range: bytes=A-B` / `bytes=-N` with 206 and those bytes, as PyPI's file host
  // does; false: the whole file (200), as a server that ignores ranges.
  bool ranges = false;

  void add_url(std::string url, std::string content_type, std::string body) {
    pages[std::move(url)] = recipes::IndexResponse{
        .status = 200, .content_type = std::move(content_type), .body = std::move(body)};
  }
  // The project page of `project` on fake_index_url().
  void add(std::string_view project, std::string content_type, std::string body) {
    add_url(fake_index_url(project) + "/", std::move(content_type), std::move(body));
  }

  static recipes::IndexResponse slice(recipes::IndexResponse whole, std::string_view header) {
    const auto range = header.substr(std::string_view("Range: bytes=").size());
    const auto dash = range.find('-');
    const auto size = whole.body.size();
    std::size_t first = 0;
    std::size_t last = size - 1;
    if (dash == 0) {
      first = size - std::min<std::size_t>(std::stoull(std::string(range.substr(1))), size);
    } else {
      first = std::stoull(std::string(range.substr(0, dash)));
      last = std::min<std::size_t>(std::stoull(std::string(range.substr(dash + 1))), size - 1);
    }
    whole.status = 206;
    whole.body = first > last ? std::string() : whole.body.substr(first, last - first + 1);
    return whole;
  }

  recipes::FetchIndexPage fetcher() {
    return [this](const std::string& url,
                  const std::vector<std::string>& sent) -> Result<recipes::IndexResponse> {
      asked.push_back(url);
      headers.push_back(sent);
      if (auto it = pages.find(url); it != pages.end()) {
        for (const auto& header : sent) {
          if (ranges && header.starts_with("Range: bytes=")) return slice(it->second, header);
        }
        return it->second;
      }
      return recipes::IndexResponse{
          .status = 404, .content_type = "text/plain", .body = "Not Found"};
    };
  }
};

}  // namespace envkit::test
