// The lock pipeline called directly: the source tree's recipe database, a
// project written to a temporary folder, machine facts handed in as data, and
// a fake resolver that answers with fixed closures (as uv would from PyPI).
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "envkit/core/sha256.hpp"
#include "envkit/locking/lock_pipeline.hpp"
#include "envkit/locking/machine.hpp"
#include "override_machine.hpp"
#include "support/source_database.hpp"
#include "support/temp_dir.hpp"

namespace envkit::locking {
namespace {

const recipes::Database& database() {
  return test::source_database();
}

gpu::ProbeSources machine(std::map<std::string, std::string> variables) {
  return test::override_machine(std::move(variables));
}

LockInputs inputs_for(const test::TempDir& project, std::string_view manifest,
                      const gpu::ProbeSources& sources) {
  project.write("envkit.yaml", manifest);
  auto inputs = gather_lock_inputs(project.path(), {}, sources);
  if (!inputs) FAIL(inputs.error().to_string());
  return *std::move(inputs);
}

// A wheel as an index lists it; the hash stands for the file (a fake index).
python::ResolvedWheel wheel(std::string name, std::string version, std::string filename) {
  return {.name = std::move(name),
          .version = std::move(version),
          .url = "https://files.example/" + filename,
          .sha256 = core::sha256_hex(filename)};
}

// What PyPI serves for `torch==2.4.1`: the CUDA 12.1 build, pinning its NVIDIA wheels.
python::Closure pypi_torch_2_4_1() {
  return {
      .wheels = {wheel("numpy", "2.1.0",
                       "numpy-2.1.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"),
                 wheel("nvidia-cuda-runtime-cu12", "12.1.105",
                       "nvidia_cuda_runtime_cu12-12.1.105-py3-none-manylinux1_x86_64.whl"),
                 wheel("nvidia-cudnn-cu12", "9.1.0.70",
                       "nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl"),
                 wheel("torch", "2.4.1", "torch-2.4.1-cp312-cp312-manylinux1_x86_64.whl")},
      .resolver = "fake index"};
}

// Answers every resolution with `closure` and remembers the targets asked for.
struct FakeResolver {
  python::Closure closure;
  std::vector<python::ResolveTarget> targets;
  std::vector<std::vector<std::string>> requirements;

  ResolverFactory factory() {
    return [this]() -> Result<ClosureResolver> {
      return ClosureResolver(
          [this](const python::ResolveRequest& request,
                 const python::ResolveTarget& target) -> Result<python::Closure> {
            targets.push_back(target);
            requirements.push_back(request.requirements);
            return closure;
          });
    };
  }
};

const lock::LockedPackage& package(const lock::Lockfile& lockfile, std::string_view name) {
  const auto& packages = lockfile.platforms.front().packages;
  const auto it = std::find_if(packages.begin(), packages.end(),
                               [&](const lock::LockedPackage& p) { return p.name == name; });
  if (it == packages.end()) FAIL("the lock has no " << name);
  return *it;
}

// A factory that must not be called: it notes that it was, and fails.
ResolverFactory refusing_factory(bool& made) {
  return [&made]() -> Result<ClosureResolver> {
    made = true;
    return Error::failed("no resolver here");
  };
}

// The lock of `inputs` with `resolver`, which must succeed.
lock::Lockfile locked(const LockInputs& inputs, const ResolverFactory& resolver,
                      const lock::Lockfile* previous = nullptr) {
  auto attempt = solve_lock(database(), inputs, previous, resolver);
  if (!attempt) FAIL(attempt.error().to_string());
  if (!attempt->lockfile) FAIL("no lock: " << attempt->failure->second.summary);
  return *std::move(attempt->lockfile);
}

constexpr std::string_view kTorchFromPypi =
    "framework: torch ==2.4.1\nindexes: [https://pypi.org/simple]\n";

}  // namespace

TEST_CASE("the closure's NVIDIA wheels decide the lock's CUDA and cuDNN", "[locking]") {
  test::TempDir project;
  const auto inputs =
      inputs_for(project, kTorchFromPypi, machine({{"ENVKIT_OVERRIDE_DRIVER", "550.54.15"}}));
  FakeResolver resolver{.closure = pypi_torch_2_4_1()};
  const auto lockfile = locked(inputs, resolver.factory());
  // PyPI serves the cu121 build: the lock names it, with CUDA 12.1 and the wheels' cuDNN.
  CHECK(package(lockfile, "torch").build == "cu121");
  CHECK(package(lockfile, "cuda").version.original().starts_with("12.1."));
  CHECK(package(lockfile, "cudnn").version.original() == "9.1.0.70");
  // One CUDA runtime, one cuDNN: the closure's wheels are those components.
  const auto& closure = *lockfile.platforms.front().python;
  std::map<std::string, std::string> provides;
  for (const auto& w : closure.packages)
    provides[w.name] = w.provides;
  CHECK(provides["nvidia-cuda-runtime-cu12"] == "cuda");
  CHECK(provides["nvidia-cudnn-cu12"] == "cudnn");
  CHECK(provides["numpy"].empty());
  // Resolved for the lock's own Python, never this machine's.
  REQUIRE_FALSE(resolver.targets.empty());
  const auto& python = package(lockfile, "python").version;
  for (const auto& target : resolver.targets) {
    CHECK(target.python.major() == python.major());
    CHECK(target.python.minor() == python.minor());
    CHECK(target.platform == python::UvPlatform::linux_x86_64);
  }
  CHECK(std::find(resolver.requirements.back().begin(), resolver.requirements.back().end(),
                  "torch==2.4.1") != resolver.requirements.back().end());
}

TEST_CASE("a lock solved on one machine states what it needs of any machine", "[locking]") {
  test::TempDir project;
  const auto inputs = inputs_for(
      project, kTorchFromPypi,
      machine({{"ENVKIT_OVERRIDE_DRIVER", "550.54.15"}, {"ENVKIT_OVERRIDE_CUDA_ARCH", "8.9"}}));
  FakeResolver resolver{.closure = pypi_torch_2_4_1()};
  const auto lockfile = locked(inputs, resolver.factory());
  const auto& system = lockfile.system;
  CHECK(system.source == specs::FactSource::override_variable);
  // CUDA 12's family minimum, not the writer's 550.54.15.
  CHECK(system.driver == ">=525.60.13");
  // The writer's 8.9 is not what is recorded: the GPUs the builds have code for are.
  CHECK(system.cuda_arch.size() > 1);
  CHECK(specs::runs_on(system.cuda_arch, {8, 9}));
  // The newest manylinux tag of the closure (numpy's manylinux_2_17).
  CHECK(system.glibc == ">=2.17");

  const auto newer = machine({{"ENVKIT_OVERRIDE_DRIVER", "580.65.06"},
                              {"ENVKIT_OVERRIDE_CUDA_ARCH", "9.0"},
                              {"ENVKIT_OVERRIDE_GLIBC", "2.31"}});
  CHECK(check_machine(lockfile, newer).ok());

  const auto old_driver = check_machine(lockfile, machine({{"ENVKIT_OVERRIDE_DRIVER", "470.42.01"},
                                                           {"ENVKIT_OVERRIDE_GLIBC", "2.31"}}));
  REQUIRE_FALSE(old_driver.ok());
  CHECK(old_driver.error().message() ==
        "this machine's NVIDIA driver 470.42.01 is older than envkit.lock needs");

  const auto kepler = check_machine(lockfile, machine({{"ENVKIT_OVERRIDE_DRIVER", "550.54.15"},
                                                       {"ENVKIT_OVERRIDE_CUDA_ARCH", "3.5"},
                                                       {"ENVKIT_OVERRIDE_GLIBC", "2.31"}}));
  REQUIRE_FALSE(kepler.ok());
  CHECK(kepler.error().message().find("compute capability 3.5") != std::string::npos);

  const auto old_glibc = check_machine(lockfile, machine({{"ENVKIT_OVERRIDE_GLIBC", "2.12"}}));
  REQUIRE_FALSE(old_glibc.ok());
  CHECK(old_glibc.error().message() == "this machine's glibc 2.12 is older than envkit.lock needs");
}

TEST_CASE("closures the previous lock lends are not resolved again", "[locking]") {
  test::TempDir project;
  const auto inputs =
      inputs_for(project, kTorchFromPypi, machine({{"ENVKIT_OVERRIDE_DRIVER", "550.54.15"}}));
  FakeResolver resolver{.closure = pypi_torch_2_4_1()};
  const auto first = locked(inputs, resolver.factory());
  bool made = false;
  const auto refusing = refusing_factory(made);
  const auto second = locked(inputs, refusing, &first);
  CHECK_FALSE(made);
  CHECK(lock::write(second) == lock::write(first));
}

TEST_CASE("a framework build PyPI does not carry is ruled out before resolving", "[locking]") {
  // torch 1.8.0's plain PyPI release is the cu102 build; cu111 is only on
  // https://download.pytorch.org/whl/cu111, which envkit.yaml does not name.
  test::TempDir project;
  const auto inputs = inputs_for(project,
                                 "framework: torch ==1.8.0\nrequires: {python: \"==3.8.*\"}\n"
                                 "indexes: [https://pypi.org/simple]\n",
                                 machine({{"ENVKIT_OVERRIDE_DRIVER", "550.54.15"}}));
  auto unavailable = unavailable_builds(database(), inputs);
  REQUIRE(unavailable.ok());
  const auto cu111 = std::find_if(unavailable->begin(), unavailable->end(), [](const auto& build) {
    return build.package == "torch" && build.version == "1.8.0" && build.build == "cu111";
  });
  REQUIRE(cu111 != unavailable->end());
  CHECK(cu111->hint.find("https://download.pytorch.org/whl/cu111") != std::string::npos);
  const auto cu102 = std::find_if(unavailable->begin(), unavailable->end(),
                                  [](const auto& build) { return build.build == "cu102"; });
  CHECK(cu102 == unavailable->end());
}

TEST_CASE("a project without Python requirements never makes a resolver", "[locking]") {
  test::TempDir project;
  const auto inputs = inputs_for(project, "requires: {cuda: \"12.4.*\"}\n",
                                 machine({{"ENVKIT_OVERRIDE_DRIVER", "550.54.15"}}));
  bool made = false;
  const auto refusing = refusing_factory(made);
  const auto lockfile = locked(inputs, refusing);
  CHECK_FALSE(made);
  CHECK_FALSE(lockfile.platforms.front().python);
  CHECK(package(lockfile, "cuda").version.original().starts_with("12.4."));
}

TEST_CASE("a locked runfile names the components install places and its patches", "[locking]") {
  test::TempDir project;
  const auto inputs = inputs_for(project, "requires: {cuda: \"9.0.*\"}\n",
                                 machine({{"ENVKIT_OVERRIDE_DRIVER", "470.57.02"}}));
  bool made = false;
  const auto lockfile = locked(inputs, refusing_factory(made));
  const auto& cuda = package(lockfile, "cuda");
  CHECK(cuda.version.original() == "9.0.176");
  REQUIRE(cuda.artifacts.size() == 1);
  const auto& runfile = cuda.artifacts.front();
  CHECK(runfile.kind == specs::ArtifactKind::runfile);
  CHECK(runfile.layout == specs::Layout::cuda_runfile_nested);
  // The recipe's default components the runfile holds: no cuda_cccl before CUDA 11.
  CHECK(runfile.components == std::vector<std::string>{"cuda_cudart", "cuda_cupti", "cuda_nvcc",
                                                       "cuda_nvrtc", "libcublas", "libcufft",
                                                       "libcurand", "libcusolver", "libcusparse"});
  // Patch 1 from ../shared/upstream, 2-4 from nixpkgs, in the order NVIDIA numbered them.
  REQUIRE(runfile.patches.size() == 4);
  for (std::size_t i = 0; i < runfile.patches.size(); ++i) {
    CHECK_THAT(runfile.patches[i].url,
               Catch::EndsWith(fmt::format("/patches/{0}/cuda_9.0.176.{0}_linux-run", i + 1)));
  }
}

TEST_CASE("a setup.py or setup.cfg in python-requirements gives uv its literal requirements",
          "[locking]") {
  test::TempDir project;
  project.write("setup.py",
                "from setuptools import setup\n"
                "setup(install_requires=['torch==2.4.1', 'numpy>=1.24'])\n");
  project.write("setup.cfg", "[options]\ninstall_requires =\n    tqdm  # progress bars\n");
  const auto inputs = inputs_for(
      project, std::string(kTorchFromPypi) + "python-requirements:\n  - setup.py\n  - setup.cfg\n",
      machine({{"ENVKIT_OVERRIDE_DRIVER", "550.54.15"}}));
  FakeResolver resolver{.closure = pypi_torch_2_4_1()};
  locked(inputs, resolver.factory());
  REQUIRE_FALSE(resolver.requirements.empty());
  // Read as envkit reads them, never handed to pip as requirements files.
  const auto& asked = resolver.requirements.back();
  for (const std::string line : {"numpy>=1.24", "tqdm"}) {
    CAPTURE(line);
    CHECK(std::find(asked.begin(), asked.end(), line) != asked.end());
  }
}

}  // namespace envkit::locking

namespace envkit::locking {
namespace {

// What PyPI serves for `jax[cuda12]==0.4.26`: jaxlib, the CUDA 12 plugin, NVIDIA's wheels in
// the ranges jax's METADATA states.
python::Closure pypi_jax_cuda12_0_4_26() {
  return {
      .wheels = {wheel("jax", "0.4.26", "jax-0.4.26-py3-none-any.whl"),
                 wheel("jax-cuda12-pjrt", "0.4.26",
                       "jax_cuda12_pjrt-0.4.26-py3-none-manylinux2014_x86_64.whl"),
                 wheel("jax-cuda12-plugin", "0.4.26",
                       "jax_cuda12_plugin-0.4.26-cp312-cp312-manylinux2014_x86_64.whl"),
                 wheel("jaxlib", "0.4.26", "jaxlib-0.4.26-cp312-cp312-manylinux2014_x86_64.whl"),
                 wheel("nvidia-cuda-runtime-cu12", "12.2.140",
                       "nvidia_cuda_runtime_cu12-12.2.140-py3-none-manylinux1_x86_64.whl"),
                 wheel("nvidia-cudnn-cu12", "8.9.7.29",
                       "nvidia_cudnn_cu12-8.9.7.29-py3-none-manylinux1_x86_64.whl")},
      .resolver = "fake index"};
}

}  // namespace
}  // namespace envkit::locking

TEST_CASE("a jax build is its extra: jax[cuda12] is resolved, and its plugin names the build",
          "[locking][jax]") {
  using namespace envkit::locking;
  envkit::test::TempDir project;
  const auto inputs = inputs_for(project, "framework: jax ==0.4.26\n",
                                 machine({{"ENVKIT_OVERRIDE_DRIVER", "535.104.05"}}));
  FakeResolver resolver{.closure = pypi_jax_cuda12_0_4_26()};
  const auto lockfile = locked(inputs, resolver.factory());
  // Not `jax==0.4.26`, whose jaxlib alone sees no GPU.
  CHECK(std::find(resolver.requirements.back().begin(), resolver.requirements.back().end(),
                  "jax[cuda12]==0.4.26") != resolver.requirements.back().end());
  // The closure's runtime (12.2.140) is not read as a torch-style `cu122` build.
  CHECK(package(lockfile, "jax").build == "cuda12");
  CHECK(package(lockfile, "cuda").version.original().starts_with("12.2."));
  CHECK(package(lockfile, "cudnn").version.original() == "8.9.7.29");
}
