#include "envkit/project/requirement.hpp"

#include <catch2/catch.hpp>

namespace {

using envkit::SourceLocation;
namespace project = envkit::project;

const SourceLocation kLine3{"requirements.txt", 3, 1};

project::Requirement pep508(std::string_view text) {
  auto requirement = project::parse_pep508(text, kLine3);
  INFO(text);
  REQUIRE(requirement.ok());
  return std::move(requirement).value();
}

std::string normalized_spec(const project::Requirement& requirement) {
  auto spec = requirement.version_spec();
  REQUIRE(spec.ok());
  return spec->to_string();
}

}  // namespace

TEST_CASE("PEP 508: name and version", "[project]") {
  const auto r = pep508("tensorflow-gpu==1.6.0");
  CHECK(r.name == "tensorflow-gpu");
  CHECK(r.spec == "==1.6.0");
  CHECK(r.extras.empty());
  CHECK_FALSE(r.url.has_value());
  CHECK(r.marker.empty());
  CHECK(r.written == "tensorflow-gpu==1.6.0");
  CHECK(r.where.to_string() == "requirements.txt:3:1");
  CHECK(r.known_package() == "tensorflow-gpu");
  CHECK(normalized_spec(r) == "==1.6.0");
}

TEST_CASE("PEP 508: a range, spaces, parentheses", "[project]") {
  CHECK(pep508("torch>=2.1,<2.2").spec == ">=2.1,<2.2");
  CHECK(pep508("torch >= 2.1 , < 2.2").spec == ">= 2.1 , < 2.2");
  CHECK(normalized_spec(pep508("torch >= 2.1 , < 2.2")) == "<2.2,>=2.1");
  CHECK(pep508("torch (>=2.1,<2.2)").spec == ">=2.1,<2.2");
  CHECK(pep508("numpy").spec.empty());
  CHECK(normalized_spec(pep508("numpy")).empty());
}

TEST_CASE("PEP 508: extras and markers", "[project]") {
  const auto tf = pep508("tensorflow[and-cuda]==2.15 ; python_version >= \"3.9\"");
  CHECK(tf.name == "tensorflow");
  CHECK(tf.extras == std::vector<std::string>{"and-cuda"});
  CHECK(tf.spec == "==2.15");
  CHECK(tf.marker == "python_version >= \"3.9\"");

  // As PyPI's torch 2.1-2.5 METADATA writes its NVIDIA pins: a space between `)` and `;`.
  const auto nvrtc = pep508(
      "nvidia-cuda-nvrtc-cu12 (==12.1.105) ; platform_system == \"Linux\" and "
      "platform_machine == \"x86_64\"");
  CHECK(nvrtc.spec == "==12.1.105");
  CHECK(nvrtc.marker == "platform_system == \"Linux\" and platform_machine == \"x86_64\"");

  const auto jax = pep508("jax[cuda12, tpu]>=0.4.20;sys_platform=='linux'");
  CHECK(jax.extras == std::vector<std::string>{"cuda12", "tpu"});
  CHECK(jax.spec == ">=0.4.20");
  CHECK(jax.marker == "sys_platform=='linux'");
}

TEST_CASE("PEP 508: a URL requirement names its package and no version", "[project]") {
  const auto r = pep508(
      "torch @ "
      "https://download.pytorch.org/whl/cu121/torch-2.1.0%2Bcu121-cp310-cp310-linux_x86_64.whl "
      "; sys_platform == 'linux'");
  CHECK(r.name == "torch");
  CHECK(r.url ==
        "https://download.pytorch.org/whl/cu121/torch-2.1.0%2Bcu121-cp310-cp310-linux_x86_64.whl");
  CHECK(r.marker == "sys_platform == 'linux'");
  CHECK(normalized_spec(r).empty());
}

TEST_CASE("PEP 508: aliases resolve to envkit's package", "[project]") {
  CHECK(pep508("PyTorch==2.1.0").known_package() == "torch");
  CHECK(pep508("tensorflow_gpu==1.6.0").known_package() == "tensorflow-gpu");
  CHECK_FALSE(pep508("numpy").known_package().has_value());
}

TEST_CASE("PEP 508: malformed requirements name the column", "[project]") {
  const auto no_name = project::parse_pep508("==1.0", kLine3);
  REQUIRE_FALSE(no_name.ok());
  CHECK(no_name.error().headline() ==
        "requirements.txt:3:1: expected a package name in requirement `==1.0`");

  const auto unclosed = project::parse_pep508("jax[cuda12>=0.4", {"requirements.txt", 7, 5});
  REQUIRE_FALSE(unclosed.ok());
  CHECK(unclosed.error().headline() ==
        "requirements.txt:7:8: `[` without a closing `]` in requirement `jax[cuda12>=0.4`");

  const auto stray = project::parse_pep508("torch==2.1 $", kLine3);
  REQUIRE_FALSE(stray.ok());
  CHECK(stray.error().headline() ==
        "requirements.txt:3:12: unexpected `$` in requirement `torch==2.1 $`");
  CHECK(stray.error().code() == envkit::ErrorCode::input);
}

TEST_CASE("a version that is not PEP 440 is an error at the requirement", "[project]") {
  const auto r = pep508("torch==2.1.x");
  const auto spec = r.version_spec();
  REQUIRE_FALSE(spec.ok());
  CHECK(spec.error().headline() ==
        "requirements.txt:3:1: cannot read the version constraint `==2.1.x` of `torch`");
  CHECK(spec.error().causes().size() == 1);
}

TEST_CASE("conda match specs", "[project]") {
  const auto parse = [](std::string_view text) {
    auto requirement = project::parse_conda_spec(text, {"environment.yml", 5, 5});
    REQUIRE(requirement.ok());
    return std::move(requirement).value();
  };
  const auto pytorch = parse("pytorch=2.1");
  CHECK(pytorch.name == "pytorch");
  CHECK(pytorch.spec == "=2.1");
  CHECK(pytorch.known_package() == "torch");
  CHECK(normalized_spec(pytorch) == "==2.1.*");

  const auto channel = parse("conda-forge::pytorch");
  CHECK(channel.name == "pytorch");
  CHECK(channel.spec.empty());

  const auto build = parse("pytorch::pytorch=2.1.0=py3.10_cuda12.1_cudnn8.9.2_0");
  CHECK(build.name == "pytorch");
  CHECK(normalized_spec(build) == "==2.1.0");

  CHECK(normalized_spec(parse("tensorflow-gpu==1.6.0")) == "==1.6.0");
  CHECK(normalized_spec(parse("python=3.6")) == "==3.6.*");
  CHECK(normalized_spec(parse("python>=3.9,<3.12")) == "<3.12,>=3.9");
  CHECK(parse("python >=3.9").spec == ">=3.9");
}

TEST_CASE("conda constraints in PEP 440", "[project]") {
  CHECK(project::conda_to_pep440("").value().empty());
  CHECK(project::conda_to_pep440("=2.1").value() == "==2.1.*");
  // A full release is exact (`python=3.8.5` is Python 3.8.5), a series stays a series.
  CHECK(project::conda_to_pep440("=2.1.0").value() == "==2.1.0");
  CHECK(project::conda_to_pep440("=3.8.5").value() == "==3.8.5");
  CHECK(project::conda_to_pep440("=3.7").value() == "==3.7.*");
  CHECK(project::conda_to_pep440("=2.1.0.*").value() == "==2.1.0.*");
  CHECK(project::conda_to_pep440("=2.1.*").value() == "==2.1.*");
  CHECK(project::conda_to_pep440("=2.1.0=py3.10_cuda12.1_cudnn8.9.2_0").value() == "==2.1.0");
  CHECK(project::conda_to_pep440("==1.6.0").value() == "==1.6.0");
  CHECK(project::conda_to_pep440("2.1.0").value() == "==2.1.0");
  CHECK(project::conda_to_pep440("2.1.0 py310_0").value() == "==2.1.0");
  CHECK(project::conda_to_pep440("2.1*").value() == "==2.1.*");
  CHECK(project::conda_to_pep440(">=2.1,<2.2").value() == ">=2.1,<2.2");
  CHECK(project::conda_to_pep440("!=2.0*,>=1.13").value() == "!=2.0.*,>=1.13");

  const auto either = project::conda_to_pep440("2.1|2.2");
  REQUIRE_FALSE(either.ok());
  CHECK(either.error().message() == "envkit cannot read either-or constraints such as `2.1|2.2`");
}

TEST_CASE("Poetry constraints in PEP 440", "[project]") {
  const auto poetry = [](std::string_view text) {
    auto pep440 = project::poetry_to_pep440(text);
    INFO(text);
    REQUIRE(pep440.ok());
    return std::move(pep440).value();
  };
  CHECK(poetry("^2.1") == ">=2.1,<3");
  CHECK(poetry("^2.1.0") == ">=2.1.0,<3");
  CHECK(poetry("^0.4.20") == ">=0.4.20,<0.5");
  CHECK(poetry("^0.0.3") == ">=0.0.3,<0.0.4");
  CHECK(poetry("^0.0") == ">=0.0,<0.1");
  CHECK(poetry("^0") == ">=0,<1");
  CHECK(poetry("^3.8") == ">=3.8,<4");
  CHECK(poetry("~2.1") == ">=2.1,<2.2");
  CHECK(poetry("~2.1.3") == ">=2.1.3,<2.2");
  CHECK(poetry("~2") == ">=2,<3");
  CHECK(poetry("~=2.1") == "~=2.1");
  CHECK(poetry("2.1.*") == "==2.1.*");
  CHECK(poetry("*") == "");
  CHECK(poetry("2.1.0") == "==2.1.0");
  CHECK(poetry("==2.1.0") == "==2.1.0");
  CHECK(poetry(">=2.1,<2.2") == ">=2.1,<2.2");
  CHECK(poetry(">= 2.1, < 2.2") == ">=2.1,<2.2");
  CHECK(poetry(">=2.1 <2.2") == ">=2.1,<2.2");

  CHECK_FALSE(project::poetry_to_pep440("^2.1 || ^3.0").ok());
  const auto bad = project::poetry_to_pep440("^two");
  REQUIRE_FALSE(bad.ok());
}

TEST_CASE("Poetry and conda requirements read their own dialect", "[project]") {
  project::Requirement torch;
  torch.name = "torch";
  torch.spec = "^2.1";
  torch.dialect = project::SpecDialect::poetry;
  CHECK(normalized_spec(torch) == "<3,>=2.1");
  torch.spec = "~2.1";
  CHECK(normalized_spec(torch) == "<2.2,>=2.1");
}
