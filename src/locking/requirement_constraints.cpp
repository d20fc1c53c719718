#include "envkit/locking/requirement_constraints.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>

#include "envkit/core/text.hpp"
#include "envkit/specs/package_name.hpp"

namespace envkit::locking {

namespace {

// What a name says of the CUDA stack: a PEP 440 spec on cuda and on cudnn; "" says nothing.
struct CudaStack {
  std::string cuda;
  std::string cudnn;
  bool operator==(const CudaStack&) const = default;
};

std::optional<unsigned> number_of(std::string_view digits) {
  unsigned value = 0;
  const auto* end = digits.data() + digits.size();
  const auto [stop, error] = std::from_chars(digits.data(), end, value);
  if (digits.empty() || error != std::errc{} || stop != end) return std::nullopt;
  return value;
}

std::string_view leading_digits(std::string_view text) {
  const auto end = text.find_first_not_of("0123456789");
  return text.substr(0, end == std::string_view::npos ? text.size() : end);
}

// A build for CUDA X.Y, by docs/recipes.md's framework rule: from CUDA 11 on the same
// major and at least that minor (minor-version compatibility), before 11 exactly X.Y.
std::string cuda_series_spec(unsigned major, unsigned minor) {
  if (major >= 11) return fmt::format(">={}.{},<{}", major, minor, major + 1);
  return fmt::format("=={}.{}.*", major, minor);
}

std::string cuda_major_spec(unsigned major) {
  return fmt::format(">={},<{}", major, major + 1);
}

// `118` -> 11.8, `92` -> 9.2, `102` -> 10.2: the last digit is the minor
// (PyTorch's `cu118`, CuPy's `cupy-cuda102`, NVIDIA's `-cu117`); no CUDA before 7.
std::optional<std::pair<unsigned, unsigned>> major_minor_of(std::string_view digits) {
  const auto value = number_of(digits);
  if (!value || digits.size() < 2 || digits.size() > 3 || *value / 10 < 7) return std::nullopt;
  return std::pair(*value / 10, *value % 10);
}

// jax's names: `cuda11`, `cuda12`, `cuda13` a major (its extras, jaxlib's `+cuda11`
// label); `cuda101` ... `cuda112` a major.minor (jax 0.2.11 ... 0.2.22's extras,
// `jaxlib==0.1.69+cuda111`).
std::optional<std::string> jax_cuda_spec(std::string_view digits) {
  const auto value = number_of(digits);
  if (value && digits.size() == 2 && *value >= 10) return cuda_major_spec(*value);
  if (const auto series = digits.size() == 3 ? major_minor_of(digits) : std::nullopt)
    return cuda_series_spec(series->first, series->second);
  return std::nullopt;
}

// jax's `cudnn86` -> >=8.6,<9, `cudnn805` -> >=8.0.5,<9, `cudnn91` -> >=9.1,<10: the
// cuDNN jaxlib was built with, and later releases of its major (cuDNN keeps its ABI
// within a major).
std::optional<std::string> jax_cudnn_spec(std::string_view digits) {
  if (!number_of(digits) || digits.size() < 2 || digits.size() > 3) return std::nullopt;
  const unsigned major = static_cast<unsigned>(digits[0] - '0');
  const auto patch = digits.size() == 3 ? fmt::format(".{}", digits[2]) : std::string();
  return fmt::format(">={}.{}{},<{}", major, digits[1], patch, major + 1);
}

// A jaxlib local version label (`cuda11.cudnn86`, `cuda111`), as segments.
std::optional<CudaStack> jaxlib_label_stack(const std::vector<std::string>& segments) {
  CudaStack stack;
  for (std::string_view segment : segments) {
    if (segment.starts_with("cudnn")) {
      stack.cudnn = jax_cudnn_spec(segment.substr(5)).value_or("");
    } else if (segment.starts_with("cuda")) {
      stack.cuda = jax_cuda_spec(segment.substr(4)).value_or("");
    }
  }
  if (stack.cuda.empty() && stack.cudnn.empty()) return std::nullopt;
  return stack;
}

// A jax extra, normalized (PEP 685): `cuda12`, `cuda12-pip`, `cuda12-local`,
// `cuda11-cudnn86`, `cuda-110` (jax 0.2.11, 0.2.12). Plain `cuda` changed meaning
// between releases (jax_cuda_extra_releases).
std::optional<CudaStack> jax_extra_stack(std::string_view extra) {
  if (!extra.starts_with("cuda")) return std::nullopt;
  auto rest = extra.substr(4);
  if (rest.starts_with('-')) rest.remove_prefix(1);
  const auto digits = leading_digits(rest);
  auto cuda = jax_cuda_spec(digits);
  if (!cuda) return std::nullopt;
  rest.remove_prefix(digits.size());
  if (rest.empty() || rest == "-pip" || rest == "-local") return CudaStack{*cuda, ""};
  if (!rest.starts_with("-cudnn")) return std::nullopt;
  const auto cudnn = jax_cudnn_spec(rest.substr(6));
  if (!cudnn) return std::nullopt;
  return CudaStack{*cuda, *cudnn};
}

bool has_lower_bound(specs::Specifier::Op op) {
  using Op = specs::Specifier::Op;
  return op == Op::equal || op == Op::arbitrary || op == Op::greater_equal || op == Op::greater ||
         op == Op::compatible;
}

bool has_upper_bound(specs::Specifier::Op op) {
  using Op = specs::Specifier::Op;
  return op == Op::equal || op == Op::arbitrary || op == Op::less || op == Op::less_equal ||
         op == Op::compatible;
}

// One clause on NVIDIA's CUDA runtime wheel (`==12.1.105`) as one on CUDA: the
// runtime carries its CUDA release's major.minor, so `==12.1.105` -> `==12.1.*`,
// `>=12.2.140` -> `>=12.2`, `<13.0` -> `<13.0`, `<=12.4.127` -> `<12.5`.
std::optional<std::string> runtime_clause_as_cuda(const specs::Specifier& clause) {
  if (!clause.version()) return std::nullopt;
  const auto& version = *clause.version();
  const auto major = version.major();
  const auto minor = version.minor();
  const bool beyond_minor = version.release().size() > 2 &&
                            std::any_of(version.release().begin() + 2, version.release().end(),
                                        [](std::uint64_t part) { return part != 0; });
  using Op = specs::Specifier::Op;
  switch (clause.op()) {
    case Op::equal:
    case Op::arbitrary:
      if (clause.is_wildcard() && version.release().size() == 1)
        return fmt::format("=={}.*", major);
      return fmt::format("=={}.{}.*", major, minor);
    case Op::compatible:
      return version.release().size() > 2 ? fmt::format("=={}.{}.*", major, minor)
                                          : fmt::format(">={}.{}", major, minor);
    case Op::greater_equal:
    case Op::greater:
      return fmt::format(">={}.{}", major, minor);
    case Op::less:
      return beyond_minor ? fmt::format("<{}.{}", major, minor + 1)
                          : fmt::format("<{}.{}", major, minor);
    case Op::less_equal:
      return fmt::format("<{}.{}", major, minor + 1);
    case Op::not_equal:
      break;
  }
  return std::nullopt;
}

// The CUDA a spec on the runtime wheel pins, within the major its name (or its
// pin, for CUDA 13's unsuffixed `nvidia-cuda-runtime`) gives.
std::string runtime_spec_as_cuda(const specs::VersionSpec& spec, std::optional<unsigned> major) {
  std::vector<std::string> clauses;
  bool lower = false;
  bool upper = false;
  for (const auto& clause : spec.specifiers()) {
    auto translated = runtime_clause_as_cuda(clause);
    if (!translated) continue;
    clauses.push_back(*std::move(translated));
    lower = lower || has_lower_bound(clause.op());
    upper = upper || has_upper_bound(clause.op());
  }
  if (major && !lower) clauses.push_back(fmt::format(">={}", *major));
  if (major && !upper) clauses.push_back(fmt::format("<{}", *major + 1));
  return text::join(clauses, ",");
}

// NVIDIA's wheels: `nvidia-<component>-cu11` / `-cu12` / `-cu13` are built for that
// CUDA major (`-cu117`: that series); `nvidia-cudnn-cuNN`'s version is the cuDNN's
// (`==8.9.*` -> cudnn ==8.9.*), `nvidia-cuda-runtime-cuNN`'s the CUDA's major.minor.
// From CUDA 13 the runtime is `nvidia-cuda-runtime`, without the suffix.
std::optional<CudaStack> nvidia_wheel_stack(std::string_view name, const specs::VersionSpec& spec) {
  if (!name.starts_with("nvidia-")) return std::nullopt;
  if (name == "nvidia-cuda-runtime") {
    if (spec.empty()) return std::nullopt;
    return CudaStack{runtime_spec_as_cuda(spec, std::nullopt), ""};
  }
  const auto suffix = name.rfind("-cu");
  if (suffix == std::string_view::npos || suffix <= 7) return std::nullopt;
  const auto digits = name.substr(suffix + 3);
  const auto component = name.substr(7, suffix - 7);
  const auto value = number_of(digits);
  if (!value) return std::nullopt;
  CudaStack stack;
  if (digits.size() == 2) {
    stack.cuda = cuda_major_spec(*value);
  } else if (const auto series = major_minor_of(digits)) {
    stack.cuda = cuda_series_spec(series->first, series->second);
  } else {
    return std::nullopt;
  }
  if (component == "cuda-runtime" && !spec.empty() && digits.size() == 2)
    stack.cuda = runtime_spec_as_cuda(spec, *value);
  if (component == "cudnn") stack.cudnn = spec.to_string();
  return stack;
}

// CuPy's wheels (its PyPI descriptions): `cupy-cuda11x` "for CUDA 11.2 ~ 11.x",
// `cupy-cuda12x` "for CUDA 12.x", `cupy-cuda13x` "for CUDA 13.x"; the older
// per-release ones `cupy-cuda102`, `cupy-cuda110`, `cupy-cuda92` "for CUDA 10.2" ...:
// exactly that release series.
std::optional<CudaStack> cupy_stack(std::string_view name) {
  if (!name.starts_with("cupy-cuda")) return std::nullopt;
  auto digits = name.substr(9);
  if (digits.ends_with('x')) {
    digits.remove_suffix(1);
    const auto major = number_of(digits);
    if (!major || *major < 11) return std::nullopt;
    return CudaStack{*major == 11 ? ">=11.2,<12" : cuda_major_spec(*major), ""};
  }
  const auto series = major_minor_of(digits);
  if (!series) return std::nullopt;
  return CudaStack{fmt::format("=={}.{}.*", series->first, series->second), ""};
}

// jax's CUDA plugins name their major: `jax-cuda12-plugin`, `jax-cuda13-pjrt`.
std::optional<CudaStack> jax_plugin_stack(std::string_view name) {
  if (!name.starts_with("jax-cuda")) return std::nullopt;
  const auto rest = name.substr(8);
  const auto digits = leading_digits(rest);
  const auto kind = rest.substr(digits.size());
  if (kind != "-plugin" && kind != "-pjrt") return std::nullopt;
  const auto major = number_of(digits);
  if (!major || digits.size() != 2) return std::nullopt;
  return CudaStack{cuda_major_spec(*major), ""};
}

// PyTorch's local labels: `torch==2.1.0+cu118` is the cu118 build, made for CUDA 11.8.
std::optional<CudaStack> pytorch_label_stack(const std::vector<std::string>& segments) {
  for (std::string_view segment : segments) {
    if (!segment.starts_with("cu")) continue;
    if (const auto series = major_minor_of(segment.substr(2)))
      return CudaStack{cuda_series_spec(series->first, series->second), ""};
  }
  return std::nullopt;
}

// The local label a pin names (`==2.1.0+cu118`), as its segments.
std::vector<std::string> pinned_local_label(const specs::VersionSpec& spec) {
  using Op = specs::Specifier::Op;
  for (const auto& clause : spec.specifiers()) {
    if ((clause.op() == Op::equal || clause.op() == Op::arbitrary) && clause.version() &&
        clause.version()->has_local()) {
      return clause.version()->local();
    }
  }
  return {};
}

// A name whose meaning changed between releases (`jax[cuda]`, `tensorflow[and-cuda]`):
// what each release means, read from its metadata on PyPI.
struct ReleaseGroup {
  std::string_view releases;  // space-separated
  CudaStack stack;
};

struct KnownRelease {
  specs::Version version;
  const CudaStack* stack;
};

std::vector<KnownRelease> known_releases(std::span<const ReleaseGroup> groups) {
  std::vector<KnownRelease> known;
  for (const auto& group : groups) {
    for (const auto release : text::split(group.releases, ' ')) {
      if (auto version = specs::Version::parse(release))
        known.push_back({*std::move(version), &group.stack});
    }
  }
  std::sort(known.begin(), known.end(),
            [](const KnownRelease& a, const KnownRelease& b) { return a.version < b.version; });
  return known;
}

// Whether `spec` admits a release after `newest` (1.2.3 -> 1.2.4, 1.3.0, 2.0.0), whose
// meaning the table cannot know.
bool admits_later_release(const specs::VersionSpec& spec, const specs::Version& newest) {
  const auto& release = newest.release();
  for (std::size_t i = 0; i < release.size(); ++i) {
    std::vector<std::uint64_t> later(release.begin(),
                                     release.begin() + static_cast<std::ptrdiff_t>(i));
    later.push_back(release[i] + 1);
    later.resize(std::max<std::size_t>(release.size(), 3), 0);
    if (spec.contains(specs::Version::from_release(std::move(later)))) return true;
  }
  return false;
}

// The major a stack's spec lies in (each release's meaning lies within one major).
std::optional<std::uint64_t> major_of(const std::string& spec_text) {
  const auto spec = specs::VersionSpec::parse(spec_text);
  if (!spec) return std::nullopt;
  const auto lowest = spec->lowest_admitted();
  return lowest ? std::optional(lowest->major()) : std::nullopt;
}

// The majors of `specs`, joined: `>=11,<13`; without the upper bound when later
// releases may mean a later major; "" when one of them says nothing.
std::string majors_spanned(const std::vector<const std::string*>& spec_texts, bool open) {
  std::optional<std::uint64_t> low;
  std::optional<std::uint64_t> high;
  for (const auto* text : spec_texts) {
    const auto major = text->empty() ? std::nullopt : major_of(*text);
    if (!major) return "";
    low = std::min(low.value_or(*major), *major);
    high = std::max(high.value_or(*major), *major);
  }
  if (!low) return "";
  return open ? fmt::format(">={}", *low) : fmt::format(">={},<{}", *low, *high + 1);
}

// What a version-dependent name means for the releases `spec` admits: their
// shared meaning, else the CUDA (and cuDNN) majors they span. Releases the table
// does not list (before the name existed) are not counted.
std::optional<CudaStack> stack_of_releases(const specs::VersionSpec& spec,
                                           std::span<const ReleaseGroup> groups) {
  const auto known = known_releases(groups);
  std::vector<const CudaStack*> admitted;
  for (const auto& release : known) {
    if (spec.contains(release.version)) admitted.push_back(release.stack);
  }
  if (admitted.empty()) return std::nullopt;
  const bool open = admits_later_release(spec, known.back().version);
  const bool shared = std::all_of(admitted.begin(), admitted.end(),
                                  [&](const CudaStack* stack) { return *stack == *admitted[0]; });
  if (shared && !open) return *admitted[0];
  std::vector<const std::string*> cuda;
  std::vector<const std::string*> cudnn;
  for (const auto* stack : admitted) {
    cuda.push_back(&stack->cuda);
    cudnn.push_back(&stack->cudnn);
  }
  CudaStack joined{majors_spanned(cuda, open), majors_spanned(cudnn, open)};
  if (joined.cuda.empty() && joined.cudnn.empty()) return std::nullopt;
  return joined;
}

// jax's `cuda` extra, from each release's setup.py (jax 0.2.23 ... 0.4.15, sdists) or
// wheel METADATA (0.4.16 on) on PyPI, read 2026-11: `jaxlib==V+cuda11.cudnn82` up to
// 0.3.25, `+cuda11.cudnn86` from 0.4.0, `+cuda12.cudnn89` from 0.4.26, `+cuda12.cudnn91`
// in 0.4.29, then `jax-cuda12-plugin[with_cuda]` (the CUDA 12 plugin) from 0.4.30 to
// 0.12.0.1, the newest then. Releases before 0.2.23 have no `cuda` extra.
const std::vector<ReleaseGroup>& jax_cuda_extra_releases() {
  static const std::vector<ReleaseGroup> groups{
      {"0.2.23 0.2.24 0.2.25 0.2.26 0.2.27 0.2.28 0.3.0 0.3.1 0.3.2 0.3.3 0.3.4 0.3.5 0.3.6 "
       "0.3.7 0.3.8 0.3.9 0.3.10 0.3.11 0.3.12 0.3.13 0.3.14 0.3.15 0.3.16 0.3.17 0.3.18 "
       "0.3.19 0.3.20 0.3.21 0.3.22 0.3.23 0.3.24 0.3.25",
       *jaxlib_label_stack({"cuda11", "cudnn82"})},
      {"0.4.0 0.4.1 0.4.2 0.4.3 0.4.4 0.4.5 0.4.6 0.4.7 0.4.8 0.4.9 0.4.10 0.4.11 0.4.12 "
       "0.4.13 0.4.14 0.4.15 0.4.16 0.4.17 0.4.18 0.4.19 0.4.20 0.4.21 0.4.22 0.4.23 0.4.24 "
       "0.4.25",
       *jaxlib_label_stack({"cuda11", "cudnn86"})},
      {"0.4.26 0.4.27 0.4.28", *jaxlib_label_stack({"cuda12", "cudnn89"})},
      {"0.4.29", *jaxlib_label_stack({"cuda12", "cudnn91"})},
      {"0.4.30 0.4.31 0.4.32 0.4.33 0.4.34 0.4.35 0.4.36 0.4.37 0.4.38 0.5.0 0.5.1 0.5.2 "
       "0.5.3 0.6.0 0.6.1 0.6.2 0.7.0 0.7.1 0.7.2 0.8.0 0.8.1 0.8.2 0.8.3 0.9.0 0.9.0.1 "
       "0.9.1 0.9.2 0.10.0 0.10.1 0.10.2 0.11.0 0.11.1 0.11.2 0.12.0 0.12.0.1",
       *jax_plugin_stack("jax-cuda12-plugin")},
  };
  return groups;
}

CudaStack tensorflow_pins(std::string_view runtime, std::string_view runtime_spec,
                          std::string_view cudnn, std::string_view cudnn_spec) {
  const auto runtime_stack =
      nvidia_wheel_stack(runtime, specs::VersionSpec::parse(runtime_spec).value());
  const auto cudnn_stack = nvidia_wheel_stack(cudnn, specs::VersionSpec::parse(cudnn_spec).value());
  return {runtime_stack->cuda, cudnn_stack->cudnn};
}

// tensorflow's `and-cuda` extra (from 2.14), from each release's wheel METADATA on
// PyPI, read 2026-11: the NVIDIA runtime and cuDNN wheels it pins.
const std::vector<ReleaseGroup>& tensorflow_and_cuda_releases() {
  static const std::vector<ReleaseGroup> groups{
      {"2.14.0 2.14.1",
       tensorflow_pins("nvidia-cuda-runtime-cu11", "==11.8.89", "nvidia-cudnn-cu11", "==8.7.0.84")},
      {"2.15.0 2.15.1", tensorflow_pins("nvidia-cuda-runtime-cu12", "==12.2.140",
                                        "nvidia-cudnn-cu12", "==8.9.4.25")},
      {"2.16.1 2.16.2 2.17.0 2.17.1", tensorflow_pins("nvidia-cuda-runtime-cu12", "==12.3.101",
                                                      "nvidia-cudnn-cu12", "==8.9.7.29")},
      {"2.18.0 2.18.1 2.19.0 2.19.1",
       tensorflow_pins("nvidia-cuda-runtime-cu12", "==12.5.82", "nvidia-cudnn-cu12", "==9.3.0.75")},
      {"2.20.0 2.21.0", tensorflow_pins("nvidia-cuda-runtime-cu12", "<13.0,>=12.5.82",
                                        "nvidia-cudnn-cu12", "<10.0,>=9.3.0.75")},
  };
  return groups;
}

// What one requirement's name, extras and pin say of the CUDA stack; several
// stacks when several extras name one.
Result<std::vector<CudaStack>> stacks_of(const project::Requirement& requirement) {
  const auto name = specs::canonical_package_name(requirement.name);
  std::vector<CudaStack> stacks;
  const auto add = [&](std::optional<CudaStack> stack) {
    if (stack) stacks.push_back(*std::move(stack));
  };
  const auto spec = [&]() { return requirement.version_spec(); };
  if (name == "jax") {
    for (const auto& written : requirement.extras) {
      const auto extra = specs::canonical_package_name(written);
      if (extra != "cuda") {
        add(jax_extra_stack(extra));
        continue;
      }
      auto pinned = spec();
      if (!pinned) return std::move(pinned).error();
      add(stack_of_releases(*pinned, jax_cuda_extra_releases()));
    }
  } else if (name == "tensorflow") {
    for (const auto& extra : requirement.extras) {
      if (specs::canonical_package_name(extra) != "and-cuda") continue;
      auto pinned = spec();
      if (!pinned) return std::move(pinned).error();
      add(stack_of_releases(*pinned, tensorflow_and_cuda_releases()));
    }
  } else if (name == "jaxlib" || name == "torch" || name == "torchvision" || name == "torchaudio") {
    auto pinned = spec();
    if (!pinned) return std::move(pinned).error();
    const auto label = pinned_local_label(*pinned);
    add(name == "jaxlib" ? jaxlib_label_stack(label) : pytorch_label_stack(label));
  } else if (name.starts_with("nvidia-")) {
    auto pinned = spec();
    if (!pinned) return std::move(pinned).error();
    add(nvidia_wheel_stack(name, *pinned));
  } else {
    add(cupy_stack(name));
    add(jax_plugin_stack(name));
  }
  return stacks;
}

// The requirement as the line writes it, without its marker.
std::string shown_text(const project::Requirement& requirement) {
  std::string_view text = requirement.written;
  if (!requirement.marker.empty()) {
    if (const auto semicolon = text.rfind(';'); semicolon != std::string_view::npos)
      text = text.substr(0, semicolon);
  }
  return std::string(text::trim(text));
}

std::string location_of(const SourceLocation& where) {
  return where.line > 0 ? fmt::format("{}:{}", where.file, where.line) : where.file;
}

}  // namespace

Result<std::vector<solve::Requirement>> cuda_requirements_of(
    const project::Requirement& requirement) {
  auto stacks = stacks_of(requirement);
  if (!stacks) return std::move(stacks).error();
  const solve::WrittenAt written_at{location_of(requirement.where), shown_text(requirement)};
  std::vector<solve::Requirement> out;
  const auto add = [&](std::string_view package, const std::string& spec_text) {
    if (spec_text.empty()) return;
    auto spec = specs::VersionSpec::parse(spec_text);
    if (!spec) return;
    const auto same = [&](const solve::Requirement& r) {
      return r.package == package && r.spec.to_string() == spec->to_string();
    };
    if (std::any_of(out.begin(), out.end(), same)) return;  // `jax[cuda12,cuda12-pip]`
    out.push_back({.package = std::string(package),
                   .spec = *std::move(spec),
                   .origin = std::string(kRequirementFileOrigin),
                   .written_at = written_at});
  };
  for (const auto& stack : *stacks) {
    add("cuda", stack.cuda);
    add("cudnn", stack.cudnn);
  }
  return out;
}

}  // namespace envkit::locking
