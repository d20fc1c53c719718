#include "envkit/activation/activation.hpp"

#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"

namespace envkit::activation {
namespace {

namespace fs = std::filesystem;

std::string value(const Environment& environment, const std::string& name) {
  const auto found = environment.find(name);
  return found == environment.end() ? std::string("<unset>") : found->second;
}

Environment activated(const fs::path& prefix, const Environment& inherited,
                      const PrefixFacts& facts = {}) {
  return with_changes(inherited, assignments(prefix, facts, inherited));
}

TEST_CASE("prepend_list puts the prefix first and leaves no empty element", "[activation]") {
  const std::vector<std::string> first = {"/p/lib"};
  CHECK(prepend_list(first, std::nullopt) == "/p/lib");
  CHECK(prepend_list(first, "") == "/p/lib");  // not "/p/lib:", which means the current directory
  CHECK(prepend_list(first, "/a") == "/p/lib:/a");
  CHECK(prepend_list(first, "::/a::/b:") == "/p/lib:/a:/b");
  CHECK(prepend_list(first, ":") == "/p/lib");
}

TEST_CASE("prepend_list never duplicates a folder, however it is spelled", "[activation]") {
  const std::vector<std::string> first = {"/p/lib"};
  CHECK(prepend_list(first, "/a:/p/lib:/b") == "/p/lib:/a:/b");
  CHECK(prepend_list(first, "/p/lib/:/p/./lib:/a") == "/p/lib:/a");
  CHECK(prepend_list(first, "/a:/a") == "/p/lib:/a");
  const std::vector<std::string> drop = {"/old/lib"};
  CHECK(prepend_list(first, "/old/lib:/a", drop) == "/p/lib:/a");
}

TEST_CASE("activation sets every variable to the prefix as it was named", "[activation]") {
  const fs::path prefix = "/work/my project/.envkit/env";
  const auto env = activated(prefix, {{"PATH", "/usr/bin:/bin"}, {"HOME", "/home/u"}});
  CHECK(value(env, "PATH") == "/work/my project/.envkit/env/bin:/usr/bin:/bin");
  CHECK(value(env, "LD_LIBRARY_PATH") == "/work/my project/.envkit/env/lib");
  CHECK(value(env, "CPATH") == "/work/my project/.envkit/env/include");
  CHECK(value(env, "LIBRARY_PATH") == "/work/my project/.envkit/env/lib");
  CHECK(value(env, "PKG_CONFIG_PATH") == "/work/my project/.envkit/env/lib/pkgconfig");
  for (const auto* name : {"CUDA_HOME", "CUDA_PATH", "CUDAToolkit_ROOT", "ENVKIT_PREFIX"}) {
    INFO(name);
    CHECK(value(env, name) == prefix.string());
  }
  CHECK(value(env, "HOME") == "/home/u");  // everything else passes through
}

TEST_CASE("inherited lists keep their order behind the prefix", "[activation]") {
  const auto env = activated("/p", {{"PATH", "/usr/bin"},
                                    {"LD_LIBRARY_PATH", "/opt/a/lib::/opt/b/lib"},
                                    {"CPATH", ""},
                                    {"LIBRARY_PATH", "/usr/lib"},
                                    {"PKG_CONFIG_PATH", "/usr/share/pkgconfig"}});
  CHECK(value(env, "LD_LIBRARY_PATH") == "/p/lib:/opt/a/lib:/opt/b/lib");
  CHECK(value(env, "CPATH") == "/p/include");
  CHECK(value(env, "LIBRARY_PATH") == "/p/lib:/usr/lib");
  CHECK(value(env, "PKG_CONFIG_PATH") == "/p/lib/pkgconfig:/usr/share/pkgconfig");
}

TEST_CASE("activating twice changes nothing more", "[activation]") {
  const Environment inherited = {{"PATH", "/usr/bin"}, {"LD_LIBRARY_PATH", "/opt/lib"}};
  const auto once = activated("/p", inherited);
  CHECK(activated("/p", once) == once);
}

TEST_CASE("activating another prefix drops the first one's folders", "[activation]") {
  const auto first = activated("/one", {{"PATH", "/usr/bin"}, {"LD_LIBRARY_PATH", "/opt/lib"}});
  const auto second = activated("/two", first);
  CHECK(value(second, "PATH") == "/two/bin:/usr/bin");
  CHECK(value(second, "LD_LIBRARY_PATH") == "/two/lib:/opt/lib");
  CHECK(value(second, "CUDA_HOME") == "/two");
  CHECK(value(second, "ENVKIT_PREFIX") == "/two");
}

TEST_CASE("without PATH, the prefix goes in front of execvp's default", "[activation]") {
  CHECK(value(activated("/p", {}), "PATH") == "/p/bin:/bin:/usr/bin");
  CHECK(value(activated("/p", {{"PATH", ""}}), "PATH") == "/p/bin");
}

TEST_CASE("a prefix with its own Python unsets PYTHONHOME", "[activation]") {
  const Environment inherited = {{"PATH", "/usr/bin"}, {"PYTHONHOME", "/opt/python"}};
  CHECK(value(activated("/p", inherited, {.has_python = true}), "PYTHONHOME") == "<unset>");
  CHECK(value(activated("/p", inherited, {.has_python = false}), "PYTHONHOME") == "/opt/python");
}

TEST_CASE("probe finds the prefix's Python by bin/python3", "[activation]") {
  test::TempDir dir;
  CHECK_FALSE(probe(dir.path()).has_python);
  dir.write("bin/python3", "#!/bin/sh\n");
  CHECK(probe(dir.path()).has_python);
}

TEST_CASE("replaced values are listed, lists and equal values are not", "[activation]") {
  const Environment inherited = {{"CUDA_HOME", "/usr/local/cuda"},
                                 {"CUDA_PATH", "/p/"},
                                 {"PATH", "/usr/bin"},
                                 {"PYTHONHOME", "/opt/py"}};
  const auto notes = replaced_values(assignments("/p", {.has_python = true}, inherited), inherited);
  REQUIRE(notes.size() == 2);
  CHECK(notes[0] == "CUDA_HOME was `/usr/local/cuda`; the environment sets `/p`");
  CHECK(notes[1] == "PYTHONHOME (`/opt/py`) is unset in the environment");
}

TEST_CASE("list assignments are marked as lists, in a fixed order", "[activation]") {
  const auto changes = assignments("/p", {}, {});
  std::vector<std::string> names;
  std::vector<std::string> lists;
  for (const auto& change : changes) {
    names.push_back(change.name);
    if (change.list) lists.push_back(change.name);
  }
  CHECK(names == std::vector<std::string>{"ENVKIT_PREFIX", "PATH", "LD_LIBRARY_PATH", "CPATH",
                                          "LIBRARY_PATH", "PKG_CONFIG_PATH", "CUDA_HOME",
                                          "CUDA_PATH", "CUDAToolkit_ROOT"});
  CHECK(lists == std::vector<std::string>{"PATH", "LD_LIBRARY_PATH", "CPATH", "LIBRARY_PATH",
                                          "PKG_CONFIG_PATH"});
}

}  // namespace
}  // namespace envkit::activation
