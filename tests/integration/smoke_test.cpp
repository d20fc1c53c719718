// `envkit smoke` end to end with the real binary: the skip without a GPU, the
// errors before anything is built, the build (host compiler fallback, cache)
// with a stand-in nvcc, and the real smoke program compiled with
// /usr/local/cuda's own nvcc, cuDNN and cuBLAS, repacked and installed.
#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "envkit/smoke/program.hpp"
#include "envkit/smoke/verified.hpp"
#include "envkit/sys/fs.hpp"
#include "envkit/sys/process.hpp"
#include "install_support.hpp"
#include "isolated_project.hpp"
#include "support/http_server.hpp"
#include "support/redist_fixture.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A project with its own home and cache (IsolatedProject); `ENVKIT_OVERRIDE_DRIVER=none`
// unless a test says otherwise.
struct SmokeProject : IsolatedProject {
  fs::path cache = dir.path() / "xdg-cache" / "envkit";  // the default under XDG_CACHE_HOME

  [[nodiscard]] sys::ProcessOutput envkit(
      std::vector<std::string> args,
      std::map<std::string, std::optional<std::string>> env = {}) const {
    env.emplace("ENVKIT_OVERRIDE_DRIVER", "none");
    return IsolatedProject::envkit(std::move(args), std::move(env));
  }
  // Installs `component` as the prefix's only package (a frozen lock), from nginx.
  void install(const FixtureComponent& component) const {
    const RedistMirror mirror(dir.path() / "www");
    const auto built = mirror.add_archive(component);
    const StaticHttpServer server(mirror.root());
    std::ofstream(root / "envkit.lock")
        << lock_text({{"cuda", "12.4.1", {lock_artifact(built, server.url(""))}}});
    const auto installed = envkit({"install", "--frozen"});
    INFO(installed.err);
    REQUIRE(installed.exit_code == 0);
  }
};

TEST_CASE("smoke without a driver skips (77) before building anything", "[cli][smoke]") {
  const SmokeProject project;
  auto r = project.envkit({"smoke"});
  CHECK(r.exit_code == 77);
  CHECK_THAT(r.err,
             Catch::Contains("no NVIDIA driver on this machine (ENVKIT_OVERRIDE_DRIVER=none)"));
  CHECK_THAT(r.err, Catch::Contains("`--cpu-only` runs the CPU half"));
  CHECK(r.out.empty());
  CHECK_FALSE(fs::exists(project.cache / "smoke"));

  r = project.envkit({"smoke", "--json"});
  CHECK(r.exit_code == 77);
  const auto out = json::parse(r.out);
  CHECK(out.at("status") == "skip");
  CHECK_THAT(out.at("reason").get<std::string>(), Catch::Contains("no NVIDIA driver"));
  for (const auto* field : {"gpu", "driver", "cuda_runtime", "cudnn", "steps", "loss_first",
                            "loss_last", "gpu_seconds", "cpu_seconds"}) {
    INFO(field);
    CHECK(out.at(field).is_null());
  }
  CHECK_FALSE(fs::exists(project.cache / "smoke"));
}

TEST_CASE("smoke in a project with nothing installed says to install", "[cli][smoke]") {
  const SmokeProject project;
  auto r = project.envkit({"smoke", "--cpu-only"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("nothing is installed in"));
  CHECK_THAT(r.err, Catch::Contains("hint: run `envkit install` first"));

  r = project.envkit({"smoke", "--cpu-only", "--json"});
  CHECK(r.exit_code == 1);
  const auto out = json::parse(r.out);
  CHECK(out.at("status") == "fail");
  CHECK_THAT(out.at("reason").get<std::string>(), Catch::Contains("nothing is installed"));
  CHECK(out.at("loss_first").is_null());
}

TEST_CASE("smoke refuses steps outside the program's range", "[cli][smoke]") {
  const SmokeProject project;
  CHECK(project.envkit({"smoke", "--steps", "0"}).exit_code == 2);
  CHECK(project.envkit({"smoke", "--steps", "1000001"}).exit_code == 2);
}

// A stand-in for CUDA 11's nvcc: refuses the default host compiler (as newer
// than GCC 6), and with `-ccbin` "compiles" a script that acts as the smoke
// program: it prints the program's JSON, or crashes when FAKE_SMOKE_CRASH is
// set. Each compile and each run is logged to $FAKE_NVCC_LOG.
constexpr std::string_view kFakeNvcc = R"(#!/bin/sh
if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 11.8, V11.8.89"; exit 0; fi
out=; ccbin=
while [ $# -gt 0 ]; do
  case "$1" in -o) out=$2; shift ;; -ccbin) ccbin=$2; shift ;; esac
  shift
done
if [ -z "$ccbin" ]; then
  echo 'host_config.h(132): error: #error -- unsupported GNU version! gcc versions later than 6 are not supported!' >&2
  exit 1
fi
echo "compile with $ccbin" >> "$FAKE_NVCC_LOG"
cat > "$out" <<'PROGRAM'
#!/bin/sh
echo "run $*" >> "$FAKE_NVCC_LOG"
if [ -n "$FAKE_SMOKE_CRASH" ]; then echo "smoke: about to crash" >&2; kill -SEGV $$; fi
echo '{"status":"pass","reason":"","gpu":null,"compute_capability":null,"driver":null,"cuda_runtime":null,"cudnn":null,"steps":200,"loss_first":1.39,"loss_last":0.09,"accuracy":1,"max_reference_error":null,"gpu_seconds":null,"cpu_seconds":0.4}'
PROGRAM
chmod +x "$out"
)";

FixtureComponent fake_toolchain() {
  return {.name = "cuda_fake",
          .version = "11.8.89",
          .files = {{.path = "bin/nvcc", .content = std::string(kFakeNvcc), .executable = true},
                    {.path = "include/cudnn.h", .content = "/* cudnn */\n"},
                    {.path = "lib/libcudnn.so.8", .content = "not a library\n"},
                    {.path = "lib/libcublas.so.11", .content = "not a library\n"},
                    {.path = "lib/libcublas.so", .symlink_target = "libcublas.so.11"}}};
}

// A folder to put first on PATH with a stand-in `g++-6`.
fs::path fake_gxx6(const fs::path& dir) {
  fs::create_directories(dir);
  const auto gxx = dir / "g++-6";
  std::ofstream(gxx) << "#!/bin/sh\necho 'g++-6 (stand-in) 6.5.0'\n";
  fs::permissions(gxx, fs::perms(0755));
  return dir;
}

TEST_CASE("smoke retries with an older g++ when nvcc refuses the default, and caches the build",
          "[cli][smoke]") {
  if (nginx_missing()) return;
  const SmokeProject project;
  project.install(fake_toolchain());
  const auto log = project.dir.path() / "nvcc.log";
  const auto tools = fake_gxx6(project.dir.path() / "tools");
  const std::map<std::string, std::optional<std::string>> env = {
      {"PATH", tools.string() + ":/usr/bin:/bin"}, {"FAKE_NVCC_LOG", log.string()}};

  auto r = project.envkit({"smoke", "--cpu-only", "--json", "--steps", "7", "--seed", "3"}, env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto out = json::parse(r.out);
  CHECK(out.at("status") == "pass");
  CHECK(out.at("binary_reused") == false);
  CHECK(out.at("host_compiler") == (tools / "g++-6").string());
  CHECK(out.at("speedup").is_null());
  CHECK_THAT(r.err,
             Catch::Contains("nvcc accepts GCC 6 at most; using " + (tools / "g++-6").string()));
  // The program got the flags, and is linked by soname where the prefix has no development link.
  CHECK_THAT(r.err, Catch::Contains("result:        PASS"));
  const auto compiled = "compile with " + (tools / "g++-6").string() + "\n";
  CHECK(read_text(log) == compiled + "run --json --steps 7 --seed 3 --cpu-only\n");
  const auto binary = fs::path(out.at("binary").get<std::string>());
  CHECK(binary.parent_path().parent_path() == project.cache / "smoke");
  CHECK(fs::exists(binary.parent_path() / "nvcc.log"));

  // The second run neither compiles nor asks nvcc to try the default compiler again.
  r = project.envkit({"smoke", "--cpu-only", "--json"}, env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  out = json::parse(r.out);
  CHECK(out.at("binary_reused") == true);
  CHECK(out.at("binary") == binary.string());
  CHECK(read_text(log) ==
        compiled + "run --json --steps 7 --seed 3 --cpu-only\n" + "run --json --cpu-only\n");

  // A program that crashes is a failure that shows its stderr.
  auto with_crash = env;
  with_crash["FAKE_SMOKE_CRASH"] = "1";
  r = project.envkit({"smoke", "--cpu-only"}, with_crash);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("the smoke program was killed by signal 11"));
  CHECK_THAT(r.err, Catch::Contains("smoke: about to crash"));

  // --framework without a Python in the prefix says so and does not fail.
  r = project.envkit({"smoke", "--cpu-only", "--framework", "--json"}, env);
  CHECK(r.exit_code == 0);
  out = json::parse(r.out);
  CHECK(out.at("framework").at("status") == "skip");
  CHECK_THAT(out.at("framework").at("reason").get<std::string>(),
             Catch::Contains("has no Python of its own"));
}

TEST_CASE("smoke --framework runs its script with the prefix's own Python", "[cli][smoke]") {
  if (nginx_missing()) return;
  if (program_missing("python3")) return;
  const auto python = sys::find_on_path("python3");
  auto toolchain = fake_toolchain();
  // The machine's Python stands in for the prefix's (which has none of torch, tensorflow, jax).
  toolchain.files.push_back({.path = "bin/python3",
                             .content = "#!/bin/sh\nexec " + python->string() + " -I \"$@\"\n",
                             .executable = true});
  const SmokeProject project;
  project.install(toolchain);
  const auto tools = fake_gxx6(project.dir.path() / "tools");
  const auto r = project.envkit({"smoke", "--cpu-only", "--framework", "--json"},
                                {{"PATH", tools.string() + ":/usr/bin:/bin"},
                                 {"FAKE_NVCC_LOG", (project.dir.path() / "log").string()}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto framework = json::parse(r.out).at("framework");
  if (framework.at("status") == "pass") {
    skip_test(SkipKind::expected,
              "the skip without a framework cannot be checked: this machine's python3 has one "
              "(it trained on the CPU)");
    return;
  }
  CHECK(framework.at("status") == "skip");
  CHECK_THAT(framework.at("reason").get<std::string>(),
             Catch::Contains("none of torch, tensorflow, jax is installed"));
  CHECK_THAT(r.err, Catch::Contains("framework:     skipped: none of torch, tensorflow, jax"));
}

TEST_CASE("the framework smoke script fails a jax that sees no GPU", "[cli][smoke][jax]") {
  if (program_missing("python3")) return;
  const auto python = sys::find_on_path("python3");
  // A stand-in jax whose only device is the CPU, as a CPU-only jaxlib (no jax-cuda12-plugin).
  TempDir fake;
  fake.write("jax/__init__.py",
             "__version__ = '0.4.26'\n"
             "class _Cpu:\n    platform = 'cpu'\n    def __str__(self): return 'TFRT_CPU_0'\n"
             "def devices(backend=None): return [_Cpu()]\n");
  // -S: not the machine's site-packages, so a torch installed there is not tried first.
  const auto ran = sys::run_process(
      {python->string(), "-S", (source_dir() / "share/envkit/smoke/framework_smoke.py").string()},
      {.env = {{"PYTHONPATH", fake.path().string()}}});
  REQUIRE(ran);
  INFO(ran->err);
  CHECK(ran->exit_code == 1);
  const auto report = json::parse(ran->out);
  CHECK(report.at("status") == "fail");
  CHECK(report.at("framework") == "jax");
  CHECK(report.at("reason") == "jax 0.4.26 sees no GPU (jax.devices() is ['TFRT_CPU_0'])");
}

TEST_CASE("smoke says which GCC to install when nvcc refuses the default and none older is there",
          "[cli][smoke]") {
  if (nginx_missing()) return;
  const SmokeProject project;
  project.install(fake_toolchain());
  const auto r = project.envkit(
      {"smoke", "--cpu-only"},
      {{"PATH", "/usr/bin:/bin"}, {"FAKE_NVCC_LOG", (project.dir.path() / "log").string()}});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("release 11.8, V11.8.89 accepts GCC 6 at most, and no older "
                                    "GCC is on PATH"));
  CHECK_THAT(r.err, Catch::Contains("apt-get install g++-6"));
  CHECK_THAT(r.err, Catch::Contains("-allow-unsupported-compiler"));
}

TEST_CASE("smoke names what the prefix lacks", "[cli][smoke]") {
  if (nginx_missing()) return;
  const SmokeProject project;
  project.install(library_component("cudart", "12.4.127"));
  const auto r = project.envkit({"smoke", "--cpu-only"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("lacks what the smoke test builds with: bin/nvcc"));
  CHECK_THAT(r.err, Catch::Contains("--packaging archive"));
  CHECK_FALSE(fs::exists(project.cache / "smoke"));
}

// ---------------------------------------------------------------- real CUDA

// The version of /usr/local/cuda's cuDNN, from its wheel's dist-info folder name
// (nvidia_cudnn_cu13-9.19.0.56.dist-info); "" where there is none.
std::string real_cudnn_version() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/local/cuda/dist-info", ec)) {
    const auto name = entry.path().filename().string();
    const auto dash = name.find('-');
    if (name.starts_with("nvidia_cudnn_cu") && dash != std::string::npos &&
        name.ends_with(".dist-info")) {
      return name.substr(dash + 1, name.size() - dash - 1 - std::string(".dist-info").size());
    }
  }
  return "";
}

// cuDNN's headers and its loader library from /usr/local/cuda, with the development link, and
// the sub-libraries named in `also` (libcudnn_graph.so.9, ...). `--cpu-only` with nvcc makes no
// cuDNN call, and cuDNN 9 loads its engine libraries (hundreds of MB) only when used, so the
// nvcc test leaves them out; envkit-smoke opens graph, ops and cnn, so its test has those.
std::optional<FixtureComponent> cudnn_loader_only(const std::vector<std::string>& also = {}) {
  const fs::path cuda = "/usr/local/cuda";
  std::error_code ec;
  const auto version = real_cudnn_version();
  if (!fs::exists(cuda / "include" / "cudnn.h", ec) ||
      !fs::exists(cuda / "lib" / "libcudnn.so.9", ec) || version.empty())
    return std::nullopt;
  FixtureComponent cudnn{.name = "cudnn", .version = version};
  for (const auto& entry : fs::directory_iterator(cuda / "include", ec)) {
    const auto name = entry.path().filename().string();
    if (name.starts_with("cudnn"))
      cudnn.files.push_back({.path = "include/" + name, .source = entry.path()});
  }
  cudnn.files.push_back({.path = "lib/libcudnn.so.9", .source = cuda / "lib" / "libcudnn.so.9"});
  cudnn.files.push_back({.path = "lib/libcudnn.so", .symlink_target = "libcudnn.so.9"});
  for (const auto& library : also) {
    if (!fs::exists(cuda / "lib" / library, ec)) return std::nullopt;
    cudnn.files.push_back({.path = "lib/" + library, .source = cuda / "lib" / library});
  }
  return cudnn;
}

// CCCL's headers (include/cccl: nv/target, cuda/std, ...), which cuda_fp16.h and so cuBLAS's
// headers need. Made here: the real_cuda_component of its wheel lists files
// /usr/local/cuda does not have (.metadata/).
std::optional<FixtureComponent> cccl_headers() {
  const fs::path cccl = "/usr/local/cuda/include/cccl";
  std::error_code ec;
  if (!fs::is_directory(cccl, ec)) return std::nullopt;
  FixtureComponent component{.name = "cuda_cccl", .version = "13.0.85"};
  for (const auto& entry : fs::recursive_directory_iterator(cccl, ec)) {
    if (!entry.is_regular_file()) continue;
    component.files.push_back(
        {.path = (fs::path("include/cccl") / entry.path().lexically_relative(cccl)).string(),
         .source = entry.path()});
  }
  return component;
}

// redistrib JSON for cuDNN (NVIDIA's shape: a per-CUDA-major variant under the platform).
fs::path write_cudnn_redistrib(const RedistMirror& mirror, const BuiltArtifact& built) {
  const json manifest = {{"release_date", "2025-10-01"},
                         {"release_label", built.version},
                         {"release_product", "cudnn"},
                         {"cudnn",
                          {{"name", "NVIDIA CUDA Deep Neural Network library"},
                           {"license", "cudnn"},
                           {"version", built.version},
                           {"linux-x86_64",
                            {{"cuda13",
                              {{"relative_path", built.relative_path},
                               {"sha256", built.sha256},
                               {"md5", "00000000000000000000000000000000"},
                               {"size", std::to_string(built.size)}}}}},
                           {"cuda_variant", {"13"}}}}};
  const auto file = mirror.root() / ("redistrib_cudnn_" + built.version + ".json");
  std::ofstream(file) << manifest.dump(4) << '\n';
  return file;
}

// envkit with minutes to spare: unpacking cuBLAS and compiling with nvcc take a while.
sys::ProcessOutput slow_envkit(const std::vector<std::string>& args,
                               std::map<std::string, std::optional<std::string>> env) {
  return run_envkit({.args = args, .env = std::move(env), .timeout = std::chrono::minutes(15)});
}

// envkit's own importer run on the mirror's redistrib manifests for `cuda` (CUDA 13.0.2) and
// `cudnn`, served by `server`; the recipe database's folder under `work`.
std::string import_redist(const RedistMirror& mirror, const std::vector<BuiltArtifact>& cuda,
                          const BuiltArtifact& cudnn, const StaticHttpServer& server,
                          const fs::path& work) {
  const auto cuda_manifest = mirror.write_redistrib("13.0.2", cuda);
  const auto cudnn_manifest = write_cudnn_redistrib(mirror, cudnn);
  const auto db = (work / "db").string();
  const auto imported =
      slow_envkit({"--recipes", db, "recipes", "import", "nvidia-redist", cuda_manifest.string(),
                   cudnn_manifest.string(), "--base-url", server.url("/")},
                  {});
  INFO(imported.err);
  REQUIRE(imported.exit_code == 0);
  return db;
}

TEST_CASE("smoke compiles the real program with /usr/local/cuda repacked into a prefix",
          "[cli][smoke][cuda][slow]") {
  auto runtime = real_cuda_component("nvidia_cuda_runtime-", "cuda_cudart");
  auto crt = real_cuda_component("nvidia_cuda_crt-", "cuda_crt");
  auto nvcc = real_cuda_component("nvidia_cuda_nvcc-", "cuda_nvcc");
  auto nvvm = real_cuda_component("nvidia_nvvm-", "libnvvm");
  auto cccl = cccl_headers();
  auto cublas = real_cuda_component("nvidia_cublas-", "libcublas");
  auto cudnn = cudnn_loader_only();
  if (!runtime || !crt || !nvcc || !nvvm || !cccl || !cublas || !cudnn) {
    skip_test(SkipKind::expected, "no CUDA 13 tree with dist-info and cuDNN under /usr/local/cuda");
    return;
  }
  if (nginx_missing()) return;
  // nvcc runs cicc from nvvm/bin/; the fixture marks only bin/ executable.
  for (auto& file : nvvm->files)
    file.executable = file.executable || file.path.starts_with("nvvm/bin/");
  const SmokeProject project;
  const auto& work = project.dir.path();
  const RedistMirror mirror(work / "www");
  std::vector<BuiltArtifact> built;
  for (const auto* component : {&*runtime, &*crt, &*cccl})
    built.push_back(mirror.add_archive(*component));
  // The compiler and cuBLAS are 800 MiB: gzip makes them in a fifth of xz's time.
  for (const auto* component : {&*nvcc, &*nvvm, &*cublas})
    built.push_back(mirror.add_archive(*component, RedistMirror::Compression::gzip));
  const auto cudnn_built = mirror.add_archive(*cudnn);
  const StaticHttpServer server(mirror.root());
  const auto db = import_redist(mirror, built, cudnn_built, server, work);
  // cuDNN 9 needs zlib, which the machine has: the test's database has no zlib to install.
  std::ofstream(project.root / "envkit.yaml")
      << "requires:\n  cuda: \"13.0\"\n  cudnn: \"9\"\nexternal:\n  zlib: \"1.3\"\n";
  const std::vector<std::string> common = {"-C", project.root.string(), "--recipes",
                                           db,   "--cache-dir",         project.cache.string()};
  auto args = common;
  args.emplace_back("install");
  const auto installed = slow_envkit(args, {{"ENVKIT_OVERRIDE_DRIVER", "580.95.05"}});
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);

  // Without a driver the GPU test skips; the CPU half compiles and trains.
  args = common;
  args.insert(args.end(), {"smoke", "--cpu-only", "--json"});
  auto r = slow_envkit(args, {{"ENVKIT_OVERRIDE_DRIVER", "none"}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto out = json::parse(r.out);
  CHECK(out.at("status") == "pass");
  CHECK(out.at("binary_reused") == false);
  CHECK(out.at("steps") == 200);
  CHECK(out.at("loss_last").get<double>() <= out.at("loss_first").get<double>() / 2);
  CHECK(out.at("accuracy").get<double>() >= 0.9);
  CHECK_THAT(r.err, Catch::Contains("compiling the smoke program with " +
                                    (project.prefix() / "bin" / "nvcc").string()));

  r = slow_envkit(args, {{"ENVKIT_OVERRIDE_DRIVER", "none"}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  out = json::parse(r.out);
  CHECK(out.at("status") == "pass");
  CHECK(out.at("binary_reused") == true);

  // Too little training fails, with the program's reason.
  args.insert(args.end(), {"--steps", "20"});
  r = slow_envkit(args, {{"ENVKIT_OVERRIDE_DRIVER", "none"}});
  CHECK(r.exit_code == 1);
  out = json::parse(r.out);
  CHECK(out.at("status") == "fail");
  CHECK(out.at("binary_reused") == true);
  CHECK_THAT(out.at("reason").get<std::string>(), Catch::Contains("loss did not halve"));

  // The program itself, as envkit cached it: a bad argument is a usage error (2).
  std::vector<fs::path> binaries;
  for (const auto& entry : fs::recursive_directory_iterator(project.cache / "smoke"))
    if (entry.path().filename() == "smoke" && entry.is_regular_file()) binaries.push_back(entry);
  REQUIRE(binaries.size() == 1);
  const auto bogus = sys::run_process({binaries.front().string(), "--bogus"});
  REQUIRE(bogus);
  CHECK(bogus->exit_code == 2);
}

}  // namespace
}  // namespace envkit::test

namespace envkit::test {
namespace {

// A prefix of /usr/local/cuda's real CUDA runtime, NVRTC, cuBLAS and cuDNN loader: what NVIDIA's
// wheels give, no nvcc. Installed from nginx through envkit's own importer; nullopt (skipped)
// where the tree or nginx is missing (a temporary project: neither copied nor moved).
struct NvrtcPrefix {
  SmokeProject project;
  std::vector<std::string> common;
};

std::unique_ptr<NvrtcPrefix> install_nvrtc_prefix(const std::string& manifest_extra) {
  auto runtime = real_cuda_component("nvidia_cuda_runtime-", "cuda_cudart");
  auto nvrtc = real_cuda_component("nvidia_cuda_nvrtc-", "cuda_nvrtc");
  auto cublas = real_cuda_component("nvidia_cublas-", "libcublas");
  auto cudnn = cudnn_loader_only({"libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9"});
  if (!runtime || !nvrtc || !cublas || !cudnn) {
    skip_test(SkipKind::expected, "no CUDA 13 tree with dist-info and cuDNN under /usr/local/cuda");
    return nullptr;
  }
  if (nginx_missing()) return nullptr;
  auto out = std::make_unique<NvrtcPrefix>();
  const auto& work = out->project.dir.path();
  const RedistMirror mirror(work / "www");
  std::vector<BuiltArtifact> built;
  for (const auto* component : {&*runtime, &*nvrtc, &*cublas})
    built.push_back(mirror.add_archive(*component, RedistMirror::Compression::gzip));
  const auto cudnn_built = mirror.add_archive(*cudnn);
  const StaticHttpServer server(mirror.root());
  const auto db = import_redist(mirror, built, cudnn_built, server, work);
  std::ofstream(out->project.root / "envkit.yaml")
      << "requires:\n  cuda: \"13.0\"\n  cudnn: \"9\"\nexternal:\n  zlib: \"1.3\"\n"
      << manifest_extra;
  out->common = {"-C",          out->project.root.string(), "--recipes", db,
                 "--cache-dir", out->project.cache.string()};
  auto args = out->common;
  args.emplace_back("install");
  const auto installed = slow_envkit(args, {{"ENVKIT_OVERRIDE_DRIVER", "580.95.05"}});
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  REQUIRE_FALSE(fs::exists(out->project.prefix() / "bin" / "nvcc"));
  return out;
}

TEST_CASE("smoke without nvcc checks the real NVRTC, cuDNN and cuBLAS up to the kernel launch",
          "[cli][smoke][cuda][slow]") {
  auto installed =
      install_nvrtc_prefix("system:\n  driver: \"580.95.05\"\n  cuda-arch: [\"9.0\", \"8.6\"]\n");
  if (!installed) return;
  auto args = installed->common;
  args.insert(args.end(), {"smoke", "--json"});
  auto r = slow_envkit(args, {{"ENVKIT_OVERRIDE_DRIVER", "none"}});
  INFO(r.err);
  REQUIRE(r.exit_code == 77);
  const auto out = json::parse(r.out);
  CHECK(out.at("status") == "skip");
  CHECK_THAT(out.at("reason").get<std::string>(),
             Catch::Contains("checked everything up to the kernel launch"));
  CHECK(out.at("compiler") == "nvrtc");
  // The kernels compiled for every GPU the lock states, with no compiler in the prefix.
  std::vector<std::string> targets;
  for (const auto& kernel : out.at("kernels")) {
    CHECK_FALSE(kernel.contains("error"));
    targets.push_back(kernel.at("target"));
  }
  CHECK(targets == std::vector<std::string>{"sm_86", "sm_90"});
  // Every CUDA library the program mapped is the prefix's, and the four it needs are there.
  const auto prefix = fs::canonical(installed->project.prefix()).string() + "/";
  std::set<std::string> names;
  for (const auto& library : out.at("libraries")) {
    const auto path = library.at("path").get<std::string>();
    INFO(path);
    CHECK(library.at("in_prefix") == true);
    CHECK(path.starts_with(prefix));
    names.insert(fs::path(path).filename().string());
  }
  for (const auto* needed :
       {"libnvrtc.so.13", "libcublas.so.13", "libcublasLt.so.13", "libcudnn.so.9"}) {
    INFO(needed);
    CHECK(names.contains(needed));
  }
  // Versions read from the libraries themselves agree with the lock.
  CHECK(out.at("versions").at("nvrtc") == "13.0");
  CHECK_THAT(r.err,
             Catch::Contains("loaded:        ") &&
                 Catch::Contains("kernels:       compiled by the prefix's NVRTC for sm_86 sm_90"));
  // Nothing was built: the NVRTC path keeps no binary.
  CHECK_FALSE(fs::exists(installed->project.cache / "smoke"));

  // --cpu-only: the same checks, then the CPU reference trains and passes.
  args.emplace_back("--cpu-only");
  r = slow_envkit(args, {{"ENVKIT_OVERRIDE_DRIVER", "none"}});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(json::parse(r.out).at("status") == "pass");
  // Neither run was on a GPU: nothing is recorded as verified.
  const auto record = smoke::verified_path(installed->project.prefix());
  CHECK_FALSE(fs::exists(record));

  // A passing GPU run's record (written as `envkit smoke` writes it on a GPU) is what `list` and
  // doctor show, for this lock; once the lock changes, doctor says it is for another one.
  const auto lock = installed->project.root / "envkit.lock";
  auto report = smoke::parse_report(
      R"({"status":"pass","reason":"","gpu":"NVIDIA H200","compute_capability":"9.0",)"
      R"("driver":"13.0","cuda_runtime":"13.0","cudnn":"9.19.0","steps":200,"loss_first":1.39,)"
      R"("loss_last":0.09,"accuracy":1,"max_reference_error":1e-7,"gpu_seconds":0.05,)"
      R"("cpu_seconds":1.5})");
  REQUIRE(report);
  REQUIRE(smoke::write_verified(
      installed->project.prefix(),
      smoke::verified_from(*report, smoke::lock_sha256(lock), "2026-11-29T05:20:00Z")));
  args = installed->common;
  args.emplace_back("list");
  r = slow_envkit(args, {});
  CHECK_THAT(r.out, Catch::Contains("GPU smoke test passed on NVIDIA H200 (compute capability "
                                    "9.0), driver CUDA 13.0, 2026-11-29T05:20:00Z"));
  args = installed->common;
  args.emplace_back("doctor");
  r = slow_envkit(args, {{"ENVKIT_OVERRIDE_DRIVER", "none"}});
  CHECK_THAT(r.out, Catch::Contains("ok    smoke     GPU smoke test passed on NVIDIA H200"));
  std::ofstream(lock, std::ios::app) << "# changed\n";
  r = slow_envkit(args, {{"ENVKIT_OVERRIDE_DRIVER", "none"}});
  CHECK_THAT(r.out, Catch::Contains("the last passing GPU smoke test was for another envkit.lock"));
}

TEST_CASE("smoke names a cuBLAS that is not the lock's CUDA", "[cli][smoke][cuda][slow]") {
  auto installed = install_nvrtc_prefix("");
  if (!installed) return;
  // A cuBLAS of another CUDA major in place of the prefix's (a hand-edited prefix).
  const auto lib = installed->project.prefix() / "lib";
  const auto blas = fs::canonical(lib / "libcublas.so.13");
  fs::remove(blas);
  fs::copy_file(lib / "libcudnn.so.9", blas);
  auto args = installed->common;
  args.insert(args.end(), {"smoke", "--json"});
  const auto r = slow_envkit(args, {{"ENVKIT_OVERRIDE_DRIVER", "none"}});
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(json::parse(r.out).at("reason").get<std::string>(),
             Catch::Contains("does not export cublasCreate_v2") &&
                 Catch::Contains("not a cuBLAS 11 or later library"));
}

}  // namespace
}  // namespace envkit::test
