#include "halide/halide_backend.h"

#include <Halide.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <sstream>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <map>
#include <mutex>

#include "fft/fft.h"
#include "halide/fft_extern.h"
#include "halide/lower.h"
#include "support/error.h"
#include "support/file_util.h"

namespace proxc {

namespace {

std::atomic<int> g_compiles{0};

Halide::Target parse_target(const std::string& s) {
  if (s == "host") return Halide::get_jit_target_from_environment();
  user_assert(Halide::Target::validate_target_string(s)) << "--target: '" << s << "' is not a Halide target string";
  return Halide::Target(s);
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
// page fault each, which dominated the per-iteration time. This allocator
// keeps freed blocks (by size, up to 1 GiB in all) for the next run.
struct BlockCache {
  std::mutex m;
  std::multimap<size_t, void*> free_blocks;
  size_t cached_bytes = 0;
};
BlockCache& block_cache() {
  static BlockCache c;
  return c;
}
constexpr size_t kHeader = 128;  // keeps Halide's alignment and stores the size

void* cached_malloc(Halide::JITUserContext*, size_t n) {
  BlockCache& c = block_cache();
  {
    std::lock_guard<std::mutex> lock(c.m);
    auto it = c.free_blocks.find(n);
    if (it != c.free_blocks.end()) {
      void* p = it->second;
      c.free_blocks.erase(it);
      c.cached_bytes -= n;
      return static_cast<char*>(p) + kHeader;
    }
  }
  void* p = std::aligned_alloc(kHeader, ((n + kHeader + kHeader - 1) / kHeader) * kHeader);
  if (!p) return nullptr;
  *static_cast<size_t*>(p) = n;
  return static_cast<char*>(p) + kHeader;
}

void cached_free(Halide::JITUserContext*, void* ptr) {
  if (!ptr) return;
  void* p = static_cast<char*>(ptr) - kHeader;
  size_t n = *static_cast<size_t*>(p);
  BlockCache& c = block_cache();
  std::lock_guard<std::mutex> lock(c.m);
  if (c.cached_bytes + n > (size_t{1} << 30)) {
    std::free(p);
    return;
  }
  c.free_blocks.emplace(n, p);
  c.cached_bytes += n;
}

// A compiled pipeline shared by every program with the same structural key.
struct Entry {
  hl::Lowered lowered;
  std::mutex mutex;  // binding parameters and running are not reentrant
};

std::mutex g_cache_mutex;
std::map<std::string, std::shared_ptr<Entry>> g_cache;

std::shared_ptr<Entry> compiled_entry(const StepProgram& p, const Halide::Target& target, hl::Lowered* mine) {
  *mine = hl::lower(p);
  std::string key = target.to_string() + "|" + mine->key;
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  auto it = g_cache.find(key);
  if (it != g_cache.end()) return it->second;
  auto e = std::make_shared<Entry>();
  e->lowered = *mine;
  std::map<std::string, Halide::JITExtern> externs = {
      {"proxc_circulant_solve", Halide::JITExtern(proxc_circulant_solve)}};
  e->lowered.pipeline.set_jit_externs(externs);
  e->lowered.pipeline.jit_handlers().custom_malloc = cached_malloc;
  e->lowered.pipeline.jit_handlers().custom_free = cached_free;
  e->lowered.pipeline.compile_jit(target);
  ++g_compiles;
  g_cache[key] = e;
  return e;
}

class HalideStep : public CompiledStep {
 public:
  HalideStep(const StepProgram& p, const Halide::Target& t) : program_(p) {
    entry_ = compiled_entry(p, t, &mine_);
    // |otf|² of each circulant solve's kernel, from this program's data.
    for (const auto& [k, dims] : mine_.spectra_sources) {
      spectra_.push_back(spectrum(k->constant->array, dims));
      spectra_from_.push_back(&k->constant->array);
    }
  }

  static Array spectrum(const Array& kernel, const Shape& dims) { return kernel_spectrum(kernel, dims); }

  StepOutputs run(const StepInputs& in) override {
    check_step_inputs(program_, in);
    hl::Lowered& L = entry_->lowered;
    std::lock_guard<std::mutex> lock(entry_->mutex);
    std::vector<Halide::Buffer<float>> keep;
    for (auto& [name, ip] : L.inputs) {
      keep.push_back(wrap(*in.buffers.at(name)));
      ip.set(keep.back());
    }
    for (auto& [name, param] : L.params) param.set(in.params.at(name));
    for (size_t i = 0; i < L.scalars.size(); ++i) L.scalars[i].set(static_cast<float>(mine_.scalar_values[i]));
    for (size_t i = 0; i < L.extents.size(); ++i) L.extents[i].set(static_cast<int>(mine_.extent_values[i]));
    for (size_t i = 0; i < L.data.size(); ++i) {
      const ExprNode* node = mine_.data_nodes[i];
      auto it = in.data.find(node);
      keep.push_back(wrap(it != in.data.end() ? *it->second : node->constant->array));
      L.data[i].set(keep.back());
    }
    for (size_t i = 0; i < L.spectra.size(); ++i) {
      // Replacement kernel data changes the spectrum: recompute it (once per array).
      const auto& [kernel, dims] = mine_.spectra_sources[i];
      auto it = in.data.find(kernel);
      if (it != in.data.end() && spectra_from_[i] != it->second) {
        spectra_[i] = spectrum(*it->second, dims);
        spectra_from_[i] = it->second;
      }
      keep.push_back(wrap(spectra_[i]));
      L.spectra[i].set(keep.back());
    }
    StepOutputs out;
    std::vector<Halide::Buffer<>> bufs;
    std::vector<double> scalars(mine_.outputs.size());
    for (size_t i = 0; i < mine_.outputs.size(); ++i) {
      const hl::LoweredOutput& o = mine_.outputs[i];
      if (o.rank == 0) {
        bufs.push_back(Halide::Buffer<double>::make_scalar(&scalars[i]));
      } else {
        Array& a = out.arrays[o.name];
        a = Array(o.shape);
        bufs.push_back(wrap(a));
      }
    }
    L.pipeline.realize(Halide::Realization(bufs));
    for (size_t i = 0; i < mine_.outputs.size(); ++i) {
      if (mine_.outputs[i].rank == 0) out.scalars[mine_.outputs[i].name] = scalars[i];
    }
    return out;
  }

 private:
  StepProgram program_;
  hl::Lowered mine_;
  std::shared_ptr<Entry> entry_;
  std::vector<Array> spectra_;
  std::vector<const Array*> spectra_from_;  // the kernel data each spectrum was computed from
};

class HalideBackend : public Backend {
 public:
  explicit HalideBackend(const HalideOptions& o) : target_(parse_target(o.target)) {}
  std::string name() const override { return "halide"; }
  double epsilon() const override { return 1.1920928955078125e-07; }
  std::unique_ptr<CompiledStep> compile(const StepProgram& program) override {
    return std::make_unique<HalideStep>(program, target_);
  }

 private:
  Halide::Target target_;
};

}  // namespace

std::unique_ptr<Backend> make_halide_backend(const HalideOptions& options) {
  return std::make_unique<HalideBackend>(options);
}

int halide_compile_count() { return g_compiles.load(); }

Array kernel_spectrum(const Array& kernel, const Shape& dims) {
  Array a;
  a.shape = dims;
  a.shape.back() = dims.back() / 2 + 1;
  for (const auto& z : fft::kernel_otf(kernel, dims)) a.data.push_back(static_cast<float>(std::norm(z)));
  return a;
}

namespace {
// The arguments of an ahead-of-time function, in order: inputs (by name),
// params (by name), data, spectra, scalar slots, extent slots.
std::vector<Halide::Argument> pipeline_arguments(hl::Lowered& L) {
  std::vector<Halide::Argument> args;
  for (auto& [name, ip] : L.inputs) args.push_back(ip);
  for (auto& [name, p] : L.params) args.push_back(p);
  for (auto& ip : L.data) args.push_back(ip);
  for (auto& ip : L.spectra) args.push_back(ip);
  for (auto& p : L.scalars) args.push_back(p);
  for (auto& p : L.extents) args.push_back(p);
  return args;
}

const ExprNode* mine_or(const hl::Lowered& L, size_t i) { return L.data_nodes[i]; }

std::string float_literal(double v) {
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "-INFINITY";
  char buf[64];
  std::snprintf(buf, sizeof buf, "static_cast<float>(%.17g)", v);
  return buf;
}
}  // namespace

AotArtifacts halide_compile_aot(const StepProgram& program, const std::string& dir, const std::string& name,
                                const HalideOptions& options) {
  user_assert(!name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }))
      << "compile_aot: the function name must be an identifier, got '" << name << "'";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  user_assert(!ec) << dir << ": cannot create the output folder: " << ec.message();
  hl::Lowered L = hl::lower(program);
  Halide::Target t = parse_target(options.target);
  if (options.target == "host") t = Halide::get_host_target();
  std::vector<Halide::Argument> args = pipeline_arguments(L);
  std::string stem = (std::filesystem::path(dir) / name).string();
  L.pipeline.compile_to_static_library(stem, args, name, t);
  AotArtifacts a;
  a.library = stem + ".a";
  a.header = stem + ".h";
  a.needs_fft_runtime = !L.spectra.empty();
  // The wrapper: every run-time argument the caller provides, the scalar and
  // extent slots filled in with this program's values.
  std::ostringstream w, m;
  w << "// Generated by proxc: calls " << name << "() with the scalars and sizes of the problem it was\n"
    << "// compiled from. Link " << name << ".a" << (a.needs_fft_runtime ? ", libproxc_runtime.a and -lfftw3f" : "")
    << " and -lpthread -ldl.\n#pragma once\n#include <cmath>\n#include \"" << name << ".h\"\n\n";
  w << "inline int " << name << "_call(";
  std::vector<std::string> params, call;
  m << "{\n \"function\": \"" << name << "\",\n \"arguments\": [\n";
  auto manifest = [&](const std::string& n, const std::string& kind, const std::string& extra) {
    m << (call.empty() ? "" : ",\n") << "  {\"name\": \"" << n << "\", \"kind\": \"" << kind << "\"" << extra << "}";
  };
  for (auto& [n, ip] : L.inputs) {
    manifest(n, "input", "");
    params.push_back("halide_buffer_t* in_" + n);
    call.push_back("in_" + n);
  }
  for (auto& [n, p] : L.params) {
    manifest(n, "param", "");
    params.push_back("double p_" + n);
    call.push_back("p_" + n);
  }
  for (size_t i = 0; i < L.data.size(); ++i) {
    const ExprNode* node = mine_or(L, i);
    std::string extra = ", \"constant\": \"" + node->name_hint + "\"";
    if (node->constant->source.type == ConstantSource::Type::File) {
      extra += ", \"path\": \"" + node->constant->source.path + "\"";
    }
    manifest("data" + std::to_string(i), "data", extra);
    params.push_back("halide_buffer_t* data" + std::to_string(i));
    call.push_back("data" + std::to_string(i));
  }
  for (size_t i = 0; i < L.spectra.size(); ++i) {
    manifest("spectrum" + std::to_string(i), "spectrum",
             ", \"kernel\": \"" + L.spectra_sources[i].first->name_hint + "\"");
    params.push_back("halide_buffer_t* spectrum" + std::to_string(i));
    call.push_back("spectrum" + std::to_string(i));
  }
  for (double v : L.scalar_values) call.push_back(float_literal(v));
  for (int64_t v : L.extent_values) call.push_back(std::to_string(v));
  for (const auto& o : L.outputs) {
    manifest(o.name, "output", o.rank == 0 ? ", \"type\": \"float64\", \"rank\": 0" : ", \"type\": \"float32\"");
    params.push_back("halide_buffer_t* out_" + o.name);
    call.push_back("out_" + o.name);
  }
  m << "\n ]\n}\n";
  for (size_t i = 0; i < params.size(); ++i) w << (i ? ", " : "") << params[i];
  w << ") {\n  return " << name << "(";
  for (size_t i = 0; i < call.size(); ++i) w << (i ? ", " : "") << call[i];
  w << ");\n}\n";
  a.wrapper = stem + "_call.h";
  a.manifest = stem + ".json";
  write_file_atomic(a.wrapper, w.str());
  write_file_atomic(a.manifest, m.str());
  return a;
}

std::string halide_emit(const StepProgram& program, const std::string& kind, const HalideOptions& options) {
  hl::Lowered L = hl::lower(program);
  Halide::Target t = parse_target(options.target);
  std::vector<Halide::Argument> args = pipeline_arguments(L);
  std::string tmp = (std::filesystem::temp_directory_path() / ("proxc_emit_" + std::to_string(::getpid()))).string();
  std::string path = tmp + (kind == "stmt" ? ".stmt" : kind == "c" ? ".c" : ".html");
  if (kind == "stmt") L.pipeline.compile_to_lowered_stmt(path, args, Halide::Text, t);
  else if (kind == "html") L.pipeline.compile_to_lowered_stmt(path, args, Halide::HTML, t);
  else L.pipeline.compile_to_c(path, args, "proxc_step", t);
  std::string text = read_file(path);
  std::remove(path.c_str());
  return text;
}

}  // namespace proxc
