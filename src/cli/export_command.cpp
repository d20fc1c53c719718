// `envkit export --oci DIR`: the installed prefix as an OCI image layout, and
// `envkit export --verify DIR[:REF]` (docs/export.md).
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "command.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/oci/export.hpp"
#include "envkit/oci/verify.hpp"
#include "envkit/smoke/verified.hpp"
#include "envkit/store/plan.hpp"
#include "envkit/store/prefix.hpp"
#include "envkit/sys/fs.hpp"
#include "prefix_option.hpp"
#include "progress.hpp"
#include "settings.hpp"

namespace envkit::cli {

namespace {

namespace fs = std::filesystem;

struct ExportFlags {
  std::optional<fs::path> oci;
  std::optional<std::string> verify;
  std::optional<fs::path> prefix;
  std::string ref = "latest";
  std::vector<std::string> platforms;
  std::optional<std::string> base;
  std::string compress = "gzip";
  std::optional<fs::path> archive;
};

fs::path in_project(const Context& context, const fs::path& path) {
  return path.is_absolute() ? path : context.options.directory / path;
}

// A prefix is one platform: this machine's.
Result<void> check_platforms(const std::vector<std::string>& platforms) {
  const auto host = specs::host_platform();
  for (const auto& text : platforms) {
    auto platform = specs::parse_platform(text);
    if (!platform) return std::move(platform).error();
    if (*platform != host) {
      return Error::input(fmt::format("cannot export {} on {}: the image is made of the installed "
                                      "prefix, which is {}",
                                      text, specs::to_string(host), specs::to_string(host)))
          .hint(
              fmt::format("run `envkit install` and `envkit export --oci` on a {} machine", text));
    }
  }
  return {};
}

// The installed generation, refused unless it is exactly what envkit.lock says.
struct Installed {
  oci::PrefixPaths paths;
  store::PrefixState state;
};

Result<Installed> installed_as_locked(const Context& context, const ExportFlags& flags,
                                      const lock::Lockfile& lockfile,
                                      const config::Settings& settings) {
  auto prefix = store::Prefix::open(prefix_path(context, flags.prefix));
  if (!prefix) return std::move(prefix).error();
  const auto where = text::quoted(prefix->path().string());
  auto state = prefix->state();
  if (!state) return std::move(state).error();
  const auto generation = prefix->current_generation();
  if (!*state || !generation) {
    return Error::failed(fmt::format("nothing is installed in {}", where))
        .hint("run `envkit install` first, or name the prefix with --prefix DIR");
  }
  const auto host = specs::host_platform();
  const lock::PlatformLock* locked = nullptr;
  for (const auto& entry : lockfile.platforms) {
    if (entry.platform == host) locked = &entry;
  }
  if (locked == nullptr) {
    return Error::failed(fmt::format("envkit.lock has nothing for {}", specs::to_string(host)))
        .hint(fmt::format("run `envkit lock --platform {}`", specs::to_string(host)));
  }
  // The same plan `install` makes: anything to add, change or remove means the
  // image would not be the lock's.
  auto plan = store::plan_install(*locked, *state, packaging_from(settings.packaging.value));
  if (!plan) return std::move(plan).error();
  if (!plan->nothing_to_do()) {
    std::vector<std::string> differences;
    for (const auto& package : plan->packages) {
      if (!package.unchanged) differences.push_back(package.name + " " + package.version);
    }
    for (const auto& name : plan->removed)
      differences.push_back(name + " (not in envkit.lock)");
    return Error::failed(fmt::format("{} does not match envkit.lock", where))
        .because(fmt::format("differs: {}", text::join(differences, ", ")))
        .hint("run `envkit install`, then export again");
  }
  return Installed{.paths = {.generation = prefix->generation_root(*generation),
                             .prefix = fs::absolute(prefix->path()).lexically_normal()},
                   .state = **std::move(state)};
}

// DIR[:REF] (REF holds no '/', a path may hold ':'): the folder and the ref, if any.
std::pair<std::string, std::optional<std::string>> layout_and_ref(const std::string& target) {
  const auto colon = target.rfind(':');
  if (colon == std::string::npos || target.find('/', colon) != std::string::npos)
    return {target, std::nullopt};
  return {target.substr(0, colon), target.substr(colon + 1)};
}

// --base LAYOUT:REF read, its glibc checked against the lock's wheels; nullopt
// without --base or with --base none.
Result<std::optional<oci::BaseImage>> base_image(const Context& context, const ExportFlags& flags,
                                                 const lock::Lockfile& lockfile) {
  if (!flags.base || *flags.base == "none") return std::optional<oci::BaseImage>{};
  const auto [layout, ref] = layout_and_ref(*flags.base);
  auto base = oci::read_base_image(in_project(context, layout), ref.value_or("latest"),
                                   specs::host_platform());
  if (!base) return std::move(base).error();
  for (const auto& locked : lockfile.platforms) {
    if (locked.platform != specs::host_platform()) continue;
    if (auto fits = oci::check_base_glibc(*base, locked); !fits) return std::move(fits).error();
  }
  return std::optional(*std::move(base));
}

// The last passing GPU smoke test as image labels, when it was for the lock exported.
Result<std::map<std::string, std::string>> verified_labels(const fs::path& prefix,
                                                           const std::string& lock_text) {
  auto verified = smoke::read_verified(prefix);
  if (!verified) return std::move(verified).error();
  if (!*verified || (*verified)->lock_sha256 != core::sha256_hex(lock_text))
    return std::map<std::string, std::string>{};
  const auto& v = **verified;
  std::map<std::string, std::string> labels = {
      {"dev.envkit.verified.at", v.verified_at},
      {"dev.envkit.verified.gpu", v.gpu},
      {"dev.envkit.verified.compute-capability", v.compute_capability},
      {"dev.envkit.verified.driver-cuda", v.driver},
      {"dev.envkit.verified.libraries", v.libraries}};
  if (v.speedup) labels["dev.envkit.verified.speedup"] = fmt::format("{:.1f}", *v.speedup);
  return labels;
}

int run_export_oci(Context& context, const ExportFlags& flags) {
  if (auto platforms = check_platforms(flags.platforms); !platforms)
    return report(context, platforms.error());
  const auto compression = oci::parse_compression(flags.compress);
  auto settings = load_settings(context);
  if (!settings) return report(context, settings.error());
  const auto lock_path = (context.options.directory / lock::kFileName).lexically_normal();
  auto lock_text = sys::read_file(lock_path);
  if (!lock_text) {
    return report(context, Error::failed(fmt::format("{} does not exist", lock_path.string()))
                               .hint("run `envkit lock` and `envkit install` first"));
  }
  auto lockfile = lock::parse(*lock_text, lock_path.string());
  if (!lockfile) return report(context, lockfile.error());
  auto installed = installed_as_locked(context, flags, *lockfile, *settings);
  if (!installed) return report(context, installed.error());
  auto base = base_image(context, flags, *lockfile);
  if (!base) return report(context, base.error());
  const auto out = fs::absolute(in_project(context, *flags.oci)).lexically_normal();
  auto labels = verified_labels(installed->paths.prefix, *lock_text);
  if (!labels) return report(context, labels.error());
  const oci::ExportOptions options{
      .out = out,
      .ref = flags.ref,
      .compression = *compression,
      .cache_root = cache_dir_of(*settings),
      .lock_text = *lock_text,
      .lockfile = &*lockfile,
      .jobs = static_cast<int>(std::max(1U, std::thread::hardware_concurrency())),
      .archive = flags.archive ? std::optional(in_project(context, *flags.archive)) : std::nullopt,
      .base = *std::move(base),
      .note =
          [&](const std::string& line) {
            if (!context.options.quiet) context.console.info(line);
          },
      .labels = *std::move(labels)};
  auto exported = oci::export_image(installed->paths, installed->state, options);
  if (!exported) return report(context, exported.error());
  context.console.info(fmt::format(
      "exported {} as {}:{} ({} layers, {}; {} compressed now, {} from the cache)",
      text::quoted(installed->paths.prefix.string()), out.string(), flags.ref, exported->layers,
      human_bytes(exported->bytes), exported->built, exported->cached));
  if (context.options.json) {
    const nlohmann::json summary = {{"layout", out.string()},
                                    {"ref", flags.ref},
                                    {"manifest", exported->manifest_digest},
                                    {"layers", exported->layers},
                                    {"built", exported->built},
                                    {"cached", exported->cached},
                                    {"bytes", exported->bytes}};
    std::cout << summary.dump() << '\n';
  }
  return 0;
}

int run_export_verify(Context& context, const std::string& target) {
  const auto [dir, ref] = layout_and_ref(target);
  auto verified = oci::verify_layout(in_project(context, dir), ref);
  if (!verified) return report(context, verified.error());
  context.console.info(fmt::format("{}: {} image(s), {} blob(s) verified", dir, verified->manifests,
                                   verified->blobs));
  if (context.options.json) {
    const nlohmann::json summary = {{"manifests", verified->manifests}, {"blobs", verified->blobs}};
    std::cout << summary.dump() << '\n';
  }
  return 0;
}

int run_export(Context& context, const ExportFlags& flags) {
  if (flags.verify) return run_export_verify(context, *flags.verify);
  if (!flags.oci) {
    return report(context, Error::input("envkit export needs --oci DIR or --verify DIR[:REF]"));
  }
  return run_export_oci(context, flags);
}

}  // namespace

void register_export(CLI::App& root, Commands& out) {
  auto flags = std::make_shared<ExportFlags>();
  auto* command = root.add_subcommand(
      "export", "Write the installed environment as an OCI image layout (or verify one)");
  auto* oci =
      command->add_option("--oci", flags->oci, "The OCI image layout to write (made if missing)")
          ->option_text("DIR");
  auto* verify =
      command
          ->add_option("--verify", flags->verify,
                       "Check every blob of DIR's images (of REF only) against its digest and "
                       "every layer against its diff_id")
          ->option_text("DIR[:REF]");
  oci->excludes(verify);
  add_prefix_option(*command, flags->prefix,
                    "The installed prefix to export (default: .envkit/env)");
  command->add_option("--ref", flags->ref, "The image's name in the layout (default: latest)")
      ->option_text("NAME");
  command
      ->add_option("--platform", flags->platforms,
                   "The platform to export (repeatable; only this machine's: a prefix is one)")
      ->option_text("P");
  command
      ->add_option("--base", flags->base,
                   "A base image's layers first, from a local layout (none: no base)")
      ->option_text("LAYOUT:REF|none");
  command->add_option("--compress", flags->compress, "How layers are compressed (default: gzip)")
      ->check(CLI::IsMember({"gzip", "zstd", "none"}));
  command
      ->add_option("--archive", flags->archive,
                   "Also write the layout as one tar (oci-archive, as Apptainer reads it)")
      ->option_text("FILE.tar");
  out.push_back({command, [flags](Context& context) { return run_export(context, *flags); }});
}

}  // namespace envkit::cli
