// Helpers every file of the Halide backend uses (backend_impl.h).
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <fstream>

#include "halide/backend_impl.h"

namespace proxc::internal {

std::atomic<int> g_compiles{0};
std::atomic<int> g_cache_loads{0};

Halide::Target parse_target(const std::string& s, bool this_machine) {
  if (s == "host") return Graph::with_default_features(Halide::get_jit_target_from_environment());
  user_assert(Halide::Target::validate_target_string(s))
      << "--target: '" << s << "' is not a Halide target string";
  return with_gpu_features(Graph::with_default_features(Halide::Target(s)), this_machine);
}

std::string without_gpu_features(const Halide::Target& t) {
  std::string out, token;
  std::istringstream in(t.to_string());
  while (std::getline(in, token, '-')) {
    for (const char* gpu : {"cuda", "opencl", "cl_", "metal", "d3d12compute", "openglcompute", "vulkan", "webgpu",
                            "hexagon_dma", "hvx", "spirv", "vk_"}) {
      if (token.rfind(gpu, 0) == 0) token.clear();
    }
    if (!token.empty()) out += (out.empty() ? "" : "-") + token;
  }
  return out;
}

halide_ops::Schedule schedule_for(const Halide::Target& t) {
  // Other GPU APIs (Metal, Vulkan, ...) are compiled with the CPU schedule.
  if (t.has_feature(Halide::Target::CUDA)) return halide_ops::Schedule::Gpu;
  if (t.has_feature(Halide::Target::OpenCL)) {
    return t.has_feature(Halide::Target::CLDoubles) ? halide_ops::Schedule::Gpu : halide_ops::Schedule::GpuFloat;
  }
  return halide_ops::Schedule::Default;
}

int device_fft_for(const Halide::Target& t) {
  const DeviceFftApi api = t.has_feature(Halide::Target::CUDA)     ? DeviceFftApi::Cuda
                           : t.has_feature(Halide::Target::OpenCL) ? DeviceFftApi::OpenCl
                                                                   : DeviceFftApi::None;
  if (api == DeviceFftApi::None) return 0;
  const char* say = std::getenv("PROXC_DEVICE_FFT");
  if (say && std::string(say) == "0") return 0;
  if (say && std::string(say) == "1") return static_cast<int>(api);
  return device_fft_loads(api) ? static_cast<int>(api) : 0;
}

std::string fft_report(const std::set<int>& stages) {
  std::string out;
  for (auto it = stages.rbegin(); it != stages.rend(); ++it) {  // the device first
    const int api = *it;
    std::string what = "FFTW (host)";
    if (api > 0) {
      const std::string lib = device_fft_library(static_cast<DeviceFftApi>(api));
      what = (lib.empty() ? std::string(api == 1 ? "clFFT" : "cuFFT") : lib) + " (device";
      what += device_fft_host_fallbacks() > 0 ? "; FFTW on the host for sizes it does not plan)" : ")";
    }
    out += (out.empty() ? "" : " and ") + what;
  }
  return out.empty() ? "none" : out;
}

hl::Lowered lower_for(const StepProgram& p, const Halide::Target& t) {
  return hl::lower(p, schedule_for(t), device_fft_for(t));
}

namespace {

// The OpenCL ICD loader, as Halide's runtime loads it itself (runtime/opencl.cpp); null without one.
void* opencl_library() {
  static void* const lib = ::dlopen("libOpenCL.so", RTLD_LAZY | RTLD_LOCAL);
  return lib;
}
using ClGetPlatformIDs = int (*)(unsigned, void**, unsigned*);

}  // namespace

bool opencl_has_doubles(bool ask_devices) {
  const char* say = std::getenv("PROXC_OPENCL_DOUBLES");
  if (say && std::string(say) == "0") return false;
  if (say && std::string(say) == "1") return true;
  if (!ask_devices) return true;
  static const bool all = [] {  // (asked once)
    void* lib = opencl_library();
    if (!lib) return true;
    using Devices = int (*)(void*, uint64_t, unsigned, void**, unsigned*);
    using Info = int (*)(void*, unsigned, size_t, void*, size_t*);
    auto platforms = reinterpret_cast<ClGetPlatformIDs>(::dlsym(lib, "clGetPlatformIDs"));
    auto devices = reinterpret_cast<Devices>(::dlsym(lib, "clGetDeviceIDs"));
    auto info = reinterpret_cast<Info>(::dlsym(lib, "clGetDeviceInfo"));
    unsigned np = 0;
    if (!platforms || !devices || !info || platforms(0, nullptr, &np) != 0 || np == 0) return true;
    std::vector<void*> ps(np);
    if (platforms(np, ps.data(), nullptr) != 0) return true;
    constexpr uint64_t kAllDevices = 0xFFFFFFFF;      // CL_DEVICE_TYPE_ALL
    constexpr unsigned kDoubleFpConfig = 0x1032;      // CL_DEVICE_DOUBLE_FP_CONFIG: 0 without fp64
    for (void* p : ps) {
      unsigned nd = 0;
      if (devices(p, kAllDevices, 0, nullptr, &nd) != 0 || nd == 0) continue;
      std::vector<void*> ds(nd);
      if (devices(p, kAllDevices, nd, ds.data(), nullptr) != 0) continue;
      for (void* d : ds) {
        uint64_t config = 0;
        if (info(d, kDoubleFpConfig, sizeof config, &config, nullptr) != 0 || config == 0) return false;
      }
    }
    return true;
  }();
  return all;
}

Halide::Target with_gpu_features(Halide::Target t, bool this_machine) {
  if (t.has_feature(Halide::Target::OpenCL) && opencl_has_doubles(this_machine)) {
    t.set_feature(Halide::Target::CLDoubles);
  }
  return t;
}

double address_space_left() {
  struct rlimit limit {};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::numeric_limits<double>::infinity();
  std::ifstream statm("/proc/self/statm");
  double pages = 0;
  if (!(statm >> pages)) return std::numeric_limits<double>::infinity();
  return static_cast<double>(limit.rlim_cur) - pages * static_cast<double>(sysconf(_SC_PAGESIZE));
}

std::string file_size_limit_below_objects() {
  struct rlimit r {};
  if (::getrlimit(RLIMIT_FSIZE, &r) != 0 || r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= (rlim_t{1} << 30)) return "";
  return "a file size limit of " + format_bytes(static_cast<double>(r.rlim_cur)) + " is set (ulimit -f)";
}

void check_compile_room() {
  constexpr double kMiB = 1024.0 * 1024.0, kCompileBytes = 128 * kMiB;
  const double left = address_space_left();
  user_assert(left >= kCompileBytes) << "out of memory: an address-space limit (ulimit -v) leaves "
                                     << std::lround(std::max(0.0, left) / kMiB)
                                     << " MiB, and compiling a pipeline takes up to " << std::lround(kCompileBytes / kMiB)
                                     << " MiB (raise the limit, or run with the pipelines already in the cache)";
}

std::string gpu_unavailable(const Halide::Target& t) {
  // The libraries Halide's runtime loads itself (runtime/cuda.cpp, opencl.cpp).
  if (t.has_feature(Halide::Target::CUDA)) {
    void* lib = ::dlopen("libcuda.so", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) lib = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) return "no CUDA driver on this machine (libcuda.so is not found): CUDA needs an NVIDIA GPU and its driver";
    using Init = int (*)(unsigned);
    using Count = int (*)(int*);
    auto init = reinterpret_cast<Init>(::dlsym(lib, "cuInit"));
    auto count = reinterpret_cast<Count>(::dlsym(lib, "cuDeviceGetCount"));
    int n = 0;
    if (!init || !count || init(0) != 0 || count(&n) != 0 || n == 0) return "the CUDA driver finds no GPU";
    return "";
  }
  if (t.has_feature(Halide::Target::OpenCL)) {
    void* lib = opencl_library();
    if (!lib)
      return "libOpenCL.so is not found (Debian: ocl-icd-opencl-dev, and a driver: pocl-opencl-icd runs OpenCL on "
             "the CPU)";
    auto platforms = reinterpret_cast<ClGetPlatformIDs>(::dlsym(lib, "clGetPlatformIDs"));
    unsigned n = 0;
    if (!platforms || platforms(0, nullptr, &n) != 0 || n == 0)
      return "no OpenCL platform is installed (pocl-opencl-icd runs OpenCL on the CPU)";
    return "";
  }
  return "proxc's GPU schedules are for CUDA and OpenCL";
}

std::vector<int> halide_dims(const Shape& s) {
  std::vector<int> d;
  for (auto it = s.rbegin(); it != s.rend(); ++it) d.push_back(static_cast<int>(*it));
  return d;
}

Halide::Buffer<float> wrap(const Array& a) {
  float* p = const_cast<float*>(a.data.data());
  if (a.shape.empty()) return Halide::Buffer<float>::make_scalar(p);
  return Halide::Buffer<float>(p, halide_dims(a.shape));
}

// Root buffers of a pipeline are allocated on every run; fresh pages cost a
// page fault each, which dominated the per-iteration time. They come from the
// block store (support/blocks.h), which keeps freed blocks for the next run
// and backs large ones with huge pages.
constexpr size_t kHeader = 128;  // keeps Halide's alignment and stores the size

void* cached_malloc(Halide::JITUserContext*, size_t n) {
  void* p = nullptr;
  if (n > SIZE_MAX - kHeader) return nullptr;
  try {
    p = allocate_block(n + kHeader);
  } catch (const std::bad_alloc&) {
    return nullptr;  // Halide reports the failed allocation
  }
  *static_cast<size_t*>(p) = n;
  return static_cast<char*>(p) + kHeader;
}

void cached_free(Halide::JITUserContext*, void* ptr) {
  if (!ptr) return;
  void* p = static_cast<char*>(ptr) - kHeader;
  free_block(p, *static_cast<size_t*>(p) + kHeader);
}

void* raw_malloc(void*, size_t n) { return cached_malloc(nullptr, n); }
void raw_free(void*, void* p) { cached_free(nullptr, p); }

void warn(const std::string& what) { std::fprintf(stderr, "proxc: warning: %s\n", what.c_str()); }

std::string program_label(const StepProgram& p) { return p.name.empty() ? "a step program" : p.name; }

Halide::Target aot_target(const std::string& s) {
  if (s == "host") return Graph::with_default_features(Halide::get_host_target());
  return parse_target(s, /*this_machine=*/false);
}

std::string shell_quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

// Runs a shell command; its exit status, and its output in *log.
int run_command(const std::string& cmd, std::string* log) {
  int rc = -1;
  if (FILE* f = ::popen((cmd + " 2>&1").c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, f)) *log += buf;
    rc = ::pclose(f);
  }
  return rc;
}

}  // namespace proxc::internal
