#include "envkit/oci/layer_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>

#include "support/temp_dir.hpp"

namespace envkit::oci {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

store::PackageReceipt receipt(std::string name, std::string packaging,
                              std::vector<store::FileRecord> files = {}) {
  return {.name = std::move(name),
          .version = "1.0",
          .packaging = std::move(packaging),
          .files = std::move(files)};
}

store::FileRecord file_record(std::string path, std::string sha256, std::uint64_t size = 1) {
  return {.path = std::move(path), .size = size, .sha256 = std::move(sha256)};
}

std::vector<std::string> labels(const std::vector<PlannedLayer>& layers) {
  std::vector<std::string> out;
  for (const auto& layer : layers)
    out.push_back(layer.label);
  return out;
}

TEST_CASE("layer plan: the most stable packages first, the framework last", "[oci][plan]") {
  const TempDir dir;
  const PrefixPaths paths{.generation = dir.path(), .prefix = dir.path()};
  const std::vector<store::PackageReceipt> receipts = {receipt("torch", "pip"),
                                                       receipt("numpy", "pip"),
                                                       receipt("python", "archive"),
                                                       receipt("zlib", "source"),
                                                       receipt("cudnn", "archive"),
                                                       receipt("nvidia-cublas-cu12", "pip"),
                                                       receipt("nvidia-nccl-cu12", "pip"),
                                                       receipt("cuda", "archive"),
                                                       receipt("filelock", "pip")};
  auto layers = plan_package_layers(receipts, paths);
  REQUIRE(layers);
  CHECK(labels(*layers) == std::vector<std::string>{"cuda 1.0", "nvidia-cublas-cu12 1.0",
                                                    "nvidia-nccl-cu12 1.0", "cudnn 1.0", "zlib 1.0",
                                                    "python 1.0", "filelock 1.0", "numpy 1.0",
                                                    "torch 1.0"});
}

TEST_CASE(
    "layer plan: the CUDA stack's copy of a wheel's library is a link to it, so the image holds "
    "cuDNN once",
    "[oci][plan]") {
  const TempDir dir;
  const PrefixPaths paths{.generation = dir.path(), .prefix = dir.path()};
  const std::string cudnn_sha(64, 'c');
  const std::string wheel_path = "lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9";
  const std::vector<store::PackageReceipt> receipts = {
      receipt("nvidia-cudnn-cu12", "pip", {file_record(wheel_path, cudnn_sha, 800)}),
      receipt("cudnn", "wheel",
              {file_record("lib/libcudnn.so.9", cudnn_sha, 800),
               file_record("lib/libcudnn_adv.so.9", std::string(64, 'a'), 300)})};
  auto layers = plan_package_layers(receipts, paths);
  REQUIRE(layers);
  REQUIRE(labels(*layers) == std::vector<std::string>{"cudnn 1.0", "nvidia-cudnn-cu12 1.0"});
  std::map<std::string, TarEntry> stack;
  for (const auto& entry : layers->at(0).entries)
    stack[entry.path] = entry;
  const auto& view = stack.at("opt/envkit/lib/libcudnn.so.9");
  CHECK(view.type == TarEntry::Type::symlink);
  CHECK(view.link_target == "python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9");
  CHECK(layers->at(0).bytes == 300);  // only the file no wheel has
  CHECK(stack.at("opt/envkit/lib/libcudnn_adv.so.9").type == TarEntry::Type::file);
  const auto wheel =
      std::find_if(layers->at(1).entries.begin(), layers->at(1).entries.end(),
                   [&](const TarEntry& entry) { return entry.path == "opt/envkit/" + wheel_path; });
  REQUIRE(wheel != layers->at(1).entries.end());
  CHECK(wheel->type == TarEntry::Type::file);
}

TEST_CASE("layer plan: paths under opt/envkit with their folders, absolute links made relative",
          "[oci][plan]") {
  const TempDir dir;
  const PrefixPaths paths{.generation = dir.path() / ".env.generations" / "3",
                          .prefix = dir.path() / "env"};
  store::FileRecord link{.path = "lib/libz.so",
                         .type = archive::EntryType::symlink,
                         .link_target = (paths.generation / "lib" / "libz.so.1").string()};
  auto layers = plan_package_layers(
      {receipt("zlib", "source", {file_record("lib/libz.so.1", "aa"), link})}, paths);
  REQUIRE(layers);
  REQUIRE(layers->size() == 1);
  std::vector<std::string> names;
  for (const auto& entry : layers->front().entries) {
    names.push_back(entry.path);
    if (entry.path == "opt/envkit/lib/libz.so") CHECK(entry.link_target == "libz.so.1");
  }
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"opt", "opt/envkit", "opt/envkit/lib",
                                          "opt/envkit/lib/libz.so", "opt/envkit/lib/libz.so.1"});
  CHECK(image_link_target("bin/python", (paths.prefix / "lib" / "python3").string(), paths) ==
        "../lib/python3");
  CHECK(image_link_target("lib64", "/usr/lib64", paths) == "/usr/lib64");
}

TEST_CASE("layer plan: two packages with different bytes at one path are refused, naming both",
          "[oci][plan]") {
  const TempDir dir;
  const PrefixPaths paths{.generation = dir.path(), .prefix = dir.path()};
  auto refused =
      plan_package_layers({receipt("cuda", "archive", {file_record("lib/libx.so", "aa")}),
                           receipt("numpy", "pip", {file_record("lib/libx.so", "bb")})},
                          paths);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code() == ErrorCode::input);
  CHECK_THAT(refused.error().message(), Catch::Contains("lib/libx.so") &&
                                            Catch::Contains("cuda 1.0") &&
                                            Catch::Contains("numpy 1.0"));
  // The same bytes at one path (a shared licence) are fine.
  CHECK(plan_package_layers({receipt("cuda", "archive", {file_record("LICENSE", "aa")}),
                             receipt("cudnn", "archive", {file_record("LICENSE", "aa")})},
                            paths));
}

TEST_CASE("layer plan: past 100 layers the smallest wheels share one layer", "[oci][plan]") {
  const TempDir dir;
  const PrefixPaths paths{.generation = dir.path(), .prefix = dir.path()};
  std::vector<store::PackageReceipt> receipts = {receipt("cuda", "archive")};
  for (int i = 0; i < 120; ++i) {
    const auto name = fmt::format("wheel{:03}", i);
    receipts.push_back(receipt(name, "pip", {file_record(name + "/x.py", "aa", 1000 + i)}));
  }
  auto layers = plan_package_layers(receipts, paths);
  REQUIRE(layers);
  CHECK(layers->size() + 1 == kMaxLayers);  // with the image's own layer
  CHECK(layers->front().label == "cuda 1.0");
  const auto merged = std::find_if(layers->begin(), layers->end(), [](const PlannedLayer& layer) {
    return layer.label.starts_with("wheels: ");
  });
  REQUIRE(merged != layers->end());
  CHECK_THAT(merged->label, Catch::Contains("wheel000 1.0") && !Catch::Contains("wheel119"));
  // The biggest wheels keep their own layers.
  const auto names = labels(*layers);
  CHECK(std::find(names.begin(), names.end(), "wheel119 1.0") != names.end());
}

TEST_CASE("layer plan: the cache key follows content and paths, not order", "[oci][plan]") {
  const std::vector<TarEntry> entries = {{.path = "a", .content = "1"},
                                         {.path = "b", .sha256 = "aa"}};
  const std::vector<TarEntry> reversed = {entries[1], entries[0]};
  CHECK(layer_key(entries) == layer_key(reversed));
  auto changed = entries;
  changed[0].content = "2";
  CHECK(layer_key(changed) != layer_key(entries));
  changed = entries;
  changed[1].executable = true;
  CHECK(layer_key(changed) != layer_key(entries));
}

}  // namespace
}  // namespace envkit::oci

namespace envkit::oci {
namespace {

TEST_CASE("layer plan: a venv's own files point at /opt/envkit, a package's bytes stay",
          "[oci][plan]") {
  const test::TempDir dir;
  const PrefixPaths paths{.generation = dir.path() / ".env.generations" / "2",
                          .prefix = dir.path() / "env"};
  const auto cfg = "home = /usr/bin\nprompt = " + paths.prefix.string() + "\n";
  const auto activate = "VIRTUAL_ENV=\"" + paths.prefix.string() + "\"\n";
  dir.write(".env.generations/2/pyvenv.cfg", cfg);
  dir.write(".env.generations/2/bin/activate", activate);
  dir.write(".env.generations/2/bin/activate-tool", activate);
  const std::vector<store::FileRecord> files = {file_record("pyvenv.cfg", "aa"),
                                                file_record("bin/activate", "bb")};
  auto venv = plan_package_layers({receipt("python", "venv", files)}, paths);
  REQUIRE(venv);
  std::map<std::string, std::string> content;
  for (const auto& entry : venv->front().entries)
    content[entry.path] =
        entry.source.empty() ? entry.content : "<from " + entry.source.string() + ">";
  CHECK(content["opt/envkit/pyvenv.cfg"] == "home = /usr/bin\nprompt = /opt/envkit\n");
  CHECK(content["opt/envkit/bin/activate"] == "VIRTUAL_ENV=\"/opt/envkit\"\n");

  // The same name in a wheel is the wheel's file, read as it is.
  auto wheel = plan_package_layers(
      {receipt("tool", "pip", {file_record("bin/activate-tool", "cc")})}, paths);
  REQUIRE(wheel);
  for (const auto& entry : wheel->front().entries) {
    if (entry.path == "opt/envkit/bin/activate-tool")
      CHECK(entry.source == paths.generation / "bin" / "activate-tool");
  }
}

}  // namespace
}  // namespace envkit::oci
