// The standalone generator program a step program prints (lower.h,
// generator_source), and where the Halide library and headers it builds
// with are found.
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "halide/lower.h"

namespace proxc::internal::hl {

namespace {

std::string list(const std::vector<int64_t>& v) {
  std::ostringstream o;
  for (size_t i = 0; i < v.size(); ++i) o << (i ? ", " : "") << v[i];
  return o.str();
}

// Where a printed generator finds proxc/halide_ops.h and proxc/black_box.h:
// beside the installed libproxc this code runs in (<prefix>/share/proxc/
// halide_ops and <prefix>/include, as `cmake --install` lays them out; the
// Python package's include/ beside its libproxc.so holds both), else the
// source tree this proxc was built from.
std::pair<std::string, std::string> generator_include_dirs() {
  namespace fs = std::filesystem;
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&generator_include_dirs), &info) && info.dli_fname) {
    std::error_code ec;
    fs::path lib = fs::canonical(info.dli_fname, ec).parent_path();
    const fs::path package = lib / "include";
    if (!ec && fs::exists(package / "proxc/halide_ops.h", ec) && fs::exists(package / "proxc/black_box.h", ec)) {
      return {package.string(), package.string()};
    }
    // <prefix>/lib, <prefix>/lib64 or <prefix>/lib/<multiarch>.
    for (fs::path prefix : {lib.parent_path(), lib.parent_path().parent_path()}) {
      fs::path ops = prefix / "share/proxc/halide_ops", include = prefix / "include";
      if (!ec && fs::exists(ops / "proxc/halide_ops.h", ec) && fs::exists(include / "proxc/black_box.h", ec)) {
        return {ops.string(), include.string()};
      }
    }
  }
  return {PROXC_OPS_INCLUDE, PROXC_PUBLIC_INCLUDE};
}

}  // namespace

std::string halide_library_path() {
  static const std::string path = [] {
    namespace fs = std::filesystem;
    Dl_info info;
    std::error_code ec;
    if (dladdr(reinterpret_cast<void*>(&Halide::load_plugin), &info) && info.dli_fname) {
      fs::path lib = fs::canonical(info.dli_fname, ec);
      if (!ec && lib.filename().string().rfind("libHalide", 0) == 0) return lib.string();
    }
    return std::string(PROXC_HALIDE_LIBRARY);
  }();
  return path;
}

std::string halide_include_dir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path beside = fs::path(halide_library_path()).parent_path().parent_path() / "include";
  return fs::exists(beside / "Halide.h", ec) ? beside.string() : std::string(PROXC_HALIDE_INCLUDE);
}

std::string generator_source(const StepProgram& p, const Lowered& L, const std::string& plugin,
                             const std::string& autoscheduler) {
  const auto [ops_include, public_include] = generator_include_dirs();
  std::ostringstream o;
  o << "// " << (p.name.empty() ? "step program" : p.name)
    << ": a proxc step program as a standalone Halide generator.\n"
    << "// Build it and run it (writes OUT/NAME.a and OUT/NAME.h):\n"
    << "//   c++ -std=c++17 -O1 THIS_FILE.cpp -I " << ops_include << " -I " << public_include << " -I "
    << halide_include_dir() << " \\\n"
    << "//       " << halide_library_path() << " -Wl,-rpath,"
    << std::filesystem::path(halide_library_path()).parent_path().string()
    << " -lpthread -ldl -o generator && ./generator OUT NAME [TARGET]\n"
    << "// The library's arguments, in order: inputs (in_<name>, float32), params (p_<name>,\n"
    << "// double), data (data<i>, the problem's constants; a kernel of rank one as its two\n"
    << "// factors, hl::rank_one_factors), FFT spectra, scalar slots\n"
    << "// (s<i>), extent slots (e<i>), then the outputs. Each `g.` call below is a function\n"
    << "// of proxc/halide_ops.h, the library proxc's own JIT lowering builds pipelines with.\n"
    << "#include \"proxc/halide_ops.h\"\n\n"
    << "using proxc::halide_ops::Graph;\n"
    << "using proxc::halide_ops::Schedule;\n"
    << "using proxc::halide_ops::Val;\n\n"
    << "int main(int argc, char** argv) {\n"
    << "  Graph g("
    << (!autoscheduler.empty()                         ? "Schedule::None"
        : L.schedule == halide_ops::Schedule::Gpu      ? "Schedule::Gpu"
        : L.schedule == halide_ops::Schedule::GpuFloat ? "Schedule::GpuFloat"
                                                       : "Schedule::Default")
    << ");\n";
  // The recorded calls, each scalar slot with this problem's value as a comment.
  std::istringstream lines(L.key);
  for (std::string line; std::getline(lines, line);) {
    o << line;
    for (const char* call : {"g.scalar(", "g.constant("}) {
      size_t at = line.find(call);
      if (at == std::string::npos) continue;
      size_t slot = std::stoul(line.substr(at + std::strlen(call)));
      if (slot < L.scalar_values.size()) {
        char buf[48];
        std::snprintf(buf, sizeof buf, "  // s%zu = %.9g", slot, L.scalar_values[slot]);
        o << buf;
      }
    }
    o << "\n";
  }
  if (!autoscheduler.empty()) {
    o << "  // Estimates for the autoscheduler: the sizes and scalars of the problem this was printed from.\n"
      << "  g.set_estimates({" << list(L.extent_values) << "},\n                  {";
    for (size_t i = 0; i < L.scalar_values.size(); ++i) {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.17g", L.scalar_values[i]);
      o << (i ? ", " : "") << (std::isinf(L.scalar_values[i]) ? "1.0" : buf);
    }
    o << "});\n  g.use_autoscheduler(\"" << plugin << "\", \"" << autoscheduler << "\");\n";
  }
  o << "  return g.generate(argc, argv);\n}\n";
  return o.str();
}

}  // namespace proxc::internal::hl
