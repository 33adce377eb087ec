#include "halide/device_fft.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "halide/fft_extern.h"

#if __has_include(<clFFT.h>)
#define CL_TARGET_OPENCL_VERSION 120
#include <clFFT.h>
#define PROXC_WITH_CLFFT 1
#endif

namespace proxc::internal {
namespace {

using Geometry = FftLayout;

// Bounds queries: the real buffer's region from the spectrum's, or back.
void real_from_spectrum(halide_buffer_t* real, const halide_buffer_t* spectrum, int spatial_rank, int n0) {
  for (int i = 0; i < real->dimensions; ++i) real->dim[i] = spectrum->dim[i + 1];
  const int first = real->dimensions - spatial_rank;
  real->dim[first].min = 0;
  real->dim[first].extent = n0;
}
void spectrum_from_real(halide_buffer_t* spectrum, const halide_buffer_t* real, int spatial_rank) {
  spectrum->dim[0].min = 0;
  spectrum->dim[0].extent = 2;
  for (int i = 0; i < real->dimensions; ++i) spectrum->dim[i + 1] = real->dim[i];
  const int first = real->dimensions - spatial_rank;
  spectrum->dim[first + 1].min = 0;
  spectrum->dim[first + 1].extent = real->dim[first].extent / 2 + 1;
}

void report(const std::string& what) { std::fprintf(stderr, "proxc: device FFT: %s\n", what.c_str()); }

std::atomic<int> g_host_fallbacks{0};

// Whether the real buffer and the spectrum are exactly the transform's
// regions (from 0, the spectrum's innermost spatial extent n0/2 + 1), as
// the bounds queries ask: the library transforms whole allocations.
bool regions_match(const halide_buffer_t* real, const halide_buffer_t* spectrum, int spatial_rank) {
  if (spectrum->dimensions != real->dimensions + 1 || spectrum->dim[0].min != 0 ||
      spectrum->dim[0].extent != 2)
    return false;
  const int first = real->dimensions - spatial_rank;
  for (int i = 0; i < real->dimensions; ++i) {
    const int want = i == first ? real->dim[i].extent / 2 + 1 : real->dim[i].extent;
    if (real->dim[i].min != 0 || spectrum->dim[i + 1].min != 0 || spectrum->dim[i + 1].extent != want)
      return false;
  }
  return true;
}

// The first of `names` that loads; only $env's file where that is set.
void* open_first(std::initializer_list<const char*> names, const char* env = nullptr) {
  if (const char* path = env ? std::getenv(env) : nullptr; path && *path)
    return ::dlopen(path, RTLD_LAZY | RTLD_LOCAL);
  for (const char* n : names) {
    if (void* h = ::dlopen(n, RTLD_LAZY | RTLD_LOCAL)) return h;
  }
  return nullptr;
}

// A transform through the host with FFTW: `read(host, bytes)` copies the
// device's input into host memory, `write(host, bytes)` the result back
// (each 0 or an error code). For what a device library does not transform.
template <typename Read, typename Write>
int through_host(const Geometry& g, bool forward, Read read, Write write) {
  ++g_host_fallbacks;
  const size_t real_n = static_cast<size_t>(g.n * g.channels),
               spec_n = static_cast<size_t>(g.half * g.channels) * 2;
  std::vector<float> a(forward ? real_n : spec_n), b(forward ? spec_n : real_n);
  if (int rc = read(a.data(), a.size() * sizeof(float)); rc != 0) return rc;
  host_fft(g.spatial, g.channels, forward, a.data(), b.data());
  return write(b.data(), b.size() * sizeof(float));
}

// Each stage waits for the pipeline's own kernels on its input (Halide
// hands the buffers over with work possibly still queued).
int sync_input(halide_buffer_t* in) {
  return in->device_interface ? in->device_interface->device_sync(nullptr, in) : -1;
}

#ifdef PROXC_WITH_CLFFT

// While alive, what this process writes to stderr goes to a temporary file;
// then it is written to stderr, less the lines "N warning(s) generated.":
// PoCL's compiler prints them (and nothing else) when it builds clFFT's
// kernels, once per machine and size. Nothing else written meanwhile is lost.
class QuietKernelBuilds {
 public:
  QuietKernelBuilds() {
    std::fflush(stderr);
    tmp_ = std::tmpfile();
    saved_ = tmp_ ? ::dup(2) : -1;
    if (saved_ >= 0 && ::dup2(::fileno(tmp_), 2) < 0) {
      ::close(saved_);
      saved_ = -1;
    }
  }
  ~QuietKernelBuilds() {
    if (saved_ < 0) {
      if (tmp_) std::fclose(tmp_);
      return;
    }
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    std::rewind(tmp_);
    char line[4096];
    while (std::fgets(line, sizeof line, tmp_)) {
      if (!is_build_summary(line)) std::fputs(line, stderr);
    }
    std::fclose(tmp_);
  }
  // "N warning generated." or "N warnings generated." and nothing else.
  static bool is_build_summary(const char* line) {
    for (const char* form : {"%d warning generated.%n", "%d warnings generated.%n"}) {
      int n = 0, end = 0;
      if (std::sscanf(line, form, &n, &end) == 1 && end > 0 && (line[end] == '\n' || line[end] == '\0'))
        return true;
    }
    return false;
  }
  QuietKernelBuilds(const QuietKernelBuilds&) = delete;
  QuietKernelBuilds& operator=(const QuietKernelBuilds&) = delete;

 private:
  std::FILE* tmp_ = nullptr;
  int saved_ = -1;
};

// Halide 21's OpenCL runtime keeps in a buffer's `device` field a pointer
// to {byte offset, cl_mem} (src/runtime/opencl.cpp, device_handle). The
// HalideGpu tests run every device FFT against the host's: a change of this
// layout fails them.
struct HalideClHandle {
  uint64_t offset;
  cl_mem mem;
};

struct ClFft {
#define PROXC_CL_FUNCS(X) \
  X(clGetMemObjectInfo)   \
  X(clGetContextInfo) X(clCreateCommandQueue) X(clFinish) X(clEnqueueReadBuffer) X(clEnqueueWriteBuffer)
#define PROXC_CLFFT_FUNCS(X)                                                                   \
  X(clfftSetup)                                                                                \
  X(clfftTeardown)                                                                             \
  X(clfftGetVersion)                                                                           \
  X(clfftCreateDefaultPlan)                                                                    \
  X(clfftSetPlanPrecision)                                                                     \
  X(clfftSetLayout) X(clfftSetResultLocation) X(clfftSetPlanInStride) X(clfftSetPlanOutStride) \
      X(clfftSetPlanDistance) X(clfftSetPlanBatchSize) X(clfftSetPlanScale) X(clfftBakePlan)   \
          X(clfftEnqueueTransform) X(clfftDestroyPlan)
#define PROXC_DECLARE(f) decltype(&::f) f = nullptr;
  PROXC_CL_FUNCS(PROXC_DECLARE)
  PROXC_CLFFT_FUNCS(PROXC_DECLARE)
#undef PROXC_DECLARE
  bool cl_ok = false;  // libOpenCL's functions
  bool ok = false;     // and clFFT's
  std::string version;

  ClFft() {
    void* cl = open_first({"libOpenCL.so", "libOpenCL.so.1"});
    if (!cl) return;
    bool all = true;
#define PROXC_LOAD(f)                                     \
  f = reinterpret_cast<decltype(&::f)>(::dlsym(lib, #f)); \
  all = all && f != nullptr;
    {
      void* lib = cl;
      PROXC_CL_FUNCS(PROXC_LOAD)
    }
    cl_ok = all;
    void* fft = cl_ok ? open_first({"libclFFT.so.2", "libclFFT.so"}, "PROXC_CLFFT") : nullptr;
    if (!fft) return;
    {
      void* lib = fft;
      PROXC_CLFFT_FUNCS(PROXC_LOAD)
    }
#undef PROXC_LOAD
    if (!all) return;
    clfftSetupData setup;
    clfftInitSetupData(&setup);
    if (clfftSetup(&setup) != CLFFT_SUCCESS) return;
    cl_uint major = 0, minor = 0, patch = 0;
    clfftGetVersion(&major, &minor, &patch);
    version = "clFFT " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
    ok = true;
  }
  // Released before the library's own statics, which otherwise warn on stderr at exit.
  ~ClFft() {
    if (ok) clfftTeardown();
  }
};

ClFft& clfft() {
  static ClFft lib;
  return lib;
}

struct ClPlan {
  bool baked = false;  // false: clFFT cannot plan this size; FFTW on the host does it
  bool ran = false;    // its kernels ran once (built: see QuietKernelBuilds)
  clfftPlanHandle plan = 0;
  cl_command_queue queue = nullptr;
};

// Plans kept per library before the oldest are released (clFFT's hold
// kernels and buffers on the device; cuFFT's a work area).
constexpr size_t kMaxPlans = 16;

std::mutex& cl_mutex() {
  static std::mutex m;
  return m;
}

// One queue per context, on its first device (Halide's contexts have one).
cl_command_queue queue_for(cl_context ctx) {
  static std::map<cl_context, cl_command_queue> queues;
  auto it = queues.find(ctx);
  if (it != queues.end()) return it->second;
  ClFft& f = clfft();
  cl_device_id dev = nullptr;
  if (f.clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof dev, &dev, nullptr) != CL_SUCCESS) return nullptr;
  cl_int err = CL_SUCCESS;
  cl_command_queue q = f.clCreateCommandQueue(ctx, dev, 0, &err);
  if (err != CL_SUCCESS) return nullptr;
  queues[ctx] = q;
  return q;
}

// The plan of a transform (r2c when `forward`), made once per context and geometry.
ClPlan* cl_plan(cl_context ctx, const Geometry& g, bool forward) {
  using Key = std::tuple<cl_context, bool, int64_t, std::vector<int>>;
  static std::map<Key, ClPlan> plans;
  const Key key{ctx, forward, g.channels, g.spatial};
  auto it = plans.find(key);
  if (it != plans.end()) return &it->second;
  ClFft& f = clfft();
  if (plans.size() >= kMaxPlans) {
    // A process that transforms many sizes keeps the last few: the plans'
    // kernels and buffers are released (PoCL and drivers cache the builds).
    for (auto& [k, old] : plans) {
      if (old.baked) f.clfftDestroyPlan(&old.plan);
    }
    plans.clear();
  }
  ClPlan p;
  p.queue = queue_for(ctx);
  if (!p.queue) return nullptr;
  const size_t rank = g.spatial.size();
  if (rank >= 1 && rank <= 3) {
    // clFFT's lengths and strides run innermost first, in complex elements
    // for the spectrum; the channels are the batch, one element apart.
    std::vector<size_t> len(rank), real_stride(rank), spec_stride(rank);
    size_t rs = static_cast<size_t>(g.channels), ss = static_cast<size_t>(g.channels);
    for (size_t i = 0; i < rank; ++i) {
      len[i] = static_cast<size_t>(g.spatial[rank - 1 - i]);
      real_stride[i] = rs;
      spec_stride[i] = ss;
      rs *= len[i];
      ss *= i == 0 ? len[i] / 2 + 1 : len[i];
    }
    const clfftDim dim = rank == 1 ? CLFFT_1D : rank == 2 ? CLFFT_2D : CLFFT_3D;
    bool made = f.clfftCreateDefaultPlan(&p.plan, ctx, dim, len.data()) == CLFFT_SUCCESS;
    if (made) {
      bool set = f.clfftSetPlanPrecision(p.plan, CLFFT_SINGLE) == CLFFT_SUCCESS;
      set = set && f.clfftSetLayout(p.plan, forward ? CLFFT_REAL : CLFFT_HERMITIAN_INTERLEAVED,
                                    forward ? CLFFT_HERMITIAN_INTERLEAVED : CLFFT_REAL) == CLFFT_SUCCESS;
      set = set && f.clfftSetResultLocation(p.plan, CLFFT_OUTOFPLACE) == CLFFT_SUCCESS;
      set = set && f.clfftSetPlanInStride(p.plan, dim, forward ? real_stride.data() : spec_stride.data()) ==
                       CLFFT_SUCCESS;
      set = set && f.clfftSetPlanOutStride(p.plan, dim, forward ? spec_stride.data() : real_stride.data()) ==
                       CLFFT_SUCCESS;
      set = set && f.clfftSetPlanBatchSize(p.plan, static_cast<size_t>(g.channels)) == CLFFT_SUCCESS;
      set = set && f.clfftSetPlanDistance(p.plan, 1, 1) == CLFFT_SUCCESS;
      // Unscaled both ways, as FFTW and cuFFT: the filter applies 1/n.
      set =
          set && f.clfftSetPlanScale(p.plan, forward ? CLFFT_FORWARD : CLFFT_BACKWARD, 1.0f) == CLFFT_SUCCESS;
      if (set) {
        QuietKernelBuilds quiet;
        p.baked = f.clfftBakePlan(p.plan, 1, &p.queue, nullptr, nullptr) == CLFFT_SUCCESS;
      }
      if (!p.baked) f.clfftDestroyPlan(&p.plan);
    }
  }
  return &plans.emplace(key, p).first->second;
}

cl_mem cl_mem_of(const halide_buffer_t* b, uint64_t* offset) {
  const auto* h = reinterpret_cast<const HalideClHandle*>(b->device);
  *offset = h ? h->offset : 0;
  return h ? h->mem : nullptr;
}

int cl_transform(halide_buffer_t* in, halide_buffer_t* out, const Geometry& g, bool forward) {
  ClFft& f = clfft();
  if (!f.cl_ok) {
    report("libOpenCL does not load");
    return -1;
  }
  if (int rc = sync_input(in); rc != 0) return rc;
  uint64_t in_off = 0, out_off = 0;
  cl_mem src = cl_mem_of(in, &in_off), dst = cl_mem_of(out, &out_off);
  if (!src || !dst || in_off != 0 || out_off != 0) {
    report("a buffer is not a whole OpenCL allocation");
    return -1;
  }
  cl_context ctx = nullptr;
  if (f.clGetMemObjectInfo(src, CL_MEM_CONTEXT, sizeof ctx, &ctx, nullptr) != CL_SUCCESS) return -1;
  std::lock_guard<std::mutex> lock(cl_mutex());
  // Without clFFT (code compiled for a machine that has it), every size goes through the host.
  ClPlan host_only;
  if (!f.ok) host_only.queue = queue_for(ctx);
  ClPlan* p = f.ok ? cl_plan(ctx, g, forward) : (host_only.queue ? &host_only : nullptr);
  if (!p) {
    report("no OpenCL command queue");
    return -1;
  }
  if (!p->baked) {
    // A size clFFT does not plan: through the host.
    // (OpenCL's error codes are not 0, as the extern stage's must be.)
    const int rc = through_host(
        g, forward,
        [&](float* host, size_t bytes) {
          return f.clEnqueueReadBuffer(p->queue, src, CL_TRUE, 0, bytes, host, 0, nullptr, nullptr);
        },
        [&](const float* host, size_t bytes) {
          return f.clEnqueueWriteBuffer(p->queue, dst, CL_TRUE, 0, bytes, host, 0, nullptr, nullptr);
        });
    if (rc != 0) return rc;
  } else {
    std::optional<QuietKernelBuilds> quiet;
    if (!p->ran) quiet.emplace();
    p->ran = true;
    if (f.clfftEnqueueTransform(p->plan, forward ? CLFFT_FORWARD : CLFFT_BACKWARD, 1, &p->queue, 0, nullptr,
                                nullptr, &src, &dst, nullptr) != CLFFT_SUCCESS) {
      report("clfftEnqueueTransform failed");
      return -1;
    }
    // The pipeline's next kernels run on Halide's queue.
    if (f.clFinish(p->queue) != CL_SUCCESS) return -1;
  }
  out->set_device_dirty(true);
  return 0;
}

#endif  // PROXC_WITH_CLFFT

// cuFFT and the CUDA driver, declared here (their headers are not needed to
// build proxc): the few entry points and constants a device stage uses.
using CuResult = int;
using CuContext = void*;
using CuDevicePtr = unsigned long long;
using CufftHandle = int;
constexpr int kCuPointerAttributeContext = 1;  // CU_POINTER_ATTRIBUTE_CONTEXT
constexpr int kCufftR2C = 0x2a, kCufftC2R = 0x2c;

#ifdef PROXC_CUDA_HEADERS
// Built where the CUDA toolkit's headers are (CMake's CUDAToolkit): the
// declarations above against them.
}  // namespace
}  // namespace proxc::internal
#include <cuda.h>
#include <cufft.h>
namespace proxc::internal {
namespace {
template <typename R, typename... A>
constexpr int arity(R (*)(A...)) {
  return static_cast<int>(sizeof...(A));
}
static_assert(kCuPointerAttributeContext == CU_POINTER_ATTRIBUTE_CONTEXT && kCufftR2C == CUFFT_R2C &&
              kCufftC2R == CUFFT_C2R);
static_assert(sizeof(CuResult) == sizeof(CUresult) && sizeof(CuContext) == sizeof(CUcontext) &&
              sizeof(CuDevicePtr) == sizeof(CUdeviceptr) && sizeof(CufftHandle) == sizeof(cufftHandle) &&
              sizeof(int) == sizeof(cufftResult) && sizeof(int) == sizeof(CUpointer_attribute) &&
              sizeof(int) == sizeof(cufftType));
static_assert(arity(&::cuPointerGetAttribute) == 3 && arity(&::cuCtxPushCurrent_v2) == 1 &&
              arity(&::cuCtxPopCurrent_v2) == 1 && arity(&::cufftPlanMany) == 11 &&
              arity(&::cufftExecR2C) == 3 && arity(&::cufftExecC2R) == 3 && arity(&::cufftGetVersion) == 1);
#endif

struct CuFft {
  CuResult (*cuPointerGetAttribute)(void*, int, CuDevicePtr) = nullptr;
  CuResult (*cuCtxPushCurrent)(CuContext) = nullptr;
  CuResult (*cuCtxPopCurrent)(CuContext*) = nullptr;
  CuResult (*cuCtxSynchronize)() = nullptr;
  CuResult (*cuMemcpyDtoH)(void*, CuDevicePtr, size_t) = nullptr;
  CuResult (*cuMemcpyHtoD)(CuDevicePtr, const void*, size_t) = nullptr;
  int (*cufftPlanMany)(CufftHandle*, int, int*, int*, int, int, int*, int, int, int, int) = nullptr;
  int (*cufftExecR2C)(CufftHandle, float*, void*) = nullptr;
  int (*cufftExecC2R)(CufftHandle, void*, float*) = nullptr;
  int (*cufftGetVersion)(int*) = nullptr;
  int (*cufftDestroy)(CufftHandle) = nullptr;
  bool driver_ok = false;  // libcuda's functions
  bool ok = false;         // and cuFFT's
  std::string version;

  CuFft() {
    auto load = [](void* lib, const char* name, auto* fn) {
      *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(::dlsym(lib, name));
      return *fn != nullptr;
    };
    void* cuda = open_first({"libcuda.so.1", "libcuda.so"});
    if (!cuda) return;
    driver_ok = load(cuda, "cuPointerGetAttribute", &cuPointerGetAttribute) &&
                load(cuda, "cuCtxPushCurrent_v2", &cuCtxPushCurrent) &&
                load(cuda, "cuCtxPopCurrent_v2", &cuCtxPopCurrent) &&
                load(cuda, "cuCtxSynchronize", &cuCtxSynchronize) &&
                load(cuda, "cuMemcpyDtoH_v2", &cuMemcpyDtoH) && load(cuda, "cuMemcpyHtoD_v2", &cuMemcpyHtoD);
    void* fft = driver_ok ? open_first({"libcufft.so", "libcufft.so.12", "libcufft.so.11", "libcufft.so.10"},
                                       "PROXC_CUFFT")
                          : nullptr;
    if (!fft) return;
    ok = load(fft, "cufftPlanMany", &cufftPlanMany) && load(fft, "cufftExecR2C", &cufftExecR2C) &&
         load(fft, "cufftExecC2R", &cufftExecC2R) && load(fft, "cufftGetVersion", &cufftGetVersion) &&
         load(fft, "cufftDestroy", &cufftDestroy);
    int v = 0;
    if (ok && cufftGetVersion(&v) == 0) {
      version = "cuFFT " + std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 100) + "." +
                std::to_string(v % 100);
    }
  }
};

CuFft& cufft() {
  static CuFft lib;
  return lib;
}

std::mutex& cu_mutex() {
  static std::mutex m;
  return m;
}

int cu_transform(halide_buffer_t* in, halide_buffer_t* out, const Geometry& g, bool forward) {
  CuFft& f = cufft();
  if (!f.driver_ok) {
    report("libcuda does not load");
    return -1;
  }
  if (int rc = sync_input(in); rc != 0) return rc;
  // Halide's CUDA runtime keeps the device pointer itself in `device`; its
  // context, not current on this thread, is the allocation's.
  const CuDevicePtr src = in->device, dst = out->device;
  CuContext ctx = nullptr;
  if (f.cuPointerGetAttribute(&ctx, kCuPointerAttributeContext, src) != 0 || !ctx) {
    report("no CUDA context for the input");
    return -1;
  }
  std::lock_guard<std::mutex> lock(cu_mutex());
  if (f.cuCtxPushCurrent(ctx) != 0) return -1;
  using Key = std::tuple<CuContext, bool, int64_t, std::vector<int>>;
  static std::map<Key, CufftHandle> plans;
  const Key key{ctx, forward, g.channels, g.spatial};
  auto it = plans.find(key);
  int rc = f.ok && g.spatial.size() <= 3 ? 0 : -1;  // else through the host
  if (rc == 0 && it == plans.end() && plans.size() >= kMaxPlans) {
    for (auto p = plans.begin(); p != plans.end();) {  // this context's (it is current)
      if (std::get<0>(p->first) != ctx) {
        ++p;
        continue;
      }
      f.cufftDestroy(p->second);
      p = plans.erase(p);
    }
  }
  if (rc == 0 && it == plans.end()) {
    // cuFFT's sizes run outermost first; the channels are the batch, one element apart.
    std::vector<int> n = g.spatial, spec = g.spatial;
    spec.back() = spec.back() / 2 + 1;
    const int c = static_cast<int>(g.channels);
    CufftHandle h = 0;
    rc = f.cufftPlanMany(&h, static_cast<int>(n.size()), n.data(), forward ? n.data() : spec.data(), c, 1,
                         forward ? spec.data() : n.data(), c, 1, forward ? kCufftR2C : kCufftC2R, c);
    if (rc == 0) it = plans.emplace(key, h).first;
  }
  if (rc == 0) {
    // On the context's default stream, as Halide's kernels (unless a
    // program overrides halide_cuda_get_stream): finished before the
    // pipeline goes on, whatever stream its next kernels use.
    rc = forward ? f.cufftExecR2C(it->second, reinterpret_cast<float*>(src), reinterpret_cast<void*>(dst))
                 : f.cufftExecC2R(it->second, reinterpret_cast<void*>(src), reinterpret_cast<float*>(dst));
    if (rc == 0) rc = f.cuCtxSynchronize();
  } else {
    // No cuFFT where the pipeline runs, or more than 3 spatial axes: FFTW on the host.
    rc = through_host(
        g, forward, [&](float* host, size_t bytes) { return f.cuMemcpyDtoH(host, src, bytes); },
        [&](const float* host, size_t bytes) { return f.cuMemcpyHtoD(dst, host, bytes); });
  }
  CuContext popped = nullptr;
  f.cuCtxPopCurrent(&popped);
  if (rc != 0) {
    report("cuFFT failed with code " + std::to_string(rc));
    return -1;
  }
  out->set_device_dirty(true);
  return 0;
}

int transform(halide_buffer_t* in, halide_buffer_t* out, const Geometry& g, bool forward, int api) {
  if (api == static_cast<int>(DeviceFftApi::Cuda)) return cu_transform(in, out, g, forward);
#ifdef PROXC_WITH_CLFFT
  if (api == static_cast<int>(DeviceFftApi::OpenCl)) return cl_transform(in, out, g, forward);
#endif
  report("this build has no FFT for device API " + std::to_string(api));
  return -1;
}

}  // namespace

int device_fft_host_fallbacks() { return g_host_fallbacks.load(); }

bool device_fft_loads(DeviceFftApi api) {
  if (api == DeviceFftApi::Cuda) return cufft().ok;
#ifdef PROXC_WITH_CLFFT
  if (api == DeviceFftApi::OpenCl) return clfft().ok;
#endif
  return false;
}

const char* device_fft_library(DeviceFftApi api) {
  if (!device_fft_loads(api)) return "";
#ifdef PROXC_WITH_CLFFT
  if (api == DeviceFftApi::OpenCl) return clfft().version.c_str();
#endif
  return cufft().version.c_str();
}

}  // namespace proxc::internal

extern "C" int proxc_fft_r2c_device(halide_buffer_t* in, int spatial_rank, int n0, int api,
                                    halide_buffer_t* spectrum) {
  using namespace proxc::internal;
  if (in->is_bounds_query()) {
    real_from_spectrum(in, spectrum, spatial_rank, n0);
    return 0;
  }
  if (!regions_match(in, spectrum, spatial_rank)) {
    report("r2c: the input is not the transform's region");
    return -1;
  }
  return transform(in, spectrum, Geometry(in, spatial_rank), /*forward=*/true, api);
}

extern "C" int proxc_fft_c2r_device(halide_buffer_t* spectrum, int spatial_rank, int api,
                                    halide_buffer_t* out) {
  using namespace proxc::internal;
  if (spectrum->is_bounds_query()) {
    spectrum_from_real(spectrum, out, spatial_rank);
    return 0;
  }
  if (!regions_match(out, spectrum, spatial_rank)) {
    report("c2r: the output is not the transform's region");
    return -1;
  }
  return transform(spectrum, out, Geometry(out, spatial_rank), /*forward=*/false, api);
}
