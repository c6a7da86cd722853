// Policies per child kind (sandbox_policy.h): the explicit environment, the read-only
// paths each backend needs (PoCL: the system and its linker; the Python runner: its
// interpreter's prefixes and sys.path), devices, limits, and the layer switches.
// Test: ctest -R harness_sandbox.
#include "worker/harness/sandbox_policy.h"

#include <glob.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/subprocess.h"

namespace kforge::harness {
namespace {

using nlohmann::json;

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, separator))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool is_directory(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

std::string real_path(const std::string& path) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (!resolved) return path;
  std::string out(resolved);
  std::free(resolved);
  return out;
}

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

bool under(const std::string& path, const std::string& root) {
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          (root == "/" || path[root.size()] == '/'));
}

// Variables a child may inherit from the worker: library paths, device selection and the
// backends' own switches. Nothing else (no KFORGE_SECRET_SEED, no KFORGE_DATABASE_URL).
bool passes_through(const std::string& name) {
  static const std::vector<std::string> names = {
      "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME",        "CUDA_PATH",          "TRITON_INTERPRET",
      "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH", "KFORGE_RUNNER_DEBUG", "KFORGE_RUNNER_PROFILE", "PYTHONPATH",
      "OMP_NUM_THREADS", "KFORGE_LOG_LEVEL", "NVIDIA_TF32_OVERRIDE", "CUDA_MODULE_LOADING", "TORCH_CUDA_ARCH_LIST",
      // The OpenCL ICD loader's own search path: a host that registers its GPU's
      // platform there (a container's driver under /usr/local/nvidia) has no other.
      "OCL_ICD_VENDORS", "OCL_ICD_FILENAMES", "OPENCL_VENDOR_PATH"};
  if (std::find(names.begin(), names.end(), name) != names.end()) return true;
  return name.rfind("POCL_", 0) == 0 && name != "POCL_CACHE_DIR";
}

// With the env layer off the child inherits the worker's environment minus anything
// that looks like a secret.
bool looks_secret(const std::string& name) {
  for (const char* word : {"SECRET", "TOKEN", "PASSWORD", "PASSWD", "DATABASE_URL", "KEY", "CREDENTIAL", "PGPASS"})
    if (name.find(word) != std::string::npos) return true;
  return false;
}

extern "C" char** environ;

std::vector<std::string> child_env(const SandboxPolicy& policy, SandboxKind kind) {
  std::map<std::string, std::string> env;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string item(*entry);
    auto eq = item.find('=');
    if (eq == std::string::npos) continue;
    std::string name = item.substr(0, eq);
    if (policy.layers.env ? passes_through(name) : !looks_secret(name)) env[name] = item.substr(eq + 1);
  }
  const bool private_tmp = policy.layers.filesystem;
  env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  env["LANG"] = "C.UTF-8";
  env["USER"] = env["LOGNAME"] = "kforge-sandbox";  // getpass.getuser() needs a name for an unnamed uid
  env["KFORGE_REPLY_FD"] = std::to_string(kReplyFd);
  env["KFORGE_ARENA_OUTPUT_FD"] = std::to_string(kArenaOutputFd);
  env["KFORGE_SANDBOX_SECCOMP"] = seccomp_mode_name(policy.layers.seccomp ? policy.seccomp_mode : SeccompMode::off);
  if (private_tmp) {
    env["HOME"] = env["TMPDIR"] = "/tmp";
    env["XDG_CACHE_HOME"] = "/tmp/.cache";
    env["POCL_CACHE_DIR"] = "/tmp/pocl";
  } else if (!env.count("HOME")) {
    env["HOME"] = env_or("HOME", "/tmp");
  }
  if (kind == SandboxKind::kernel_cpu && !env.count("POCL_AFFINITY")) env["POCL_AFFINITY"] = "1";
  // A CPU child runs PoCL only: the loader is not pointed at other vendors' libraries (on the
  // H100 host OCL_ICD_FILENAMES also names libnvidia-opencl.so.1, which a child without the
  // GPU's devices and seccomp allowances should never load).
  if (kind == SandboxKind::kernel_cpu && env.count("OCL_ICD_FILENAMES")) {
    std::string pocl_only;
    for (const auto& library : split(env["OCL_ICD_FILENAMES"], ':'))
      if (library.find("pocl") != std::string::npos) pocl_only += (pocl_only.empty() ? "" : ":") + library;
    if (pocl_only.empty()) env.erase("OCL_ICD_FILENAMES");
    else env["OCL_ICD_FILENAMES"] = pocl_only;
  }
  if (kind == SandboxKind::python) {
    env["PYTHONDONTWRITEBYTECODE"] = "1";
    if (private_tmp) {
      env["TRITON_CACHE_DIR"] = "/tmp/triton";
      env["TORCHINDUCTOR_CACHE_DIR"] = "/tmp/inductor";
    }
  }
  std::vector<std::string> out;
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

// The folders of every shared library this process has loaded. The probe links the same
// libtorch as the worker; where that lives outside the system folders (pip's torch under a
// venv or /opt on a GPU host), the probe's view needs it or the loader finds nothing.
std::vector<std::string> loaded_library_dirs() {
  std::vector<std::string> dirs;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        std::string name = info->dlpi_name ? info->dlpi_name : "";
        if (!name.empty() && name[0] == '/') static_cast<std::vector<std::string>*>(out)->push_back(name);
        return 0;
      },
      &dirs);
  for (auto& path : dirs) path = dir_of(real_path(path));
  return dirs;
}

// An interpreter's prefixes and sys.path (site-packages, .pth paths), asked once.
std::vector<std::string> python_paths(const std::string& python) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<std::string>> known;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = known.find(python);
  if (found != known.end()) return found->second;
  auto [status, output] = run_command(
      {python, "-c",
       "import os, sys\n"
       "for p in [sys.executable, sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix] + sys.path:\n"
       "    print(os.path.realpath(p) if p else '')\n"});
  std::vector<std::string> paths;
  if (status == 0)
    for (const auto& line : split(output, '\n'))
      if (!line.empty() && line[0] == '/') paths.push_back(line);
  paths.push_back(dir_of(real_path(python)));
  known[python] = paths;
  return paths;
}

// Drops paths inside another path of the list (one bind covers them) and under /usr.
std::vector<std::string> minimal_roots(std::vector<std::string> paths) {
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  std::vector<std::string> out;
  for (const auto& path : paths) {
    if (path.empty() || path[0] != '/' || path == "/") continue;
    bool covered = false;
    for (const auto& kept : out) covered = covered || under(path, kept);
    if (!covered) out.push_back(path);
  }
  return out;
}

std::vector<std::string> glob_paths(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t matches{};
  if (::glob(pattern.c_str(), 0, nullptr, &matches) == 0)
    for (size_t match_idx = 0; match_idx < matches.gl_pathc; ++match_idx) out.push_back(matches.gl_pathv[match_idx]);
  ::globfree(&matches);
  return out;
}

int next_uid() {
  // A uid of its own per child (no /etc/passwd entry needed): children cannot signal or
  // read each other (/proc/PID/mem, ptrace are same-uid operations).
  static std::atomic<uint32_t> counter{0};
  int64_t base = std::atoll(env_or("KFORGE_SANDBOX_UID_BASE", "200000").c_str());
  uint32_t slot = (static_cast<uint32_t>(::getpid()) * 7919u + counter++) % 65536u;
  return static_cast<int>(base + slot);
}

}  // namespace

std::string sandbox_kind_name(SandboxKind kind) {
  switch (kind) {
    case SandboxKind::kernel_cpu: return "kernel_cpu";
    case SandboxKind::kernel_gpu: return "kernel_gpu";
    case SandboxKind::python: return "python";
    case SandboxKind::probe: return "probe";
  }
  return "?";
}

SandboxPolicy make_sandbox_policy(SandboxKind kind, const std::vector<std::string>& argv) {
  SandboxPolicy policy;
  policy.kind = kind;
  policy.require = env_or("KFORGE_SANDBOX_REQUIRE", "0") == "1";
  policy.seccomp_mode = seccomp_mode_from_name(env_or("KFORGE_SANDBOX_SECCOMP", "kill"));
  std::string disabled = env_or("KFORGE_SANDBOX_DISABLE", "");
  if (env_or("KFORGE_SANDBOX", "on") == "off") disabled = "all";
  for (const auto& layer : split(disabled, ',')) {
    const bool all = layer == "all";
    if (all || layer == "env") policy.layers.env = false;
    if (all || layer == "user") policy.layers.user = false;
    if (all || layer == "network") policy.layers.network = false;
    if (all || layer == "filesystem") policy.layers.filesystem = false;
    if (all || layer == "seccomp") policy.layers.seccomp = false;
    if (all || layer == "limits") policy.layers.limits = false;
  }
  if (policy.seccomp_mode == SeccompMode::off) policy.layers.seccomp = false;
  policy.uid = next_uid();
  policy.env = child_env(policy, kind);
  const bool gpu = kind == SandboxKind::kernel_gpu || kind == SandboxKind::python;

  std::vector<std::string> read_only = {"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/sys"};
  std::vector<std::string> extra;
  if (!argv.empty()) extra.push_back(dir_of(real_path(argv[0])));
  if (kind == SandboxKind::python && argv.size() > 1) {
    extra.push_back(dir_of(real_path(argv[1])));
    for (const auto& path : python_paths(argv[0])) extra.push_back(path);
  }
  for (const auto& dir : split(env_or("LD_LIBRARY_PATH", ""), ':')) extra.push_back(real_path(dir));
  if (kind == SandboxKind::probe)
    for (const auto& dir : loaded_library_dirs()) extra.push_back(dir);
  for (const auto& dir : split(env_or("KFORGE_SANDBOX_READ_ONLY", ""), ':')) extra.push_back(real_path(dir));
  // The ICD files the loader is pointed at, and the folders they sit in (OCL_ICD_VENDORS
  // is a folder or a file; OCL_ICD_FILENAMES a list of libraries).
  for (const char* name : {"OCL_ICD_VENDORS", "OPENCL_VENDOR_PATH"})
    for (const auto& path : split(env_or(name, ""), ':'))
      if (!path.empty()) extra.push_back(is_directory(path) ? real_path(path) : dir_of(real_path(path)));
  for (const auto& library : split(env_or("OCL_ICD_FILENAMES", ""), ':'))
    if (!library.empty() && library.find('/') != std::string::npos) extra.push_back(dir_of(real_path(library)));
  for (auto& path : minimal_roots(extra)) {
    bool covered = false;
    for (const auto& system : read_only) covered = covered || under(path, system);
    if (!covered && exists(path)) read_only.push_back(path);
  }
  policy.read_only = read_only;
  policy.devices = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"};
  policy.proc = {"cpuinfo", "meminfo", "stat", "loadavg", "uptime", "version", "filesystems", "sys"};
  if (gpu) {
    for (const auto& node : glob_paths("/dev/nvidia*")) policy.devices.push_back(node);
    if (exists("/proc/driver/nvidia")) policy.proc.push_back("driver/nvidia");
    policy.tmp_bytes = int64_t{2} << 30;  // Triton's and Inductor's caches
  }
  policy.seccomp_profile = SeccompProfile::broad;  // start-up; C++ children tighten it themselves
  return policy;
}

std::string sandbox_policy_to_json(const SandboxPolicy& p) {
  json layers{{"env", p.layers.env},         {"user", p.layers.user},       {"network", p.layers.network},
              {"filesystem", p.layers.filesystem}, {"seccomp", p.layers.seccomp}, {"limits", p.layers.limits}};
  return json{{"kind", sandbox_kind_name(p.kind)},
              {"require", p.require},
              {"layers", layers},
              {"seccomp_mode", seccomp_mode_name(p.seccomp_mode)},
              {"seccomp_profile", seccomp_profile_name(p.seccomp_profile)},
              {"read_only", p.read_only},
              {"devices", p.devices},
              {"proc", p.proc},
              {"tmp_bytes", p.tmp_bytes},
              {"uid", p.uid},
              {"address_space_bytes", p.address_space_bytes},
              {"data_bytes", p.data_bytes},
              {"file_bytes", p.file_bytes},
              {"processes", p.processes},
              {"open_files", p.open_files},
              {"cpu_seconds", p.cpu_seconds}}
      .dump();
}

bool sandbox_policy_from_json(const std::string& text, SandboxPolicy& p, std::string& error) {
  try {
    json in = json::parse(text);
    const std::string kind = in.at("kind").get<std::string>();
    for (SandboxKind k : {SandboxKind::kernel_cpu, SandboxKind::kernel_gpu, SandboxKind::python, SandboxKind::probe})
      if (sandbox_kind_name(k) == kind) p.kind = k;
    p.require = in.value("require", false);
    const json& layers = in.at("layers");
    p.layers.env = layers.value("env", true);
    p.layers.user = layers.value("user", true);
    p.layers.network = layers.value("network", true);
    p.layers.filesystem = layers.value("filesystem", true);
    p.layers.seccomp = layers.value("seccomp", true);
    p.layers.limits = layers.value("limits", true);
    p.seccomp_mode = seccomp_mode_from_name(in.value("seccomp_mode", "kill"));
    const std::string profile = in.value("seccomp_profile", "broad");
    p.seccomp_profile = profile == "pocl" ? SeccompProfile::pocl
                        : profile == "no_exec" ? SeccompProfile::no_exec
                                               : SeccompProfile::broad;
    p.read_only = in.value("read_only", std::vector<std::string>{});
    p.devices = in.value("devices", std::vector<std::string>{});
    p.proc = in.value("proc", std::vector<std::string>{});
    p.tmp_bytes = in.value("tmp_bytes", p.tmp_bytes);
    p.uid = in.value("uid", 0);
    p.address_space_bytes = in.value("address_space_bytes", int64_t{0});
    p.data_bytes = in.value("data_bytes", int64_t{0});
    p.file_bytes = in.value("file_bytes", p.file_bytes);
    p.processes = in.value("processes", p.processes);
    p.open_files = in.value("open_files", p.open_files);
    p.cpu_seconds = in.value("cpu_seconds", 0.0);
    return true;
  } catch (const std::exception& e) {
    error = std::string("invalid sandbox policy: ") + e.what();
    return false;
  }
}

}  // namespace kforge::harness
