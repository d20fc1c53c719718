// `envkit install`, `envkit list` and `envkit cache ...`: the prefix and the
// cache it is linked from.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "envkit/core/text.hpp"
#include "envkit/install/install.hpp"
#include "envkit/locking/external_check.hpp"
#include "envkit/smoke/verified.hpp"
#include "envkit/store/prefix.hpp"
#include "kernel_coverage.hpp"
#include "locking.hpp"
#include "prefix_option.hpp"
#include "progress.hpp"
#include "settings.hpp"

namespace envkit::cli {

namespace {

namespace fs = std::filesystem;

// Flags left unset fall back to the configuration (settings.hpp).
struct InstallFlags {
  bool locked = false;
  bool frozen = false;
  std::optional<fs::path> prefix;
  bool offline = false;
  bool refresh = false;
  bool reinstall = false;
  bool compile_bytecode = false;
  bool no_compile_bytecode = false;
  bool no_kernel_check = false;
  std::vector<std::string> mirrors;  // given: they replace the configured mirrors
  std::optional<int> jobs;
  std::optional<std::string> packaging;
  std::optional<std::string> link_mode;
  std::optional<fs::path> cacert;
};

// The configured settings with the install flags that were given over them.
Result<config::Settings> install_settings(const Context& context, const InstallFlags& flags) {
  auto settings = load_settings(context);
  if (!settings) return settings;
  if (!flags.mirrors.empty()) {
    if (auto applied = config::apply_flag(*settings, config::kMirrors, "--mirror", flags.mirrors);
        !applied)
      return std::move(applied).error();
  }
  if (flags.jobs) config::set_by_flag(settings->jobs, *flags.jobs);
  if (flags.packaging) config::set_by_flag(settings->packaging, *flags.packaging);
  if (flags.link_mode) config::set_by_flag(settings->link_mode, *flags.link_mode);
  if (flags.compile_bytecode) config::set_by_flag(settings->compile_bytecode, true);
  if (flags.no_compile_bytecode) config::set_by_flag(settings->compile_bytecode, false);
  return settings;
}

// The cache, for `cache info|clean|prune`.
Result<store::Cache> configured_cache(const Context& context) {
  auto settings = load_settings(context);
  if (!settings) return std::move(settings).error();
  return store::Cache(cache_dir_of(*settings));
}

// The lock to install: as it is (--frozen), checked (--locked), or brought up
// to date first. Returns an exit code when it cannot give one.
std::variant<lock::Lockfile, int> lock_for_install(Context& context, const InstallFlags& flags) {
  const auto lock_path = (context.options.directory / lock::kFileName).lexically_normal();
  auto existing = locking::read_lock(lock_path);
  if (!existing) return report(context, existing.error());
  if (!*existing && (flags.frozen || flags.locked)) {
    return report(context, Error::failed(fmt::format("{} does not exist", lock_path.string()))
                               .hint("run `envkit lock` first"));
  }
  if (*existing && flags.frozen) return **std::move(existing);
  auto project = open_project(context, {}, {.offline = flags.offline, .refresh = flags.refresh});
  if (!project) return report(context, project.error());
  const auto& database = project->database;
  const auto& inputs = project->inputs;
  if (*existing) {
    auto staleness = locking::lock_staleness(database, inputs, **existing);
    if (!staleness) return report(context, staleness.error());
    if (!staleness->stale()) return **std::move(existing);
    if (flags.locked) {
      return report(context, locking::out_of_date(lock_path, staleness->reasons)
                                 .hint("run `envkit lock`, or install it as it is with --frozen"));
    }
    // Only the manifest or the recipes make a lock stale, never this machine.
    for (const auto& reason : staleness->reasons)
      context.console.info(fmt::format("envkit.lock is out of date: {}", reason));
  }
  for (const auto& warning : inputs.warnings)
    context.console.warn(warning);
  const auto* previous = *existing ? &**existing : nullptr;
  auto attempt =
      locking::relock(database, inputs, previous, closure_resolver(context, inputs), lock_path);
  if (!attempt) return report(context, attempt.error());
  if (attempt->failure)
    return report_unsolvable(context, attempt->failure->first, attempt->failure->second);
  for (const auto& warning : attempt->warnings)
    context.console.warn(warning);
  for (const auto& note : attempt->notes)
    context.console.info("note: " + note);
  // What the lock took from this machine because it cannot download it, and why.
  for (const auto& note : locking::obtainable_notes(inputs, *attempt->lockfile))
    context.console.info("note: " + note);
  context.console.info(fmt::format("{} {}", previous ? "updated" : "wrote", lock_path.string()));
  return *std::move(attempt->lockfile);
}

// Where each package came from: {"package", "version", "from", "why"}.
nlohmann::json sources_json(const std::vector<install::SourceDecision>& decisions) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& decision : decisions) {
    out.push_back({{"package", decision.package},
                   {"version", decision.version},
                   {"from", decision.from},
                   {"why", decision.why}});
  }
  return out;
}

nlohmann::json report_json(const install::InstallReport& report) {
  return {{"prefix", report.prefix.string()},
          {"generation", report.generation},
          {"changed", report.changed},
          {"link_mode", report.link_mode},
          {"added", report.added},
          {"removed", report.removed},
          {"unchanged", report.unchanged},
          {"skipped", report.skipped},
          {"fell_back", report.fell_back},
          {"stand_ins", report.stand_ins},
          {"sources", sources_json(report.sources)},
          {"warnings", report.warnings},
          {"downloaded_bytes", report.downloaded_bytes},
          {"files", report.files}};
}

// "a, b, c, d, e and 20 more": a list kept to one line.
std::string some_of(const std::vector<std::string>& items, std::size_t shown = 5) {
  if (items.size() <= shown + 1) return text::join(items, ", ");
  const std::vector<std::string> first(items.begin(),
                                       items.begin() + static_cast<std::ptrdiff_t>(shown));
  return fmt::format("{} and {} more", text::join(first, ", "), items.size() - shown);
}

// "3 s", "2 min 5 s".
std::string duration_text(std::chrono::steady_clock::duration elapsed) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(elapsed).count();
  if (seconds < 60) return fmt::format("{} s", seconds);
  return fmt::format("{} min {} s", seconds / 60, seconds % 60);
}

// A few lines: where, how long, what changed (the CUDA stack by name, the Python
// packages counted), how much came over the network and how files reached the prefix.
void print_summary(const Context& context, const install::InstallReport& report,
                   std::chrono::steady_clock::duration elapsed) {
  for (const auto& skipped : report.skipped)
    context.console.warn(skipped);
  for (const auto& warning : report.warnings)
    context.console.warn(warning);
  // The machine's own interpreter or library in place of the lock's.
  for (const auto& stand_in : report.stand_ins)
    context.console.info("note: " + stand_in);
  const auto where = text::quoted(report.prefix.string());
  if (!report.changed) {
    context.console.info(fmt::format("{} is up to date with envkit.lock (nothing to do)", where));
    return;
  }
  context.console.info(fmt::format("installed into {} (generation {}) in {}", where,
                                   report.generation, duration_text(elapsed)));
  // Entries read "name version (build) (packaging)"; pip's are the Python packages.
  const auto show = [&](std::string_view label, const std::vector<std::string>& entries) {
    std::vector<std::string> stack;
    std::vector<std::string> python;
    for (const auto& entry : entries) {
      if (entry.ends_with(" (pip)")) {
        python.push_back(entry.substr(0, entry.size() - std::string_view(" (pip)").size()));
      } else {
        stack.push_back(entry);
      }
    }
    if (!stack.empty()) context.console.info(fmt::format("  {:<8} {}", label, some_of(stack)));
    if (!python.empty()) {
      context.console.info(fmt::format("  {:<8} {} Python packages: {}", stack.empty() ? label : "",
                                       python.size(), some_of(python)));
    }
  };
  show("added", report.added);
  show("removed", report.removed);
  show("kept", report.unchanged);
  if (report.link_mode.empty()) {
    context.console.info(fmt::format("  {} downloaded", human_bytes(report.downloaded_bytes)));
    return;
  }
  context.console.info(fmt::format(
      "  {} downloaded; {} files {} from the cache", human_bytes(report.downloaded_bytes),
      report.files, report.link_mode == "copy" ? "copied" : report.link_mode + "ed"));
}

// Whether hosts answer is kept per network for 10 minutes in the cache folder;
// --refresh asks again.
net::ReachabilityOptions reachability_options(const fs::path& cache_root,
                                              const InstallFlags& flags) {
  return {.cache_file = cache_root / "net" / "reachability.json",
          .ttl = std::chrono::seconds(600),
          .refresh = flags.refresh,
          .timeout = std::chrono::seconds(5),
          .ca_file = flags.cacert};
}

int run_install(Context& context, const InstallFlags& flags) {
  if (flags.locked && flags.frozen) {
    return report(context, Error::input("--locked and --frozen cannot be used together")
                               .hint("--locked checks the lock, --frozen skips the check"));
  }
  auto settings = install_settings(context, flags);
  if (!settings) return report(context, settings.error());
  // "auto" parses to nothing: the best mode that works.
  const auto link_mode = store::parse_link_mode(settings->link_mode.value);
  auto lockfile = lock_for_install(context, flags);
  if (const int* code = std::get_if<int>(&lockfile)) return *code;
  if (auto fits = locking::check_machine(std::get<lock::Lockfile>(lockfile), gpu::host_sources());
      !fits)
    return report(context, fits.error());
  if (auto stacks = locking::check_external_stacks(
          std::get<lock::Lockfile>(lockfile), context.options.directory,
          prefix_path(context, flags.prefix), project::TreeSearch::from_host());
      !stacks)
    return report(context, stacks.error());

  // The transport's warnings (plain http) go where the notes go, once they can.
  std::function<void(const std::string&)> warn;
  std::unique_ptr<net::Transport> transport;
  if (!flags.offline) {
    auto transfer = transport_options(settings->jobs.value, flags.cacert);
    if (!transfer) return report(context, transfer.error());
    if (auto authorized = authorize_registries(*transfer, settings->mirrors.value); !authorized)
      return report(context, authorized.error());
    transfer->on_warning = [&warn](const std::string& line) {
      if (warn) warn(line);
    };
    transport = std::make_unique<net::Transport>(*transfer);
  }
  std::optional<ProgressDisplay> progress;
  if (transport) {
    progress.emplace(*transport,
                     ProgressDisplay::mode_for(context.options.quiet || context.options.json));
  }
  const auto note = [&](const std::string& line) {
    if (progress) {
      progress->note(line);
    } else if (!context.options.quiet) {
      context.console.info(line);
    }
  };
  warn = note;
  // -v's lines: through the progress display, which keeps them clear of its bars; with
  // --json (no progress lines), straight to stderr.
  const auto detail = [&](const std::string& line) {
    if (context.options.verbosity == 0) return;
    if (progress && !context.options.json && !context.options.quiet) {
      progress->note(line);
    } else {
      context.console.detail(line);
    }
  };
  const auto cache_root = cache_dir_of(*settings);
  // The GPUs the new environment's kernels must cover (docs/doctor.md, "Kernel coverage").
  store::KernelTargets kernel_targets;
  if (!flags.no_kernel_check) {
    auto host = gpu::probe_host();
    if (!host) return report(context, host.error());
    kernel_targets = install_kernel_targets(context, *host, std::get<lock::Lockfile>(lockfile));
  }
  const install::InstallOptions options{.prefix = prefix_path(context, flags.prefix),
                                        .transport = transport.get(),
                                        .mirrors = settings->mirrors.value,
                                        .jobs = settings->jobs.value,
                                        .preferred = packaging_from(settings->packaging.value),
                                        .auto_packaging = settings->packaging.value == "auto",
                                        .reachability = reachability_options(cache_root, flags),
                                        .link_mode = link_mode,
                                        .reinstall = flags.reinstall,
                                        .compile_bytecode = settings->compile_bytecode.value,
                                        .project_dir = context.options.directory,
                                        .kernel_targets = std::move(kernel_targets),
                                        .kernel_cache_dir = cache_root,
                                        .note = note,
                                        .detail = detail};
  const store::Cache cache(cache_root);
  const auto started = std::chrono::steady_clock::now();
  auto installed = install::install(std::get<lock::Lockfile>(lockfile), cache, options);
  progress.reset();
  if (!installed) return report(context, installed.error());
  print_summary(context, *installed, std::chrono::steady_clock::now() - started);
  if (context.options.json) std::cout << report_json(*installed).dump() << '\n';
  return 0;
}

int run_list(Context& context, const std::optional<fs::path>& prefix_flag) {
  auto prefix = store::Prefix::open(prefix_path(context, prefix_flag));
  if (!prefix) return report(context, prefix.error());
  auto state = prefix->state();
  if (!state) return report(context, state.error());
  if (!*state) {
    return report(context, Error::failed(fmt::format("nothing is installed in {}",
                                                     text::quoted(prefix->path().string())))
                               .hint("run `envkit install`"));
  }
  nlohmann::json packages = nlohmann::json::array();
  std::vector<std::vector<std::string>> table = {{"name", "version", "build", "from", "files"}};
  for (const auto& package : (*state)->packages) {
    std::size_t files = 0;
    for (const auto& file : package.files)
      files += file.type == archive::EntryType::directory ? 0 : 1;
    packages.push_back({{"name", package.name},
                        {"version", package.version},
                        {"build", package.build},
                        {"packaging", package.packaging},
                        {"files", files}});
    table.push_back({package.name, package.version, package.build.empty() ? "-" : package.build,
                     package.packaging, std::to_string(files)});
  }
  // The last passing GPU smoke test (docs/smoke.md), where one was recorded.
  auto verified = smoke::read_verified(prefix->path());
  if (!verified) return report(context, verified.error());
  if (!context.options.json) {
    std::cout << text::columns(table);
    if (*verified) std::cout << "GPU smoke test " << smoke::describe(**verified) << '\n';
  }
  if (context.options.json) {
    nlohmann::json out{{"prefix", prefix->path().string()},
                       {"generation", (*state)->generation},
                       {"packages", packages}};
    out["verified"] = *verified ? nlohmann::json(smoke::describe(**verified)) : nullptr;
    std::cout << out.dump() << '\n';
  }
  return 0;
}

int run_cache_info(Context& context) {
  auto cache = configured_cache(context);
  if (!cache) return report(context, cache.error());
  auto info = cache->info();
  if (!info) return report(context, info.error());
  if (context.options.json) {
    nlohmann::json prefixes = nlohmann::json::array();
    for (const auto& prefix : info->prefixes)
      prefixes.push_back(prefix.string());
    std::cout << nlohmann::json{{"path", info->root.string()},
                                {"entries", info->entries},
                                {"bytes", info->bytes},
                                {"incomplete", info->incomplete},
                                {"prefixes", prefixes}}
                     .dump()
              << '\n';
    return 0;
  }
  std::cout << fmt::format("cache:    {}\nentries:  {} unpacked artifacts\nsize:     {}\n",
                           info->root.string(), info->entries, human_bytes(info->bytes));
  if (info->incomplete > 0) {
    std::cout << fmt::format(
        "incomplete: {} left by runs that stopped before finishing (`envkit cache clean` or "
        "the next install removes them)\n",
        info->incomplete);
  }
  for (const auto& prefix : info->prefixes)
    std::cout << fmt::format("used by:  {}\n", prefix.string());
  return 0;
}

int run_cache_clean(Context& context, bool prune) {
  auto cache = configured_cache(context);
  if (!cache) return report(context, cache.error());
  auto cleaned = prune ? cache->prune() : cache->clean();
  if (!cleaned) return report(context, cleaned.error());
  std::string notes;
  if (cleaned->incomplete > 0)
    notes += fmt::format("; {} incomplete leftover(s) removed", cleaned->incomplete);
  if (cleaned->in_use > 0)
    notes += fmt::format("; {} in use by a running envkit left alone", cleaned->in_use);
  context.console.info(fmt::format("removed {} entr{} ({}){}", cleaned->removed,
                                   cleaned->removed == 1 ? "y" : "ies", human_bytes(cleaned->bytes),
                                   notes));
  if (context.options.json) {
    std::cout << nlohmann::json{{"removed", cleaned->removed},
                                {"bytes", cleaned->bytes},
                                {"in_use", cleaned->in_use},
                                {"incomplete", cleaned->incomplete}}
                     .dump()
              << '\n';
  }
  return 0;
}

// Exit 1 when an entry is broken (CLI.md: a failure the user can act on).
int run_cache_verify(Context& context, bool repair) {
  auto cache = configured_cache(context);
  if (!cache) return report(context, cache.error());
  auto verified = cache->verify(repair);
  if (!verified) return report(context, verified.error());
  if (context.options.json) {
    nlohmann::json broken = nlohmann::json::array();
    for (const auto& entry : verified->broken) {
      broken.push_back({{"id", entry.id},
                        {"package", entry.package},
                        {"component", entry.component},
                        {"problems", entry.problems},
                        {"removed", entry.removed}});
    }
    std::cout << nlohmann::json{{"entries", verified->entries},
                                {"files", verified->files},
                                {"broken", broken},
                                {"in_use", verified->in_use}}
                     .dump()
              << '\n';
  }
  for (const auto& entry : verified->broken) {
    context.console.info(
        fmt::format("broken: {} ({}) entry {}: {}{}", entry.package, entry.component, entry.id,
                    fmt::join(entry.problems, ", "),
                    entry.removed ? "; removed, the next `envkit install` unpacks it again" : ""));
  }
  context.console.info(fmt::format("{} entr{}, {} files hashed: {}", verified->entries,
                                   verified->entries == 1 ? "y" : "ies", verified->files,
                                   verified->broken.empty()
                                       ? std::string("all match their records")
                                       : fmt::format("{} broken", verified->broken.size())));
  if (verified->broken.empty()) return 0;
  if (!repair) {
    context.console.info(
        "hint: `envkit cache verify --repair` removes the broken entries, and `envkit install "
        "--reinstall` in each prefix using them unpacks them again");
  } else if (verified->in_use > 0) {
    context.console.info(fmt::format(
        "{} broken entr{} in use by a running envkit left alone; run again when it is done",
        verified->in_use, verified->in_use == 1 ? "y" : "ies"));
  }
  return 1;
}

}  // namespace

void register_install(CLI::App& root, Commands& out) {
  auto flags = std::make_shared<InstallFlags>();
  auto* install =
      root.add_subcommand("install", "Make the prefix match envkit.lock (locking first if needed)");
  install->add_flag("--locked", flags->locked, "Fail if envkit.lock is missing or out of date");
  install->add_flag("--frozen", flags->frozen, "Install envkit.lock as it is, without solving");
  add_prefix_option(*install, flags->prefix, "Where to install (default: .envkit/env)");
  install->add_flag("--offline", flags->offline,
                    "Use the cache only (downloads and today's releases); say what is missing");
  install->add_flag("--refresh", flags->refresh,
                    "Ask again which hosts this machine reaches (answers are kept 10 minutes "
                    "per network); when it locks, read today's releases from the package index "
                    "again");
  install->add_flag("--reinstall", flags->reinstall,
                    "Place every package afresh from the cache (repairs changed files)");
  install->add_flag("--no-kernel-check", flags->no_kernel_check,
                    "Switch to the new environment even if its CUDA binaries have no kernels "
                    "for this machine's GPUs (or those envkit.lock states)");
  auto* compile = install->add_flag(
      "--compile-bytecode", flags->compile_bytecode,
      "Compile the new Python packages' .py files to .pyc (recorded in the receipts and each "
      "RECORD; default: compile-bytecode, else no)");
  install
      ->add_flag("--no-compile-bytecode", flags->no_compile_bytecode,
                 "Do not compile, whatever compile-bytecode says")
      ->excludes(compile);
  install
      ->add_option("--mirror", flags->mirrors,
                   "Fetch https://HOST/PATH from MIRROR/HOST/PATH first, or from the registry "
                   "oci://HOST/REPO as the blob of its sha256 (repeatable; replaces the "
                   "configured mirrors)")
      ->option_text("URL");
  install->add_option("--jobs,-j", flags->jobs, "Downloads at once (default: jobs, else 8)")
      ->check(CLI::Range(1, config::kMaxJobs));
  install
      ->add_option("--packaging", flags->packaging,
                   "Where NVIDIA ships both: auto (default: archives where NVIDIA's host "
                   "answers, else wheels), archive (redist) or wheel (PyPI); the other is the "
                   "fallback")
      ->check(CLI::IsMember(choices(config::kPackagings)));
  install
      ->add_option("--link-mode", flags->link_mode,
                   "How files come from the cache: reflink, hardlink or copy (default: auto, "
                   "the best that works)")
      ->check(CLI::IsMember(choices(config::kLinkModes)));
  install
      ->add_option("--cacert", flags->cacert,
                   "CA bundle to verify servers with (instead of SSL_CERT_FILE)")
      ->option_text("FILE");
  out.push_back({install, [flags](Context& context) { return run_install(context, *flags); }});

  auto list_prefix = std::make_shared<std::optional<fs::path>>();
  auto* list = root.add_subcommand("list", "Show what is installed in the prefix");
  add_prefix_option(*list, *list_prefix);
  out.push_back(
      {list, [list_prefix](Context& context) { return run_list(context, *list_prefix); }});

  auto* cache = root.add_subcommand("cache", "The content-addressed cache of unpacked artifacts");
  cache->require_subcommand(1);
  out.push_back({cache, nullptr});
  out.push_back({cache->add_subcommand("info", "Where the cache is and what it holds"),
                 [](Context& context) { return run_cache_info(context); }});
  out.push_back({cache->add_subcommand("clean", "Remove every cache entry"),
                 [](Context& context) { return run_cache_clean(context, false); }});
  out.push_back({cache->add_subcommand("prune", "Remove the entries no prefix uses"),
                 [](Context& context) { return run_cache_clean(context, true); }});
  auto repair = std::make_shared<bool>(false);
  auto* verify = cache->add_subcommand(
      "verify", "Hash every file of every entry against its record; exit 1 when one is broken");
  verify->add_flag("--repair", *repair,
                   "Remove the broken entries, so that the next install unpacks them again");
  out.push_back(
      {verify, [repair](Context& context) { return run_cache_verify(context, *repair); }});
}

}  // namespace envkit::cli
