// `envkit mirror --out DIR`: every artifact of envkit.lock, laid out so that a
// static HTTP server of DIR is a `--mirror` for `envkit install`; or
// `envkit mirror --oci-push HOST/REPO`: the same artifacts as blobs of a
// registry, for `install --mirror oci://HOST/REPO`.
#include <fmt/format.h>
#include <unistd.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/oci/registry_push.hpp"
#include "envkit/store/cache.hpp"
#include "envkit/store/mirror.hpp"
#include "progress.hpp"
#include "settings.hpp"

namespace envkit::cli {

namespace {

namespace fs = std::filesystem;

struct MirrorFlags {
  fs::path out;
  std::optional<std::string> oci_push;  // HOST/REPO
  std::vector<std::string> platforms;
  std::optional<std::string> packaging;
  std::vector<std::string> mirrors;  // given: they replace the configured mirrors
  std::optional<int> jobs;
  std::optional<fs::path> cacert;
};

Result<store::MirrorSelection> selection_of(const MirrorFlags& flags) {
  store::MirrorSelection selection;
  for (const auto& text : flags.platforms) {
    auto platform = specs::parse_platform(text);
    if (!platform) return std::move(platform).error();
    selection.platforms.push_back(*platform);
  }
  // Not the `packaging` setting: that is what install prefers, and a mirror
  // serves both packagings unless told otherwise.
  if (flags.packaging) selection.packaging = packaging_from(*flags.packaging);
  return selection;
}

// Mirrors the lock as it is: a mirror serves what was locked, even when the
// manifest has moved on since.
Result<lock::Lockfile> lock_to_mirror(const Context& context) {
  const auto path = (context.options.directory / lock::kFileName).lexically_normal();
  std::error_code ignored;
  if (!fs::exists(path, ignored)) {
    return Error::failed(fmt::format("{} does not exist", path.string()))
        .hint("run `envkit lock` first: the mirror holds the lock's artifacts");
  }
  return lock::load(path);
}

nlohmann::json report_json(const store::MirrorReport& report) {
  return {{"out", report.out.string()},
          {"files", report.files},
          {"bytes", report.bytes},
          {"skipped", report.skipped},
          {"repaired", report.repaired}};
}

void print_summary(const Context& context, const store::MirrorReport& report) {
  for (const auto& repaired : report.repaired)
    context.console.warn(repaired);
  context.console.info(fmt::format("mirrored {} file(s), {}, into {}; {} already there",
                                   report.files, human_bytes(report.bytes),
                                   text::quoted(report.out.string()), report.skipped));
  context.console.info(
      fmt::format("serve {} with any static HTTP server and install with `envkit install "
                  "--mirror URL` (or `mirrors:` in .envkit/config.yaml)",
                  text::quoted(report.out.string())));
}

// "3 file(s), 1.2 GiB"
std::string counted(std::size_t files, std::uint64_t bytes) {
  return fmt::format("{} file(s), {}", files, human_bytes(bytes));
}

int run_push(Context& context, const MirrorFlags& flags, const config::Settings& settings,
             net::TransportOptions transfer) {
  auto registry = net::parse_registry(*flags.oci_push, /*bare_allowed=*/true);
  if (!registry) return report(context, registry.error());
  const auto lock_path = (context.options.directory / lock::kFileName).lexically_normal();
  auto lockfile = lock_to_mirror(context);
  if (!lockfile) return report(context, lockfile.error());
  const auto lock_sha256 = core::sha256_file(lock_path);
  if (!lock_sha256) return report(context, Error::failed("cannot read " + lock_path.string()));
  auto fetch = registry_fetch_options(transfer);
  auto auth = std::make_shared<oci::RegistryAuth>(std::vector{*registry}, "pull,push",
                                                  oci::credential_files(), fetch);
  std::optional<ProgressDisplay> progress;
  transfer.on_warning = [&progress](const std::string& line) {
    if (progress) progress->note(line);
  };
  net::Transport transport(transfer);
  progress.emplace(transport,
                   ProgressDisplay::mode_for(context.options.quiet || context.options.json));
  const store::Cache cache(cache_dir_of(settings));
  const oci::PushOptions options{
      .registry = *registry,
      .auth = auth,
      .transport = &transport,
      .mirrors = settings.mirrors.value,
      .work = cache.store_root() / "tmp" / fmt::format("oci-push-{}", ::getpid()),
      .fetch = fetch,
      .jobs = settings.jobs.value,
      .note = [&](const std::string& line) { progress->note(line); }};
  auto pushed = oci::push(*lockfile, *lock_sha256, options);
  progress.reset();
  if (!pushed) return report(context, pushed.error());
  context.console.info(fmt::format(
      "uploaded {} to {}; {} already there", counted(pushed->uploaded, pushed->uploaded_bytes),
      registry->spelled, counted(pushed->present, pushed->present_bytes)));
  context.console.info(fmt::format(
      "manifest {}:{} ({}) keeps them; install with `envkit install --mirror oci://{}/{}`",
      registry->spelled, pushed->tag, pushed->manifest_digest, registry->host,
      registry->repository));
  if (context.options.json) {
    std::cout << nlohmann::json{{"registry", registry->spelled},
                                {"uploaded", pushed->uploaded},
                                {"uploaded_bytes", pushed->uploaded_bytes},
                                {"present", pushed->present},
                                {"present_bytes", pushed->present_bytes},
                                {"tag", pushed->tag},
                                {"manifest_digest", pushed->manifest_digest}}
                     .dump()
              << '\n';
  }
  return 0;
}

int run_mirror(Context& context, const MirrorFlags& flags) {
  auto settings = load_settings(context);
  if (!settings) return report(context, settings.error());
  if (!flags.mirrors.empty()) {
    if (auto applied = config::apply_flag(*settings, config::kMirrors, "--mirror", flags.mirrors);
        !applied)
      return report(context, applied.error());
  }
  if (flags.jobs) config::set_by_flag(settings->jobs, *flags.jobs);
  if (flags.oci_push.has_value() == !flags.out.empty()) {
    return report(context, Error::input("`envkit mirror` takes one of --out DIR and --oci-push "
                                        "HOST/REPO"));
  }
  if (flags.oci_push) {
    if (!flags.platforms.empty() || flags.packaging) {
      return report(context, Error::input("--oci-push takes every artifact of the lock: "
                                          "--platform and --packaging are for --out"));
    }
    auto transfer = transport_options(settings->jobs.value, flags.cacert);
    if (!transfer) return report(context, transfer.error());
    if (auto authorized = authorize_registries(*transfer, settings->mirrors.value); !authorized)
      return report(context, authorized.error());
    return run_push(context, flags, *settings, *std::move(transfer));
  }
  auto selection = selection_of(flags);
  if (!selection) return report(context, selection.error());
  auto lockfile = lock_to_mirror(context);
  if (!lockfile) return report(context, lockfile.error());

  auto transfer = transport_options(settings->jobs.value, flags.cacert);
  if (!transfer) return report(context, transfer.error());
  if (auto authorized = authorize_registries(*transfer, settings->mirrors.value); !authorized)
    return report(context, authorized.error());
  std::optional<ProgressDisplay> progress;  // the transport's warnings (plain http) go there
  transfer->on_warning = [&progress](const std::string& line) {
    if (progress) progress->note(line);
  };
  net::Transport transport(*transfer);
  progress.emplace(transport,
                   ProgressDisplay::mode_for(context.options.quiet || context.options.json));
  const auto out = flags.out.is_absolute() ? flags.out : context.options.directory / flags.out;
  const store::MirrorOptions options{
      .out = fs::absolute(out).lexically_normal(),
      .selection = *std::move(selection),
      .transport = &transport,
      .mirrors = settings->mirrors.value,
      .jobs = settings->jobs.value,
      .note = [&](const std::string& line) { progress->note(line); }};
  auto mirrored = store::mirror(*lockfile, options);
  progress.reset();
  if (!mirrored) return report(context, mirrored.error());
  print_summary(context, *mirrored);
  if (context.options.json) std::cout << report_json(*mirrored).dump() << '\n';
  return 0;
}

}  // namespace

void register_mirror(CLI::App& root, Commands& out) {
  auto flags = std::make_shared<MirrorFlags>();
  auto* mirror = root.add_subcommand(
      "mirror",
      "Download every artifact of envkit.lock into DIR/HOST/PATH, or push them to a registry, "
      "to serve as a --mirror");
  mirror->add_option("--out", flags->out, "The mirror folder (made if missing)")
      ->option_text("DIR");
  mirror
      ->add_option("--oci-push", flags->oci_push,
                   "Upload every artifact as a blob of this registry repository (HOST[:PORT]/REPO, "
                   "or oci+http://...), kept by a manifest tagged envkit-lock-<sha256>")
      ->option_text("HOST/REPO");
  mirror
      ->add_option("--platform", flags->platforms,
                   "Only this platform of the lock (repeatable; default: all)")
      ->option_text("P");
  mirror
      ->add_option("--packaging", flags->packaging,
                   "Only what `install --packaging P` fetches (default: archives and wheels)")
      ->check(CLI::IsMember(choices(config::kNvidiaPackagings)));
  mirror
      ->add_option("--mirror", flags->mirrors,
                   "Fetch https://HOST/PATH from MIRROR/HOST/PATH first (repeatable; replaces "
                   "the configured mirrors)")
      ->option_text("URL");
  mirror->add_option("--jobs,-j", flags->jobs, "Downloads at once (default: jobs, else 8)")
      ->check(CLI::Range(1, config::kMaxJobs));
  mirror
      ->add_option("--cacert", flags->cacert,
                   "CA bundle to verify servers with (instead of SSL_CERT_FILE)")
      ->option_text("FILE");
  out.push_back({mirror, [flags](Context& context) { return run_mirror(context, *flags); }});
}

}  // namespace envkit::cli
