// Inputs that broke or could break the YAML readers (issue 19): each is a
// located input error, quickly, in bounded memory, in every reader.

#include <fmt/format.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <functional>
#include <string>

#include "envkit/config/config.hpp"
#include "envkit/lock/lockfile.hpp"
#include "envkit/manifest/manifest.hpp"
#include "envkit/project/project_files.hpp"
#include "envkit/recipes/recipe_io.hpp"
#include "support/temp_dir.hpp"
#include "yaml_source.hpp"

namespace envkit::yaml {
namespace {

using Catch::Matchers::StartsWith;

// The error of each reader on `text`, as `file` (the readers' own file names).
struct Reader {
  std::string_view file;
  std::function<Result<void>(std::string_view text, std::string_view file)> read;
};

template <class T>
Result<void> only_error(Result<T> result) {
  if (!result) return std::move(result).error();
  return {};
}

const Reader kReaders[] = {
    {"envkit.yaml", [](std::string_view text,
                       std::string_view file) { return only_error(manifest::parse(text, file)); }},
    {"envkit.lock", [](std::string_view text,
                       std::string_view file) { return only_error(lock::parse(text, file)); }},
    {"config.yaml",
     [](std::string_view text, std::string_view file) {
       config::Settings settings;
       return config::apply_file(settings, text, file,
                                 [](const auto&) { return std::optional<std::string>(); });
     }},
    {"cuda.yaml",
     [](std::string_view text, std::string_view file) {
       return only_error(recipes::read_facts(text, file));
     }},
    {"environment.yml",
     [](std::string_view text, std::string_view file) {
       return only_error(project::parse_environment_yml(text, file));
     }},
};

Error refusal(const Reader& reader, std::string_view text) {
  auto result = reader.read(text, reader.file);
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().exit_code() == 2);
  return result.error();
}

std::string alias_bomb() {
  std::string text =
      "a: &a [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n";
  for (char name = 'b'; name <= 'j'; ++name) {
    text += fmt::format("{}: &{} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n", name, name,
                        fmt::arg("p", static_cast<char>(name - 1)));
  }
  return text;
}

TEST_CASE("the one-byte file `,` is a located error in every reader", "[yaml][hostile]") {
  // yaml-cpp 0.7 allocated without bound on it (jbeder/yaml-cpp#1040).
  for (const Reader& reader : kReaders) {
    CAPTURE(reader.file);
    const Error error = refusal(reader, ",");
    CHECK(error.headline() ==
          fmt::format("{}:1:1: invalid YAML: `,` cannot start a value", reader.file));
    CHECK(error.hints() == std::vector<std::string>{"quote a value that starts with `,`"});
  }
}

TEST_CASE("a flow mapping followed by `,` is a located error in every reader", "[yaml][hostile]") {
  // Found by the `config` fuzz target in 5 s: yaml-cpp 0.7 looped allocating on it.
  for (const Reader& reader : kReaders) {
    CAPTURE(reader.file);
    CHECK_THAT(refusal(reader, "{!=.!tj!ss.r},").headline(),
               StartsWith(fmt::format("{}:1:", reader.file)));
  }
}

TEST_CASE("hostile YAML is a located error in every reader", "[yaml][hostile]") {
  struct Case {
    std::string text;
    std::string headline;  // after "file:"
  };
  const Case cases[] = {
      {"a: " + std::string(100'000, '['), "1:67: invalid YAML: nested too deeply (over 64 levels)"},
      {alias_bomb(), "2:8: invalid YAML: aliases (`*a`) are not supported"},
      {std::string("name: de\0mo\n", 12), "1:9: invalid YAML: a NUL byte"},
      {"name: x\nframework: t\xC3\n", "2:13: invalid YAML: byte 0xC3 is not UTF-8 text"},
      {"name: \xC0\xAF\n", "1:7: invalid YAML: byte 0xC0 is not UTF-8 text"},
      {"name: a\x07\n", "1:8: invalid YAML: control character U+0007"},
      {"a: b\n---\n- c\n", "3:1: expected one YAML document, found a second one"},
  };
  for (const Reader& reader : kReaders) {
    for (const Case& hostile : cases) {
      CAPTURE(reader.file, hostile.headline);
      CHECK(refusal(reader, hostile.text).headline() ==
            fmt::format("{}:{}", reader.file, hostile.headline));
    }
  }
}

TEST_CASE("text over the size cap is refused before it is parsed", "[yaml][hostile]") {
  const std::string huge = "a: " + std::string(kMaxFileBytes, 'x') + "\n";
  for (const Reader& reader : kReaders) {
    CAPTURE(reader.file);
    CHECK(refusal(reader, huge).headline() ==
          fmt::format("{}: YAML file is {} bytes, over the 16 MiB envkit reads", reader.file,
                      huge.size()));
  }
}

TEST_CASE("more nodes than the budget is a located error", "[yaml][hostile]") {
  std::string text = "[";
  for (std::size_t i = 0; i <= kMaxNodes; ++i)
    text += "a,";
  text += "]\n";
  auto document = load_document(Source(text, "t.yaml"));
  REQUIRE_FALSE(document);
  CHECK(document.error().headline() ==
        fmt::format("t.yaml:1:{}: invalid YAML: more than 1000000 values", 2 * kMaxNodes));
}

TEST_CASE("a file over the size cap or not a regular file is refused before it is read",
          "[yaml][hostile]") {
  test::TempDir dir;
  const auto big = dir.write("envkit.lock", std::string(kMaxFileBytes + 1, '#'));
  auto refused = read_file(big);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().headline() ==
        big.string() + " is larger than 16 MiB, the most envkit reads from an input file");

  const auto fifo = dir.path() / "config.yaml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto not_regular = read_file(fifo);
  REQUIRE_FALSE(not_regular);
  CHECK(not_regular.error().headline() == fifo.string() + " is a FIFO, not a regular file");
  CHECK_THAT(read_file("/dev/zero").error().headline(),
             StartsWith("/dev/zero is a character device, not a regular"));

  const auto fine = dir.write("ok.yaml", "a: 1\n");
  CHECK(read_file(fine).value() == "a: 1\n");
  CHECK_THAT(read_file(dir.path() / "absent.yaml").error().headline(), StartsWith("cannot read"));
}

TEST_CASE("the config loader refuses an oversized config.yaml by name", "[yaml][hostile]") {
  test::TempDir dir;
  const auto file = dir.write(".envkit/config.yaml", std::string(kMaxFileBytes + 1, '#'));
  auto settings = config::load(config::Files{.user = std::nullopt, .project = file},
                               [](const auto&) { return std::optional<std::string>(); });
  REQUIRE_FALSE(settings);
  CHECK(settings.error().headline() ==
        file.string() + " is larger than 16 MiB, the most envkit reads from an input file");
}

}  // namespace
}  // namespace envkit::yaml
