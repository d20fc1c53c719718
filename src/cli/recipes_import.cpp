// `envkit recipes import ...`: refresh the recipe database from upstream metadata.
#include "recipes_import.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <span>

#include "envkit/archive/decompress.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/net/fetch.hpp"
#include "envkit/recipes/database.hpp"
#include "envkit/recipes/import_debian_python.hpp"
#include "envkit/recipes/import_nvidia_redist.hpp"
#include "envkit/recipes/import_pypi.hpp"
#include "envkit/recipes/import_pypi_jax.hpp"
#include "envkit/recipes/import_pypi_tensorflow.hpp"
#include "envkit/recipes/import_pypi_torch.hpp"
#include "envkit/recipes/import_python_source.hpp"
#include "envkit/recipes/import_upstream.hpp"
#include "envkit/recipes/recipe_io.hpp"
#include "envkit/sys/fs.hpp"
#include "settings.hpp"

namespace envkit::cli {

namespace {

namespace fs = std::filesystem;
using recipes::ArtifactSet;
using recipes::Recipe;

// The database being written: --recipes, else the default one.
fs::path target_dir(const Context& context) {
  return recipes::default_database_dir(context.options.recipes);
}

// What the database already holds for `name` (facts and every artifact), or an
// empty recipe when it has none yet.
Result<Recipe> existing(const fs::path& dir, const std::string& name) {
  std::error_code ec;
  if (!fs::exists(dir / (name + ".yaml"), ec)) {
    return Recipe{.name = name, .sources = {}, .default_components = {}, .versions = {}};
  }
  auto db = recipes::Database::open(dir);
  if (!db) return db.error();
  return db->load_full(name);
}

int run_import_upstream(Context& context, const std::vector<std::string>& folders) {
  auto imported = recipes::import_upstream(std::vector<fs::path>(folders.begin(), folders.end()));
  if (!imported) return report(context, imported.error());
  const fs::path dir = target_dir(context);
  for (const auto& gap : imported->left_out)
    context.console.info("left out: " + gap);
  for (const auto& recipe : imported->recipes) {
    if (auto written = recipes::write_recipe(dir, recipe, ArtifactSet::offline); !written) {
      return report(context, written.error());
    }
    context.console.info(
        fmt::format("{}: {} versions -> {}", recipe.name, recipe.versions.size(), dir.string()));
  }
  return 0;
}

struct RedistArgs {
  std::vector<std::string> files;
  std::optional<std::string> base_url;
};

int run_import_nvidia_redist(Context& context, const RedistArgs& args) {
  const fs::path dir = target_dir(context);
  std::map<std::string, Recipe> touched;
  for (const auto& file : args.files) {
    auto text = sys::read_file(file);
    if (!text) return report(context, text.error());
    auto imported = recipes::import_nvidia_redist(*text, file, {.base_url = args.base_url});
    if (!imported) return report(context, imported.error());
    auto it = touched.find(imported->name);
    if (it == touched.end()) {
      auto base = existing(dir, imported->name);
      if (!base) return report(context, base.error());
      it = touched.emplace(imported->name, *std::move(base)).first;
    }
    recipes::merge_into(it->second, *imported);
    context.console.info(fmt::format("{} {} from {}", imported->name,
                                     imported->versions.at(0).version.original(), file));
  }
  for (const auto& [name, recipe] : touched) {
    if (auto written = recipes::write_recipe(dir, recipe, ArtifactSet::offline); !written) {
      return report(context, written.error());
    }
  }
  return 0;
}

// The index adapter: the recipes module reads pages, the net module fetches them.
Result<recipes::IndexResponse> fetch_index_page(const std::string& url,
                                                const std::vector<std::string>& headers) {
  auto response = net::fetch(url, {.headers = headers});
  if (!response) return std::move(response).error();
  return recipes::IndexResponse{response->status, response->content_type, response->url,
                                std::move(response->body)};
}

// The index to ask: --index, else the configured index-url, else pip's.
Result<std::string> index_url_for(const Context& context, const std::optional<std::string>& flag) {
  auto settings = load_settings(context);
  if (!settings) return std::move(settings).error();
  if (flag) config::set_by_flag(settings->index_url, flag);
  return index_url_of(*settings);
}

int run_import_pypi(Context& context, const std::optional<std::string>& index) {
  const fs::path dir = target_dir(context);
  auto db = recipes::Database::open(dir);
  if (!db) return report(context, db.error());
  auto cuda = db->load_full("cuda");
  if (!cuda) return report(context, cuda.error());
  auto cudnn = db->load_full("cudnn");
  if (!cudnn) return report(context, cudnn.error());
  auto index_url = index_url_for(context, index);
  if (!index_url) return report(context, index_url.error());
  context.console.info(
      fmt::format("asking {} for NVIDIA's CUDA and cuDNN wheels", url::redacted(*index_url)));
  auto imported = recipes::import_pypi_nvidia(*cuda, *cudnn,
                                              {.index_url = *index_url, .fetch = fetch_index_page});
  if (!imported) return report(context, imported.error());
  for (auto* pair : {&*cuda, &*cudnn}) {
    const Recipe& wheels = pair->name == "cuda" ? imported->cuda : imported->cudnn;
    // Replace this set wholesale: wheels that left the index leave the database.
    for (auto& version : pair->versions) {
      for (auto& build : version.builds) {
        std::erase_if(build.artifacts, [](const recipes::Artifact& a) {
          return recipes::belongs_to(a, ArtifactSet::wheels);
        });
      }
    }
    recipes::merge_into(*pair, wheels);
    if (auto written = recipes::write_recipe(dir, *pair, ArtifactSet::wheels); !written) {
      return report(context, written.error());
    }
  }
  context.console.info(fmt::format(
      "{} projects asked ({} not on the index); {} components and cuDNN builds have wheels, {} "
      "have none of their version; {} wheel artifacts",
      imported->projects_fetched, imported->projects_missing, imported->matched,
      imported->unmatched, imported->artifacts));
  return 0;
}

std::string describe(const recipes::TorchPatch& patch) {
  if (!patch.metadata_read) return "no wheel metadata; builds copied";
  const auto& pins = patch.pins;
  return fmt::format("{} pins cuda-runtime {}, cudnn {}, cublas {} -> {}", patch.wheel,
                     pins.cuda_runtime.value_or("-"), pins.cudnn.value_or("-"),
                     pins.cublas.value_or("-"),
                     patch.build_id ? "tested of " + *patch.build_id : "no build refined");
}

// A framework's facts from the tables alone (<name>.yaml, not a previous overlay): what the
// index refines.
Result<Recipe> framework_tables(const fs::path& dir, std::string_view name) {
  const fs::path path = dir / fmt::format("{}.yaml", name);
  auto text = sys::read_file(path);
  if (!text) return text.error();
  return recipes::read_facts(*text, path.string());
}

int run_import_pypi_torch(Context& context, const std::optional<std::string>& index) {
  const fs::path dir = target_dir(context);
  auto tables = framework_tables(dir, "torch");
  if (!tables) return report(context, tables.error());
  auto index_url = index_url_for(context, index);
  if (!index_url) return report(context, index_url.error());
  context.console.info(
      fmt::format("asking {} for torch's patch releases", url::redacted(*index_url)));
  auto imported =
      recipes::import_pypi_torch(*tables, {.index_url = *index_url, .fetch = fetch_index_page});
  if (!imported) return report(context, imported.error());
  for (const auto& patch : imported->patches)
    context.console.info(
        fmt::format("torch {} -> {}: {}", patch.minor, patch.version, describe(patch)));
  if (auto written = recipes::write_facts_overlay(dir, imported->torch); !written) {
    return report(context, written.error());
  }
  context.console.info(
      fmt::format("replaced {} ({} metadata files read), Python ranges for {} releases -> {}",
                  text::join(imported->torch.replaces, ", "), imported->metadata_fetched,
                  imported->python_ranges, (dir / "pypi" / "torch.yaml").string()));
  return 0;
}

int run_import_pypi_tensorflow(Context& context, const std::optional<std::string>& index) {
  const fs::path dir = target_dir(context);
  auto tensorflow = framework_tables(dir, "tensorflow");
  if (!tensorflow) return report(context, tensorflow.error());
  auto tensorflow_gpu = framework_tables(dir, "tensorflow-gpu");
  if (!tensorflow_gpu) return report(context, tensorflow_gpu.error());
  auto index_url = index_url_for(context, index);
  if (!index_url) return report(context, index_url.error());
  context.console.info(fmt::format("asking {} for tensorflow's and tensorflow-gpu's releases",
                                   url::redacted(*index_url)));
  auto imported = recipes::import_pypi_tensorflow(
      *tensorflow, *tensorflow_gpu, {.index_url = *index_url, .fetch = fetch_index_page});
  if (!imported) return report(context, imported.error());
  for (const auto& added : imported->added)
    context.console.info(added);
  for (const auto* overlay : {&imported->tensorflow, &imported->tensorflow_gpu}) {
    if (auto written = recipes::write_facts_overlay(dir, *overlay); !written) {
      return report(context, written.error());
    }
    context.console.info(fmt::format("{} versions -> {}", overlay->versions.size(),
                                     (dir / "pypi" / (overlay->name + ".yaml")).string()));
  }
  context.console.info(fmt::format("{} releases read, {} added to the tables' versions",
                                   imported->releases, imported->added.size()));
  return 0;
}

int run_import_pypi_jax(Context& context, const std::optional<std::string>& index) {
  const fs::path dir = target_dir(context);
  auto index_url = index_url_for(context, index);
  if (!index_url) return report(context, index_url.error());
  context.console.info(
      fmt::format("asking {} for jax's releases and their CUDA builds", url::redacted(*index_url)));
  auto imported = recipes::import_pypi_jax({.index_url = *index_url, .fetch = fetch_index_page});
  if (!imported) return report(context, imported.error());
  for (const auto& release : imported->releases) {
    if (!release.metadata_read) {
      context.console.info(
          fmt::format("jax {}: no METADATA of {}", release.version, release.wheel));
    } else if (!release.builds.empty()) {
      context.console.info(
          fmt::format("jax {}: {}", release.version, text::join(release.builds, ", ")));
    }
  }
  if (auto written = recipes::write_facts_overlay(dir, imported->jax); !written) {
    return report(context, written.error());
  }
  context.console.info(
      fmt::format("{} of {} jax releases have CUDA builds ({} METADATA read) -> {}",
                  imported->jax.versions.size(), imported->releases.size(), imported->metadata_read,
                  (dir / "pypi" / "jax.yaml").string()));
  return 0;
}

struct PyenvArgs {
  std::string definitions;
  std::optional<std::string> provenance;
};

// The definition files of a python-build folder, sorted by name.
Result<std::vector<std::pair<std::string, std::string>>> read_definitions(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Error::input(fmt::format("{} is not a folder of pyenv definitions", dir.string()))
        .hint(
            "pass pyenv's plugins/python-build/share/python-build (scripts/import-pyenv extracts "
            "it from a pyenv checkout)");
  }
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file()) continue;
    auto text = sys::read_file(entry.path());
    if (!text) return text.error();
    files.emplace_back(entry.path().string(), *std::move(text));
  }
  if (ec) return Error::failed(fmt::format("cannot list {}", dir.string())).because(ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

int run_import_pyenv(Context& context, const PyenvArgs& args) {
  auto files = read_definitions(args.definitions);
  if (!files) return report(context, files.error());
  std::vector<recipes::SourceText> definitions;
  for (const auto& [path, text] : *files)
    definitions.push_back({.text = text, .file = path});
  auto imported =
      recipes::import_python_source(definitions, args.provenance.value_or(args.definitions));
  if (!imported) return report(context, imported.error());
  const fs::path dir = target_dir(context);
  if (auto written = recipes::write_source_overlay(dir, *imported); !written) {
    return report(context, written.error());
  }
  context.console.info(fmt::format("python: {} source releases from {} definitions -> {}",
                                   imported->versions.size(), files->size(),
                                   (dir / "pyenv").string()));
  return 0;
}

struct DebianArgs {
  std::string archive = "https://deb.debian.org/debian";
  std::vector<std::string> suites = {"oldoldstable", "oldstable", "stable", "testing", "unstable"};
};

// python.org's tarballs as the database records them: the pyenv/ overlay's facts with their
// artifacts (before a prebuilt archive of the same release hides them).
Result<Recipe> recorded_python_sources(const fs::path& dir) {
  const auto facts_file = dir / "pyenv" / "python.yaml";
  auto facts = sys::read_file(facts_file);
  if (!facts) {
    return Error::input(fmt::format("{} does not exist", facts_file.string()))
        .hint(
            "the Debian overlay matches the pyenv overlay's tarballs: run scripts/import-pyenv "
            "first");
  }
  auto recipe = recipes::read_facts(*facts, facts_file.string());
  if (!recipe) return recipe.error();
  for (const auto& version : std::vector<recipes::RecipeVersion>(recipe->versions)) {
    const auto file = dir / "pyenv" / "python" / (version.version.original() + ".yaml");
    auto text = sys::read_file(file);
    if (!text) continue;
    if (auto read = recipes::read_artifacts(*text, file.string(), *recipe); !read)
      return read.error();
  }
  return recipe;
}

// The bytes of an in-memory body, for the decompressor.
class BodySource final : public archive::Source {
 public:
  BodySource(std::string_view body, std::string name) : body_(body), name_(std::move(name)) {}
  Result<std::size_t> read(std::span<std::byte> buffer) override {
    const auto n = std::min(buffer.size(), body_.size());
    std::memcpy(buffer.data(), body_.data(), n);
    body_.remove_prefix(n);
    return n;
  }
  [[nodiscard]] std::string name() const override { return name_; }

 private:
  std::string_view body_;
  std::string name_;
};

Result<std::string> fetch_ok(const std::string& url, std::uint64_t max_bytes) {
  auto response = net::fetch(url, {.max_bytes = max_bytes});
  if (!response) return std::move(response).error();
  if (response->status != 200) {
    return Error::failed(fmt::format("{} answered HTTP {}", url, response->status));
  }
  return std::move(response->body);
}

// A suite's codename as its Release file says (`stable` -> trixie); the suite itself
// when it says none.
std::string codename_of(const std::string& archive, const std::string& suite) {
  auto release = fetch_ok(fmt::format("{}/dists/{}/Release", archive, suite), 1 << 20);
  if (!release) return suite;
  for (const auto line : text::split(*release, '\n')) {
    if (line.starts_with("Codename:")) return std::string(text::trim(line.substr(9)));
  }
  return suite;
}

int run_import_debian_python(Context& context, const DebianArgs& args) {
  const fs::path dir = target_dir(context);
  auto recorded = recorded_python_sources(dir);
  if (!recorded) return report(context, recorded.error());
  const auto archive =
      args.archive.ends_with('/') ? args.archive.substr(0, args.archive.size() - 1) : args.archive;
  std::vector<recipes::DebianTarball> tarballs;
  std::vector<std::string> codenames;
  for (const auto& suite : args.suites) {
    const auto url = fmt::format("{}/dists/{}/main/source/Sources.xz", archive, suite);
    auto body = fetch_ok(url, std::uint64_t{256} << 20);
    if (!body) return report(context, body.error());
    BodySource source(*body, url);
    std::string sources;
    auto decompressed = archive::decompress_all(
        source, [&](std::string_view bytes) { sources.append(bytes.data(), bytes.size()); });
    if (!decompressed) return report(context, decompressed.error());
    auto listed = recipes::debian_python_tarballs(sources, url, archive);
    if (!listed) return report(context, listed.error());
    for (auto& tarball : *listed) {
      const bool known = std::any_of(tarballs.begin(), tarballs.end(),
                                     [&](const auto& seen) { return seen.url == tarball.url; });
      if (!known) tarballs.push_back(std::move(tarball));
    }
    auto codename = codename_of(archive, suite);
    context.console.info(
        fmt::format("{} ({}): {} python3.X upstream tarballs", suite, codename, listed->size()));
    codenames.push_back(std::move(codename));
  }
  const auto today = std::chrono::year_month_day(
      std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now()));
  const auto provenance = fmt::format(
      "{}: dists/{{{}}}/main/source/Sources.xz, read {:04}-{:02}-{:02}",
      url::without_credentials(archive), text::join(codenames, ","), static_cast<int>(today.year()),
      static_cast<unsigned>(today.month()), static_cast<unsigned>(today.day()));
  auto imported = recipes::import_debian_python(*recorded, tarballs, provenance);
  for (const auto& left : imported.left_out)
    context.console.info("left out: " + left);
  // The index's word is not enough: each file is downloaded and hashed here.
  for (const auto& tarball : imported.matched) {
    auto body = fetch_ok(tarball.url, std::uint64_t{512} << 20);
    if (!body) return report(context, body.error());
    const auto sha256 = core::sha256_hex(*body);
    if (sha256 != tarball.sha256) {
      return report(context,
                    Error::failed(fmt::format("{}: its sha256 is {}, Debian's Sources says {}",
                                              tarball.url, sha256, tarball.sha256))
                        .hint("nothing was written; try again later (a mirror mid-update?)"));
    }
    context.console.info(fmt::format("python {}: {} is python.org's tarball (sha256 {}, {} bytes)",
                                     tarball.version, tarball.url, sha256, body->size()));
  }
  if (auto written = recipes::write_debian_overlay(dir, imported.recipe); !written)
    return report(context, written.error());
  context.console.info(fmt::format("python: {} releases also at {} -> {}",
                                   imported.recipe.versions.size(), archive,
                                   (dir / "debian").string()));
  return 0;
}

}  // namespace

void register_recipes_import(CLI::App& recipes, Commands& out) {
  auto* import = recipes.add_subcommand(
      "import", "Refresh the database (--recipes DIR is the one written) from upstream metadata");
  import->require_subcommand(1);
  out.push_back({import, nullptr});

  auto redist = std::make_shared<RedistArgs>();
  auto* nvidia = import->add_subcommand(
      "nvidia-redist", "Import NVIDIA redistrib_<version>.json manifests (CUDA and cuDNN)");
  nvidia->add_option("FILE", redist->files, "redistrib_*.json files")->required();
  nvidia
      ->add_option("--base-url", redist->base_url,
                   "Download base replacing NVIDIA's (an internal mirror)")
      ->option_text("URL");
  out.push_back({nvidia, [redist](Context& c) { return run_import_nvidia_redist(c, *redist); }});

  // The importers that ask a package index: each takes `--index URL`.
  using IndexImporter = int (*)(Context&, const std::optional<std::string>&);
  const auto add_index_importer = [&](const char* name, const char* description,
                                      IndexImporter run) {
    auto index = std::make_shared<std::optional<std::string>>();
    auto* command = import->add_subcommand(name, description);
    command
        ->add_option(
            "--index", *index,
            "Simple-API index URL (default: index-url, else as pip: PIP_INDEX_URL, pip.conf, PyPI)")
        ->option_text("URL");
    out.push_back({command, [index, run](Context& c) { return run(c, *index); }});
  };
  add_index_importer(
      "pypi-nvidia",
      "Add NVIDIA's CUDA and cuDNN wheels (PyPI or the index pip uses) as second artifacts",
      run_import_pypi);
  add_index_importer(
      "pypi-torch",
      "Refine minor-keyed torch versions into PyPI's patch releases, with their wheels' pins",
      run_import_pypi_torch);
  add_index_importer(
      "pypi-tensorflow",
      "Add tensorflow's and tensorflow-gpu's releases from the index to their tables' rows",
      run_import_pypi_tensorflow);
  add_index_importer("pypi-jax",
                     "Import jax's CUDA builds (cuda11/12/13) from its wheels' metadata on PyPI",
                     run_import_pypi_jax);

  auto pyenv_args = std::make_shared<PyenvArgs>();
  auto* pyenv = import->add_subcommand(
      "pyenv",
      "Import CPython source releases from pyenv's python-build definitions into pyenv/ (an "
      "overlay)");
  pyenv
      ->add_option("DIR", pyenv_args->definitions,
                   "pyenv's plugins/python-build/share/python-build")
      ->required();
  pyenv
      ->add_option("--provenance", pyenv_args->provenance,
                   "Where DIR came from, recorded as the recipe's source (default: DIR)")
      ->option_text("TEXT");
  out.push_back({pyenv, [pyenv_args](Context& c) { return run_import_pyenv(c, *pyenv_args); }});

  auto debian_args = std::make_shared<DebianArgs>();
  auto* debian = import->add_subcommand(
      "debian-python",
      "Add Debian's copies of python.org's CPython tarballs (same sha256) as `also-at` URLs, "
      "into debian/ (an overlay)");
  debian
      ->add_option("--archive", debian_args->archive,
                   "The Debian archive (default https://deb.debian.org/debian)")
      ->option_text("URL");
  debian
      ->add_option("--suite", debian_args->suites,
                   "A suite whose Sources index is read (repeatable; default oldoldstable, "
                   "oldstable, stable, testing, unstable)")
      ->option_text("SUITE");
  out.push_back(
      {debian, [debian_args](Context& c) { return run_import_debian_python(c, *debian_args); }});

  auto upstream_dir = std::make_shared<std::vector<std::string>>();
  auto* upstream = import->add_subcommand(
      "upstream",
      "Run every offline importer over folders of upstream metadata (scripts/regen-recipes)");
  upstream
      ->add_option("DIR", *upstream_dir,
                   "The upstream metadata folders; a file is read from the first that has it")
      ->required();
  out.push_back(
      {upstream, [upstream_dir](Context& c) { return run_import_upstream(c, *upstream_dir); }});
}

}  // namespace envkit::cli
