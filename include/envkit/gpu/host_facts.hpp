#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "envkit/specs/platform.hpp"
#include "envkit/specs/version.hpp"

namespace envkit::gpu {

// Where one host fact came from, so a reader can tell a probe from an override.
struct Provenance {
  enum class Kind : std::uint8_t {
    override_variable,  // ENVKIT_OVERRIDE_DRIVER / ENVKIT_OVERRIDE_CUDA_ARCH
    sys_file,           // /sys/module/nvidia/version (or ENVKIT_SYS_DRIVER_VERSION)
    proc_file,          // /proc/driver/nvidia/version (or ENVKIT_PROC_DRIVER_VERSION)
    libcuda,            // the CUDA driver library, libcuda.so.1, asked in a child process
    nvidia_smi,
    nothing_found,  // every source was asked and none knew
  };
  Kind kind = Kind::nothing_found;
  // The variable, the file read, the library or the command; for nothing_found,
  // what was asked.
  std::string where;

  // For messages: `ENVKIT_OVERRIDE_DRIVER`, `/sys/module/nvidia/version`,
  // `libcuda.so.1`, `nvidia-smi`, or, for nothing_found,
  // `checked /sys/module/nvidia/version, /proc/driver/nvidia/version, nvidia-smi`.
  [[nodiscard]] std::string to_string() const;
};

// Windows Subsystem for Linux. WSL 2 reaches the GPU through the Windows driver:
// /dev/dxg (no /dev/nvidia*, no nvidia kernel module, no /proc/driver/nvidia),
// with libcuda.so.1 and nvidia-smi under /usr/lib/wsl/lib. The driver is the
// Windows one; a Linux driver installed inside WSL breaks it.
struct Wsl {
  std::string evidence;     // `/proc/version names Microsoft`, `/dev/dxg exists`
  bool gpu_device = false;  // /dev/dxg exists: WSL 2 with GPU support (WSL 1 has none)
};

struct Gpu {
  std::optional<std::string> name;  // absent when only the capability is known (an override)
  specs::ComputeCapability compute_capability;
};

// What envkit knows about this machine's NVIDIA stack, each fact with its source.
struct HostFacts {
  std::optional<specs::Version> driver;  // absent: no driver; original() keeps `450.80.02`
  Provenance driver_source;
  // The newest CUDA the driver supports (cuDriverGetVersion: 12040 is `12.4`).
  // Absent when libcuda did not say, or when ENVKIT_OVERRIDE_DRIVER replaces the
  // machine's driver (driver_cuda_source then names the override).
  std::optional<specs::Version> driver_cuda;
  Provenance driver_cuda_source;
  std::vector<Gpu> gpus;
  Provenance gpus_source;
  // Why a source that was asked gave no answer (nvidia-smi failed, output not
  // understood). Informational: a host without a GPU is not an error.
  std::vector<std::string> notes;
  std::optional<Wsl> wsl;  // nullopt: not WSL
};

}  // namespace envkit::gpu
