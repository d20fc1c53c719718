#include "envkit/install/install.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <semaphore>
#include <set>

#include "envkit/build/toolchain_builder.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/pyenv/python_step.hpp"
#include "envkit/store/fill.hpp"
#include "envkit/store/generation_builder.hpp"
#include "envkit/store/kernel_cache.hpp"
#include "envkit/store/kernel_scan.hpp"
#include "envkit/store/prefix.hpp"
#include "envkit/sys/parallel.hpp"

namespace envkit::install {

// This module builds on the store: its cache, records, links and generations.
using namespace store;

namespace fs = std::filesystem;

namespace {

// xz decoders at once: each may hold a 64 MiB dictionary; three keep an
// install's memory well under 256 MiB whatever the archives' sizes.
constexpr std::ptrdiff_t kXzSlots = 3;

void note(const InstallOptions& options, const std::string& line) {
  if (options.note) options.note(line);
}

// "cudnn 9.1.0.70 (cuda12)": a package as the report names it.
std::string describe(const std::string& name, const std::string& version,
                     const std::string& build) {
  auto text = fmt::format("{} {}", name, version);
  if (!build.empty()) text += fmt::format(" ({})", build);
  return text;
}

std::string describe(const PlannedPackage& package) {
  return describe(package.name, package.version, package.build);
}

const lock::PlatformLock* platform_lock(const lock::Lockfile& lockfile, specs::Platform platform) {
  for (const auto& entry : lockfile.platforms) {
    if (entry.platform == platform) return &entry;
  }
  return nullptr;
}

// The artifacts one package needs and what became of them.
struct PackageFill {
  PlannedPackage* package = nullptr;
  std::vector<FillOutcome> outcomes;
};

// Fills every artifact of `fills` with `jobs` workers.
void fill_all(std::vector<PackageFill>& fills, const Cache& cache, const FillContext& context,
              int jobs, const InstallOptions& options) {
  struct Task {
    PackageFill* fill;
    std::size_t index;
  };
  std::vector<Task> tasks;
  for (auto& fill : fills) {
    fill.outcomes.assign(fill.package->artifacts.size(), {});
    for (std::size_t i = 0; i < fill.package->artifacts.size(); ++i)
      tasks.push_back({&fill, i});
  }
  if (tasks.empty()) return;
  // The largest first: the install takes at least as long as its biggest
  // archive, so that one should not wait behind small ones.
  std::stable_sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) {
    const auto size = [](const Task& t) {
      return t.fill->package->artifacts[t.index].size.value_or(0);
    };
    return size(a) > size(b);
  });
  std::mutex notes;
  sys::for_each_parallel(tasks.size(), jobs, [&](std::size_t i) {
    const auto& [fill, index] = tasks[i];
    const ArtifactTarget target{.package = fill->package->name,
                                .version = fill->package->version,
                                .artifact = fill->package->artifacts[index]};
    fill->outcomes[index] = fill_entry(cache, target, context);
    if (fill->outcomes[index].downloaded_bytes > 0) {
      const std::lock_guard guard(notes);
      note(options, fmt::format("unpacked {}", target.label()));
    }
  });
}

bool all_filled(const PackageFill& fill) {
  return std::all_of(fill.outcomes.begin(), fill.outcomes.end(),
                     [](const FillOutcome& outcome) { return outcome.record.has_value(); });
}

bool only_unreachable(const PackageFill& fill) {
  return std::all_of(fill.outcomes.begin(), fill.outcomes.end(), [](const FillOutcome& outcome) {
    return outcome.record || outcome.unreachable;
  });
}

Error offline_error(const std::vector<PackageFill>& fills) {
  Error error = Error::failed("--offline: some artifacts are not in the cache");
  for (const auto& fill : fills) {
    for (std::size_t i = 0; i < fill.outcomes.size(); ++i) {
      if (!fill.outcomes[i].missing_offline) continue;
      const auto& artifact = fill.package->artifacts[i];
      error.because(fmt::format("{} {}: {} ({})", fill.package->name, fill.package->version,
                                artifact.component, url::redacted(artifact.url)));
    }
  }
  return error.hint(
      "run `envkit install` once with network access (or with --mirror), then --offline works");
}

// The first failure, with a count of the others.
Error first_failure(const std::vector<PackageFill>& fills) {
  std::optional<Error> first;
  std::size_t others = 0;
  for (const auto& fill : fills) {
    for (const auto& outcome : fill.outcomes) {
      if (!outcome.error) continue;
      if (!first) {
        first = *outcome.error;
      } else {
        ++others;
      }
    }
  }
  if (others > 0) first->because(fmt::format("and {} more artifact(s) failed", others));
  return *first;
}

// The decisions as -v says them (the Python closure's wheels counted per reason)
// and what is said anyway: a packaging fallen back to (a stand-in is the summary's).
void say_sources(const SourcePlan& sources, const InstallOptions& options) {
  if (options.detail) {
    std::map<std::string, std::vector<std::string>> closure;  // why -> wheels
    for (const auto& decision : sources.decisions) {
      if (decision.from == "pip") {
        closure[decision.why].push_back(decision.package);
      } else {
        options.detail("source: " + decision_line(decision));
      }
    }
    for (const auto& [why, wheels] : closure) {
      options.detail(
          fmt::format("source: {} wheel(s) of the Python closure ({})", wheels.size(), why));
    }
  }
  for (const auto& line : sources.fell_back)
    note(options, line);
}

// The use locks of the cache entries a new generation links from, held until it is committed.
using EntriesInUse = std::vector<std::shared_ptr<sys::FileLock>>;

// Fills what the plan needs, switching a package to its other packaging when
// its first is unreachable.
Result<std::map<std::string, std::vector<EntryRecord>>> fill_plan(InstallPlan& plan,
                                                                  const Cache& cache,
                                                                  const InstallOptions& options,
                                                                  InstallReport& report,
                                                                  EntriesInUse& in_use) {
  std::counting_semaphore<> xz_slots(kXzSlots);
  const build::ToolchainBuilder source_builder;
  const FillContext context{.transport = options.transport,
                            .mirrors = options.mirrors,
                            .xz_slots = &xz_slots,
                            .source_builder = &source_builder,
                            .note = options.note};
  std::vector<PackageFill> fills;
  for (auto& package : plan.packages) {
    if (!package.unchanged) fills.push_back({.package = &package});
  }
  fill_all(fills, cache, context, options.jobs, options);

  std::vector<PackageFill> retries;
  for (auto& fill : fills) {
    if (all_filled(fill) || !only_unreachable(fill) || !fill.package->fallback) continue;
    auto& package = *fill.package;
    const auto first = package.packaging;
    package.packaging = first == Packaging::archive ? Packaging::wheel : Packaging::archive;
    std::swap(package.artifacts, *package.fallback);
    package.fallback.reset();
    report.fell_back.push_back(fmt::format("{}: installed from {}s, its {}s were unreachable",
                                           package.name, to_string(package.packaging),
                                           to_string(first)));
    note(options, report.fell_back.back());
    retries.push_back({.package = &package});
  }
  fill_all(retries, cache, context, options.jobs, options);
  for (auto& retry : retries) {
    const auto it = std::find_if(fills.begin(), fills.end(),
                                 [&](const PackageFill& f) { return f.package == retry.package; });
    *it = std::move(retry);
  }

  const bool offline = options.transport == nullptr;
  const bool missing = std::any_of(fills.begin(), fills.end(), [](const PackageFill& fill) {
    return std::any_of(fill.outcomes.begin(), fill.outcomes.end(),
                       [](const FillOutcome& outcome) { return outcome.missing_offline; });
  });
  if (offline && missing) return offline_error(fills);
  if (!std::all_of(fills.begin(), fills.end(), all_filled)) return first_failure(fills);

  std::map<std::string, std::vector<EntryRecord>> entries;
  for (auto& fill : fills) {
    for (auto& outcome : fill.outcomes) {
      report.downloaded_bytes += outcome.downloaded_bytes;
      report.warnings.insert(report.warnings.end(), outcome.warnings.begin(),
                             outcome.warnings.end());
      entries[fill.package->name].push_back(std::move(*outcome.record));
      if (outcome.in_use) in_use.push_back(std::move(outcome.in_use));
    }
  }
  return entries;
}

PackageReceipt receipt_for(const PlannedPackage& package, const std::vector<EntryRecord>& entries,
                           std::vector<FileRecord> files) {
  PackageReceipt receipt{.name = package.name,
                         .version = package.version,
                         .build = package.build,
                         .packaging = std::string(to_string(package.packaging)),
                         .files = std::move(files)};
  for (std::size_t i = 0; i < entries.size(); ++i) {
    receipt.artifacts.push_back({.component = package.artifacts[i].component,
                                 .sha256 = entries[i].sha256,
                                 .url = entries[i].url,
                                 .entry = entries[i].id,
                                 .patches = entries[i].patches});
  }
  return receipt;
}

Result<PackageReceipt> place_new(GenerationBuilder& builder, const Cache& cache,
                                 const PlannedPackage& package,
                                 const std::vector<EntryRecord>& entries) {
  std::vector<FileRecord> files;
  for (const auto& entry : entries) {
    auto placed = builder.place(package.name, cache.entry_dir(entry.id), entry.files);
    if (!placed) return std::move(placed).error();
    files.insert(files.end(), entry.files.begin(), entry.files.end());
  }
  return receipt_for(package, entries, std::move(files));
}

// An installed package that stays: from its cache entries, or, when the cache
// was cleaned since, from the current generation itself.
Result<PackageReceipt> place_unchanged(GenerationBuilder& builder, const Cache& cache,
                                       const Prefix& prefix, const PrefixState& state,
                                       const PlannedPackage& package, EntriesInUse& in_use) {
  const auto it = std::find_if(state.packages.begin(), state.packages.end(),
                               [&](const PackageReceipt& r) { return r.name == package.name; });
  const PackageReceipt& receipt = *it;
  std::vector<EntryRecord> entries;
  // A closure wheel's files are partly written per environment (RECORD,
  // scripts), and a venv's are made by Python: both are placed from the generation.
  const bool from_cache = package.provided.empty() && package.packaging != Packaging::pip &&
                          package.packaging != Packaging::venv;
  for (const auto& artifact : receipt.artifacts) {
    if (!from_cache) break;
    auto lock = cache.use_entry(artifact.entry);  // none in a read-only cache
    auto found = cache.find(artifact.entry);
    // A changed entry is made again by the next fill of it (`--reinstall`).
    if (!found || !*found || !cache.changed_files(**found).empty()) break;
    if (lock) in_use.push_back(std::make_shared<sys::FileLock>(*std::move(lock)));
    entries.push_back(std::move(**found));
  }
  if (from_cache && entries.size() == receipt.artifacts.size()) {
    for (const auto& entry : entries) {
      if (auto placed = builder.place(package.name, cache.entry_dir(entry.id), entry.files);
          !placed)
        return std::move(placed).error();
    }
  } else {
    auto placed =
        builder.place(package.name, prefix.generation_root(state.generation), receipt.files);
    if (!placed) return std::move(placed).error();
  }
  return receipt;
}

// NVIDIA's cu12 nvcc wheels carry ptxas, crt/ and nvvm/ but not nvcc itself.
std::optional<std::string> missing_nvcc(const PlannedPackage& package, const fs::path& root) {
  const bool wants_nvcc = std::any_of(
      package.artifacts.begin(), package.artifacts.end(),
      [](const specs::Artifact& artifact) { return artifact.component == "cuda_nvcc"; });
  std::error_code ignored;
  if (!wants_nvcc || fs::exists(root / "bin" / "nvcc", ignored)) return std::nullopt;
  return fmt::format(
      "{} {} from {}s has no `nvcc`: NVIDIA's wheel of cuda_nvcc carries only ptxas, crt/ and "
      "nvvm/; NVIDIA's archives carry it: `envkit install --packaging archive` where they can be "
      "downloaded (developer.download.nvidia.com, or a mirror of it with --mirror) gives a "
      "toolkit that compiles",
      package.name, package.version, to_string(package.packaging));
}

// Reads the kernels of the packages whose receipts lack them (new ones, and
// those of an envkit that did not read kernels) from the new generation, and
// remembers each artifact's by its sha256 so that the next lock knows it.
void read_kernels(const fs::path& root, std::vector<PackageReceipt>& packages,
                  const std::map<std::string, std::vector<EntryRecord>>& entries,
                  const InstallOptions& options, InstallReport& report) {
  std::vector<PackageReceipt*> unread;
  struct Candidate {
    std::size_t package;  // in `unread`
    const FileRecord* file;
  };
  std::vector<Candidate> candidates;  // file by file: CUDA's libraries are one package
  for (auto& package : packages) {
    if (package.kernels) continue;
    unread.push_back(&package);
    for (const auto& file : package.files) {
      if (may_hold_kernels(file)) candidates.push_back({unread.size() - 1, &file});
    }
  }
  std::vector<std::optional<KernelFile>> read(candidates.size());
  sys::for_each_parallel(candidates.size(), options.jobs, [&](std::size_t i) {
    read[i] = scan_kernel_file(root, *candidates[i].file);
  });
  std::vector<std::vector<KernelFile>> found(unread.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (read[i]) found[candidates[i].package].push_back(*std::move(read[i]));
  }
  for (std::size_t i = 0; i < unread.size(); ++i)
    unread[i]->kernels = package_kernels(std::move(found[i]));
  if (options.kernel_cache_dir.empty()) return;
  for (const auto* package : unread) {
    const auto& kernels = *package->kernels;
    if (kernels.coverage.empty()) continue;
    const auto entry = entries.find(package->name);
    for (std::size_t i = 0; i < package->artifacts.size(); ++i) {
      // A package of one artifact holds what it holds; of several (CUDA's
      // components), each holds what its own files do.
      const bool one = package->artifacts.size() == 1;
      if (!one && (entry == entries.end() || i >= entry->second.size())) break;
      const auto coverage =
          one ? kernels.coverage : coverage_among(kernels, entry->second[i].files);
      if (coverage.empty()) continue;
      if (auto kept =
              remember_coverage(options.kernel_cache_dir, package->artifacts[i].sha256, coverage);
          !kept) {
        report.warnings.push_back(
            fmt::format("the kernels read from {} were not kept in the cache: {}", package->name,
                        kept.error().message()));
      }
    }
  }
}

// The install gate: every package with kernels has one for each of the GPUs.
Result<void> check_kernels(const std::vector<PackageReceipt>& packages,
                           const KernelTargets& targets) {
  std::vector<std::string> gaps;
  for (const auto& verdict : judge_kernels(packages, targets)) {
    if (verdict.runs == elf::Runs::ptx_too_new || verdict.runs == elf::Runs::no_kernel)
      gaps.push_back(describe_gap(verdict, targets.driver_ptx_isa));
  }
  if (gaps.empty()) return {};
  std::vector<std::string> gpus;
  for (const auto gpu : targets.gpus)
    gpus.push_back(elf::capability_text(gpu));
  Error error = Error::failed(
      fmt::format("the new environment has no kernels for {} (compute capability {}); the previous "
                  "environment is left as it was",
                  targets.source, text::join(gpus, ", ")));
  for (auto& gap : gaps)
    error.because(std::move(gap));
  return error.hint(
      "lock builds with kernels for these GPUs (`envkit lock` on this machine, or pin a release "
      "that has them; `envkit doctor` names what would cover each), or install anyway with "
      "`envkit install --no-kernel-check` if the environment will run on other GPUs");
}

}  // namespace

Result<InstallReport> install(const lock::Lockfile& lockfile, const Cache& cache,
                              const InstallOptions& options) {
  const auto* locked = platform_lock(lockfile, options.platform);
  if (!locked) {
    const auto name = specs::to_string(options.platform);
    return Error::failed(fmt::format("envkit.lock has nothing for {}", name))
        .hint(fmt::format("run `envkit lock --platform {}`", name));
  }
  auto prefix = Prefix::open(options.prefix);
  if (!prefix) return std::move(prefix).error();
  InstallReport report{.prefix = prefix->path()};
  std::error_code ignored;
  fs::create_directories(prefix->path().parent_path(), ignored);
  auto prefix_lock =
      sys::FileLock::acquire(prefix->lock_path(), sys::FileLock::Mode::exclusive, [&] {
        note(options, fmt::format("waiting for another envkit changing {}",
                                  text::quoted(prefix->path().string())));
      });
  if (!prefix_lock) return std::move(prefix_lock).error();
  prefix->remove_stale_generations();  // what a killed install left behind

  auto state = prefix->state();
  if (!state) return std::move(state).error();
  auto plan = plan_install(*locked, *state, options.preferred, options.reinstall);
  if (!plan) return std::move(plan).error();
  report.skipped = plan->skipped;
  report.generation = *state ? (*state)->generation : 0;
  if (*state && plan->nothing_to_do()) {
    for (const auto& package : plan->packages)
      report.unchanged.push_back(describe(package));
    report.link_mode = (*state)->link_mode;
    return report;
  }

  if (options.transport) {
    if (auto writable = cache.check_writable(); !writable) return std::move(writable).error();
    // Where each package comes from, before anything is downloaded or changed.
    auto sources =
        decide_sources(*plan, *locked, cache,
                       {.mirrors = options.mirrors, .auto_packaging = options.auto_packaging},
                       machine_probe(options.reachability));
    if (!sources) return std::move(sources).error();
    say_sources(*sources, options);
    report.fell_back = std::move(sources->fell_back);
    report.stand_ins = std::move(sources->stand_ins);
    report.sources = std::move(sources->decisions);
  }
  if (auto registered = cache.register_prefix(prefix->path()); !registered && options.transport)
    return std::move(registered).error();
  // What killed runs or a full disk left before their commit point.
  if (options.transport) cache.remove_leftovers();
  // A venv's interpreter and ensurepip's wheels need no download: prepared
  // while the fill downloads, off the install's longest path.
  std::future<Result<std::vector<pyenv::PreparedVenv>>> venvs_prepared;
  if (pyenv::needs_python_step(*plan)) {
    venvs_prepared = std::async(std::launch::async, pyenv::prepare_venvs,
                                pyenv::venv_request(*plan, options.project_dir), std::cref(cache));
  }
  EntriesInUse in_use;
  auto entries = fill_plan(*plan, cache, options, report, in_use);
  std::optional<Result<std::vector<pyenv::PreparedVenv>>> venvs;
  if (venvs_prepared.valid()) venvs.emplace(venvs_prepared.get());
  if (!entries) return std::move(entries).error();
  if (venvs && !*venvs) return std::move(*venvs).error();

  const int generation = report.generation + 1;
  auto root = prefix->begin(generation);
  if (!root) return std::move(root).error();
  // A generation that fails half-built goes at once (disk full: give the space back).
  struct Discard {
    fs::path root;
    bool committed = false;
    ~Discard() {
      std::error_code ignored;
      if (!committed) fs::remove_all(root, ignored);
    }
  } discard{*root};
  GenerationBuilder builder(*root, options.link_mode);
  PrefixState next{.generation = generation,
                   .platform = std::string(specs::to_string(options.platform))};
  std::map<std::string, PackageReceipt> receipts;
  for (const auto& package : plan->packages) {
    const bool python_step_makes_it =
        package.packaging == Packaging::pip || package.packaging == Packaging::venv;
    if (python_step_makes_it && !package.unchanged) continue;  // the Python step does
    auto receipt = package.unchanged
                       ? place_unchanged(builder, cache, *prefix, **state, package, in_use)
                       : place_new(builder, cache, package, (*entries)[package.name]);
    if (!receipt) return std::move(receipt).error();
    receipts[package.name] = *std::move(receipt);
  }
  if (pyenv::needs_python_step(*plan)) {
    auto python = pyenv::run_python_step({.root = *root,
                                          .prefix = prefix->path(),
                                          .project_dir = options.project_dir,
                                          .plan = &*plan,
                                          .cache = &cache,
                                          .venvs = &**venvs,
                                          .entries = &*entries,
                                          .receipts = &receipts,
                                          .builder = &builder,
                                          .compile_bytecode = options.compile_bytecode,
                                          .note = options.note});
    if (!python) return std::move(python).error();
    report.warnings.insert(report.warnings.end(), python->warnings.begin(), python->warnings.end());
  }
  for (const auto& package : plan->packages) {
    next.packages.push_back(std::move(receipts.at(package.name)));
    (package.unchanged ? report.unchanged : report.added)
        .push_back(describe(package) + " (" + std::string(to_string(package.packaging)) + ")");
  }
  if (*state) {
    auto carried = builder.carry_untracked(prefix->generation_root(report.generation), **state);
    if (!carried) return std::move(carried).error();
  }
  for (const auto& package : plan->packages) {
    if (auto warning = missing_nvcc(package, *root)) report.warnings.push_back(*warning);
  }
  auto links = builder.finish(options.platform);
  if (!links) return std::move(links).error();
  next.links = *std::move(links);
  // Before the switch: binaries without kernels for the GPUs leave the previous generation.
  read_kernels(*root, next.packages, *entries, options, report);
  if (auto covered = check_kernels(next.packages, options.kernel_targets); !covered)
    return std::move(covered).error();
  next.link_mode = builder.link_mode();
  if (auto written = write_state(*root, next); !written) return std::move(written).error();
  if (auto committed = prefix->commit(generation); !committed) return std::move(committed).error();
  discard.committed = true;

  for (const auto& name : plan->removed) {
    const auto& packages = (*state)->packages;
    const auto it =
        std::find_if(packages.begin(), packages.end(),
                     [&](const PackageReceipt& receipt) { return receipt.name == name; });
    report.removed.push_back(it == packages.end() ? name
                                                  : describe(it->name, it->version, it->build));
  }
  report.generation = generation;
  report.changed = true;
  report.link_mode = next.link_mode;
  report.files = builder.files_placed();
  return report;
}

}  // namespace envkit::install
