#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/error.hpp"
#include "envkit/core/result.hpp"
#include "envkit/specs/version_spec.hpp"

namespace envkit::project {

// How a requirement's version constraint is written.
enum class SpecDialect : std::uint8_t {
  pep440,  // PEP 508 strings, requires-python: `>=2.1,<2.2`, `==1.6.0`
  poetry,  // [tool.poetry.dependencies]: `^2.1`, `~2.1`, `2.1.*`, `*`, `2.1.0`
  conda,   // environment.yml: `=2.1`, `=2.1.0=py3.10_cuda12.1_0`, `>=2.1`
};

// One package a project file asks for, as written there.
struct Requirement {
  std::string name;                 // as written: `tensorflow_gpu`, `pytorch`, `jax`
  std::vector<std::string> extras;  // `jax[cuda12]` -> {"cuda12"}
  std::string spec;                 // the version constraint in `dialect`; "" = any version
  SpecDialect dialect = SpecDialect::pep440;
  // `torch @ https://...`, or Poetry's `git =`/`path =`/`url =`: a source and no version.
  std::optional<std::string> url;
  std::string marker;    // after `;`, as written
  std::string written;   // the whole requirement as written, for messages
  SourceLocation where;  // file:line:column where it starts

  // envkit's canonical name for it (`PyTorch` -> `torch`), nullopt when not a package it knows.
  [[nodiscard]] std::optional<std::string> known_package() const;
  // The constraint in PEP 440 (empty: any version); errors name `where`.
  [[nodiscard]] Result<specs::VersionSpec> version_spec() const;
};

// A PEP 508 requirement: `tensorflow[and-cuda]==2.15 ; python_version >= "3.9"`,
// `torch @ https://...`, `torch (>=2.1)`. `where` is the place of its first
// character; an error points at the column where the text stops making sense.
// The version constraint is kept as text: it is read (version_spec()) only for
// the packages envkit cares about.
[[nodiscard]] Result<Requirement> parse_pep508(std::string_view text, SourceLocation where);

// A conda match spec from environment.yml: `pytorch=2.1`, `conda-forge::pytorch`,
// `pytorch=2.1.0=py3.10_cuda12.1_cudnn8.9.2_0`, `python>=3.9`.
[[nodiscard]] Result<Requirement> parse_conda_spec(std::string_view text, SourceLocation where);

// Poetry's constraint syntax in PEP 440: `^2.1` -> `>=2.1,<3`, `~2.1` -> `>=2.1,<2.2`,
// `2.1.*` -> `==2.1.*`, `2.1.0` -> `==2.1.0`, `*` -> "".
[[nodiscard]] Result<std::string> poetry_to_pep440(std::string_view constraint);

// A conda version constraint in PEP 440: `=2.1` -> `==2.1.*` (conda's `=` is a
// prefix match), `=3.8.5` -> `==3.8.5` (a full release: the prefix adds nothing
// that is published), `=2.1.0=<build>` -> `==2.1.0`, `2.1.0` -> `==2.1.0`,
// `>=2.1,<2.2` as is.
[[nodiscard]] Result<std::string> conda_to_pep440(std::string_view constraint);

}  // namespace envkit::project
