// proxc._proxc: the public C++ API (include/proxc) for Python, through
// nanobind. Thin: the ProxImaL-compatible layer (Variable, conv, sum_squares,
// Problem.solve, ...) is Python, in python/proxc/. What this file decides:
// - arrays: a NumPy array in becomes a proxc::Array by one copy into proxc's
//   storage (the problem's constants are immutable values, content-hashed);
//   an Array out becomes a NumPy array without a copy (the array owns the
//   memory through a capsule);
// - errors: proxc::UserError is ValueError, InternalError RuntimeError;
// - solves run without the GIL; the callbacks take it back at each check,
//   and so does Ctrl-C (KeyboardInterrupt at the next check, or at once where
//   it interrupted a Python callback: keep_interrupt).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "proxc/proxc.h"

namespace nb = nanobind;
using namespace nb::literals;

// proxc::Array <-> numpy.ndarray (float32, C order).
namespace nanobind::detail {
template <>
struct type_caster<proxc::Array> {
  NB_TYPE_CASTER(proxc::Array, const_name("numpy.ndarray[float32]"))

  // A NumPy array of float32 in C order (the package converts others
  // first). An array proxc refuses (too large, too many axes) is not this
  // type: the call's error names the argument (the package checks sizes
  // first, so that its message is a ValueError).
  bool from_python(handle src, uint8_t flags, cleanup_list* cleanup) noexcept {
    make_caster<nb::ndarray<const float, nb::c_contig, nb::device::cpu>> c;
    if (!c.from_python(src, flags, cleanup)) return false;
    const auto& nd = c.value;
    try {
      proxc::Shape shape;
      for (size_t i = 0; i < nd.ndim(); ++i) shape.push_back(static_cast<int64_t>(nd.shape(i)));
      proxc::Array a(shape);
      if (a.size() > 0) std::memcpy(a.data(), nd.data(), static_cast<size_t>(a.size()) * sizeof(float));
      value = std::move(a);
      return true;
    } catch (...) {
      return false;
    }
  }

  // The array's memory handed to NumPy: a capsule owns the proxc::Array.
  static handle from_cpp(proxc::Array&& a, rv_policy, cleanup_list*) noexcept {
    try {
      auto owned = std::make_unique<proxc::Array>(std::move(a));
      proxc::Array* heap = owned.get();
      nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<proxc::Array*>(p); });
      owned.release();  // the capsule deletes it from here on
      std::vector<size_t> shape(heap->shape().begin(), heap->shape().end());
      float* data = heap->size() > 0 ? heap->data() : nullptr;
      return nb::ndarray<nb::numpy, float>(data, shape.size(), shape.data(), owner).cast().release();
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
      return handle();
    }
  }
  static handle from_cpp(const proxc::Array& a, rv_policy p, cleanup_list* c) noexcept {
    try {
      return from_cpp(proxc::Array(a), p, c);
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
      return handle();
    }
  }
};
}  // namespace nanobind::detail

namespace {

nb::tuple shape_tuple(const proxc::Shape& s) {
  nb::list l;
  for (int64_t e : s) l.append(e);
  return nb::tuple(l);
}

template <typename Kind>
Kind kind_from(const std::string& name, const char* what) {
  Kind k{};
  if (!proxc::from_string(name, &k))
    throw proxc::UserError(std::string(what) + ": unknown '" + name + "' (one of " +
                           proxc::kind_list<Kind>() + ")");
  return k;
}

// A parameter: a number or a constant expression.
proxc::Param to_param(nb::handle h) {
  if (nb::isinstance<proxc::Expr>(h)) return proxc::Param(nb::cast<proxc::Expr>(h));
  return proxc::Param(nb::cast<double>(h));
}

// Runs f without the GIL; a Python exception a callback raised (kept in
// *pending, the GIL held) is raised again after it.
struct PendingError {
  std::optional<nb::python_error> error;
  void raise_if_any() {
    if (error) {
      nb::python_error e = std::move(*error);
      error.reset();
      throw e;
    }
  }
};

// A Python callback of an operator or a prox function that Ctrl-C interrupted
// (it raised KeyboardInterrupt) fails, and proxc stops with that failure;
// keep_interrupt notes it, so that `interruptible` raises KeyboardInterrupt,
// not the ValueError that quotes it. (Setting Python's signal flag again
// instead does not survive: measured, PyErr_CheckSignals found it cleared.)
// One flag for the process: callbacks run on the solve's worker threads.
std::atomic<bool> callback_interrupted{false};

void keep_interrupt(const nb::python_error& e) {
  if (e.matches(PyExc_KeyboardInterrupt)) callback_interrupted = true;
}

// f() without the GIL; should it fail after a callback was interrupted, or
// with a Ctrl-C pending, KeyboardInterrupt is raised instead of its error.
template <typename F>
auto interruptible(F f) -> decltype(f()) {
  callback_interrupted = false;
  std::exception_ptr failure;
  {
    nb::gil_scoped_release release;
    try {
      return f();
    } catch (...) {
      failure = std::current_exception();
    }
  }
  if (callback_interrupted.exchange(false)) {
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw nb::python_error();
  }
  if (PyErr_CheckSignals() != 0) throw nb::python_error();
  std::rethrow_exception(failure);
}

// Whether a callback's result asks to go on: None or a true value.
bool goes_on(const nb::object& r) {
  if (r.is_none()) return true;
  const int t = PyObject_IsTrue(r.ptr());
  if (t < 0) throw nb::python_error();
  return t != 0;
}

proxc::SolverSummary solve_py(proxc::Problem& problem, proxc::SolverOptions options, nb::object callback,
                              bool pass_iterate) {
  PendingError pending;
  // Ctrl-C and a callback's exception stop the solve at the next check.
  auto at_check = [&pending](const std::function<bool()>& call) {
    nb::gil_scoped_acquire gil;
    try {
      if (PyErr_CheckSignals() != 0) throw nb::python_error();
      return call();
    } catch (nb::python_error& e) {
      pending.error.emplace(std::move(e));
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
      pending.error.emplace();
    }
    return false;
  };
  // The closures hold the callback borrowed (a handle: copying them, as the
  // solve does without the GIL, touches no reference count); the argument
  // keeps it alive for the whole call.
  const nb::handle cb = callback;
  if (!cb.is_none() && pass_iterate) {
    options.iterate_callback = [&at_check, cb](const proxc::IterationInfo& info,
                                               const std::map<std::string, proxc::Array>& x) {
      return at_check([&] {
        nb::dict xs;
        for (const auto& [name, a] : x) xs[nb::str(name.c_str())] = nb::cast(proxc::Array(a));
        return goes_on(cb(info, xs));
      });
    };
  } else if (!cb.is_none()) {
    options.callback = [&at_check, cb](const proxc::IterationInfo& info) {
      return at_check([&] { return goes_on(cb(info)); });
    };
  } else {
    options.callback = [&](const proxc::IterationInfo&) { return at_check([] { return true; }); };
  }
  proxc::SolverSummary summary;
  try {
    summary = interruptible([&] { return proxc::solve(problem, options); });
  } catch (...) {
    // A check after the failure (the solve reports where it stopped) may
    // have taken the interrupt a callback kept: its exception comes first.
    pending.raise_if_any();
    throw;
  }
  pending.raise_if_any();
  return summary;
}

// Module::run or Module::emulate without the GIL: (arrays, scalars) out.
template <proxc::ProgramOutputs (proxc::Module::*Run)(const proxc::ProgramInputs&)>
std::pair<std::map<std::string, proxc::Array>, std::map<std::string, double>> run_program(
    proxc::Module& mod, std::map<std::string, proxc::Array> arrays, std::map<std::string, double> params) {
  proxc::ProgramInputs in{std::move(arrays), std::move(params)};
  proxc::ProgramOutputs out = interruptible([&] { return (mod.*Run)(in); });
  return {std::move(out.arrays), std::move(out.scalars)};
}

// A linear operator written in Python (ProxImaL's LinOpFactory), registered
// as a black box: its callbacks take the GIL and call forward(x, out) or
// adjoint(y, out) on NumPy arrays of their own (copies of proxc's buffers).
// The registry keeps operators for the life of the process, and so does this;
// their Python callbacks are dropped when the interpreter exits (release_python_black_boxes),
// before nanobind's check for objects still alive, which would report them as leaks.
struct PyBlackBox {
  std::string name;
  proxc::Shape in_shape, out_shape;
  nb::object forward, adjoint;
};

std::vector<PyBlackBox*>& python_black_boxes() {
  static std::vector<PyBlackBox*> all;
  return all;
}

// A prox function written in Python (proxc.register_prox_fn, diff_fn),
// registered as a prox function of the user's (include/proxc/prox_fn.h): its
// callbacks take the GIL and call prox(v, rho, params) or value(x, params)
// with NumPy arrays of their own and the parameters as a tuple. The Python
// side (prox_fns.py) checks what they return; a failure's Python exception
// is what the solve's error quotes. Kept for the life of the process, as the
// black boxes are.
struct PyProxFn {
  std::string name;
  nb::object prox, value;
  std::vector<std::string> param_names;
  std::vector<double> param_defaults;
};

std::vector<PyProxFn*>& python_prox_fns() {
  static std::vector<PyProxFn*> all;
  return all;
}

// Python's atexit: no callback runs after it (the interpreter is finishing).
void release_python_black_boxes() {
  for (PyBlackBox* bb : python_black_boxes()) {
    bb->forward = nb::object();
    bb->adjoint = nb::object();
  }
  for (PyProxFn* f : python_prox_fns()) {
    f->prox = nb::object();
    f->value = nb::object();
  }
}

// "TypeError: what it said" of a Python exception, without its traceback.
std::string python_error_text(const nb::python_error& e) {
  std::string type = "error";
  try {
    type = nb::cast<std::string>(e.type().attr("__name__"));
    return type + ": " + nb::cast<std::string>(nb::str(e.value()));
  } catch (...) {
    return type;
  }
}

// A callback of a Python prox function: call(fn) with the GIL taken, its
// failure reported through proxc_black_box_set_failure.
template <typename Call>
int call_py_prox_fn(const PyProxFn& f, const char* role, const nb::object& fn, Call call) {
  nb::gil_scoped_acquire gil;
  std::string why;
  try {
    if (!fn.is_valid()) throw std::runtime_error("called after the interpreter began to exit");
    call(fn);
    return 0;
  } catch (const nb::python_error& e) {
    keep_interrupt(e);
    why = "raised " + python_error_text(e);
  } catch (const std::exception& e) {
    why = std::string("failed: ") + e.what();
  }
  const std::string msg = "the Python " + std::string(role) + " of '" + f.name + "' " + why;
  proxc_black_box_set_failure(msg.c_str());
  return 1;
}

nb::tuple py_prox_params(const PyProxFn* f, const double* params) {
  nb::list out;
  for (size_t i = 0; i < f->param_names.size(); ++i) out.append(params[i]);
  return nb::tuple(out);
}

int py_prox_fn_apply(void* user, const float* v, const int64_t* shape, int rank, double rho,
                     const double* params, float* out) {
  const auto* f = static_cast<const PyProxFn*>(user);
  return call_py_prox_fn(*f, "prox", f->prox, [&](const nb::object& prox) {
    proxc::Array va(proxc::Shape(shape, shape + rank));
    const size_t n = static_cast<size_t>(va.size());
    if (n > 0) std::memcpy(va.data(), v, n * sizeof(float));
    // The Python side returns a float32 array of v's shape (or raises).
    proxc::Array result =
        nb::cast<proxc::Array>(prox(nb::cast(std::move(va)), rho, py_prox_params(f, params)));
    if (static_cast<size_t>(result.size()) != n)
      throw std::runtime_error("a result of " + std::to_string(result.size()) +
                               " entries for an operand of " + std::to_string(n));
    if (n > 0) std::memcpy(out, static_cast<const proxc::Array&>(result).data(), n * sizeof(float));
  });
}

int py_prox_fn_value(void* user, const float* x, const int64_t* shape, int rank, const double* params,
                     double* value) {
  const auto* f = static_cast<const PyProxFn*>(user);
  return call_py_prox_fn(*f, "value", f->value, [&](const nb::object& fn) {
    proxc::Array xa(proxc::Shape(shape, shape + rank));
    if (xa.size() > 0) std::memcpy(xa.data(), x, static_cast<size_t>(xa.size()) * sizeof(float));
    *value = nb::cast<double>(fn(nb::cast(std::move(xa)), py_prox_params(f, params)));
  });
}

void register_python_prox_fn(const std::string& name, nb::object prox, nb::object value,
                             const std::vector<std::string>& param_names,
                             const std::vector<double>& defaults) {
  if (param_names.size() != defaults.size())
    throw proxc::UserError("register_prox_fn: one default per parameter");
  if (proxc::is_reserved_name(name))
    throw proxc::UserError("register_prox_fn: cannot register '" + name +
                           "' (a name the language reserves: a built-in function, operator or keyword)");
  // Registered from Python before (a notebook cell run again): the same
  // declaration takes the new callables; the registry itself is unchanged.
  for (PyProxFn* old : python_prox_fns()) {
    if (old->name != name) continue;
    if (old->param_names != param_names || old->param_defaults != defaults ||
        old->value.is_valid() == value.is_none())
      throw proxc::UserError("register_prox_fn: cannot register '" + name +
                             "' again with other parameters, defaults or value callback (it is registered in "
                             "this process; choose another name)");
    old->prox = std::move(prox);
    old->value = value.is_none() ? nb::object() : std::move(value);
    return;
  }
  auto f = std::make_unique<PyProxFn>(PyProxFn{
      name, std::move(prox), value.is_none() ? nb::object() : std::move(value), param_names, defaults});
  std::vector<const char*> names;
  for (const std::string& p : f->param_names) names.push_back(p.c_str());
  proxc_prox_fn d{};
  d.name = f->name.c_str();
  d.prox = &py_prox_fn_apply;
  d.value = f->value.is_valid() ? &py_prox_fn_value : nullptr;
  d.num_params = static_cast<int>(names.size());
  d.param_names = names.data();
  d.param_defaults = f->param_defaults.data();
  d.user = f.get();
  const int rc = proxc_register_prox_fn(&d);
  if (rc != 0) {
    const std::string why =
        rc == 1   ? "not a name: letters, digits and '_', not starting with a digit"
        : rc == 3 ? "another prox function has that name"
        : rc == 4 ? "bad parameters: at most " + std::to_string(PROXC_PROX_FN_MAX_PARAMS) +
                        " names other than alpha, beta, b, c, gamma and d, each once, with finite defaults"
                  : "the registry refused it";
    throw proxc::UserError("register_prox_fn: cannot register '" + name + "' (" + why + ")");
  }
  python_prox_fns().push_back(f.release());  // the registry holds it from here on
}

int call_py_black_box(void* user, bool adjoint, const float* in, const int64_t* in_shape, int in_rank, float* out,
                      const int64_t* out_shape, int out_rank) {
  auto* bb = static_cast<PyBlackBox*>(user);
  nb::gil_scoped_acquire gil;
  try {
    // Arrays of their own (NumPy owns them), so that a callback may keep
    // them: the operand copied in, the result copied out after the call.
    proxc::Array xa(proxc::Shape(in_shape, in_shape + in_rank)), ya(proxc::Shape(out_shape, out_shape + out_rank));
    if (xa.size() > 0) std::memcpy(xa.data(), in, static_cast<size_t>(xa.size()) * sizeof(float));
    const float* result = ya.size() > 0 ? ya.data() : nullptr;
    const size_t n = static_cast<size_t>(ya.size());
    nb::object x = nb::cast(std::move(xa)), y = nb::cast(std::move(ya));
    const nb::object& f = adjoint ? bb->adjoint : bb->forward;
    if (!f.is_valid()) throw std::runtime_error("called after the interpreter began to exit");
    f(x, y);
    if (n > 0) std::memcpy(out, result, n * sizeof(float));
    return 0;
  } catch (const std::exception& e) {
    if (const auto* pe = dynamic_cast<const nb::python_error*>(&e)) keep_interrupt(*pe);
    const std::string msg = "LinOpFactory operator '" + bb->name + "', its " + (adjoint ? "adjoint" : "forward") +
                            ": " + e.what();
    proxc_black_box_set_failure(msg.c_str());
    return 1;
  }
}

int py_black_box_forward(void* user, const float* in, const int64_t* in_shape, int in_rank, float* out,
                         const int64_t* out_shape, int out_rank) {
  return call_py_black_box(user, false, in, in_shape, in_rank, out, out_shape, out_rank);
}
int py_black_box_adjoint(void* user, const float* in, const int64_t* in_shape, int in_rank, float* out,
                         const int64_t* out_shape, int out_rank) {
  return call_py_black_box(user, true, in, in_shape, in_rank, out, out_shape, out_rank);
}
int py_black_box_shape(void* user, const int64_t* in_shape, int in_rank, int64_t* out_shape, int* out_rank) {
  auto* bb = static_cast<PyBlackBox*>(user);
  if (proxc::Shape(in_shape, in_shape + in_rank) != bb->in_shape) return 1;
  for (size_t i = 0; i < bb->out_shape.size(); ++i) out_shape[i] = bb->out_shape[i];
  *out_rank = static_cast<int>(bb->out_shape.size());
  return 0;
}

void register_python_black_box(const std::string& name, const proxc::Shape& in_shape,
                               const proxc::Shape& out_shape, nb::object forward, nb::object adjoint,
                               double norm_bound) {
  if (in_shape.size() > PROXC_BLACK_BOX_MAX_RANK || out_shape.size() > PROXC_BLACK_BOX_MAX_RANK)
    throw proxc::UserError("LinOpFactory: at most " + std::to_string(PROXC_BLACK_BOX_MAX_RANK) + " axes");
  auto bb = std::make_unique<PyBlackBox>(
      PyBlackBox{name, in_shape, out_shape, std::move(forward), std::move(adjoint)});
  proxc_black_box d{};
  d.name = bb->name.c_str();
  d.forward = &py_black_box_forward;
  d.adjoint = &py_black_box_adjoint;
  d.output_shape = &py_black_box_shape;
  d.norm_bound = norm_bound;
  d.user = bb.get();
  const int rc = proxc_register_black_box(&d);
  if (rc != 0)
    throw proxc::UserError("LinOpFactory: cannot register '" + name + "' (" +
                           (rc == 3 ? "the name is taken" : "a bad name") + ")");
  python_black_boxes().push_back(bb.release());  // the registry holds it from here on
}

// Arrays and files.
void bind_arrays(nb::module_& m) {
  m.def("load_array", &proxc::load_array, "path"_a);
  m.def("save_array", nb::overload_cast<const std::string&, const proxc::Array&>(&proxc::save_array), "path"_a,
        "array"_a);
  m.def(
      "save_array",
      [](const std::string& path, const proxc::Array& a, const std::vector<int64_t>& chunks, bool chunked, int gzip,
         bool shuffle) {
        proxc::SaveOptions o;
        o.chunks = chunks;
        o.chunked = chunked;
        o.gzip = gzip;
        o.shuffle = shuffle;
        proxc::save_array(path, a, o);
      },
      "path"_a, "array"_a, "chunks"_a, "chunked"_a, "gzip"_a, "shuffle"_a);
  m.def("psnr", &proxc::psnr, "x"_a, "reference"_a);
  m.def("ssim", &proxc::ssim, "x"_a, "reference"_a);
  m.def("montage", &proxc::montage, "images"_a, "names"_a = std::vector<std::string>{}, "gap"_a = 4);
  m.def("allow_path", &proxc::allow_path, "dir"_a);
  m.def("load_plugin", &proxc::load_plugin, "path"_a);
  m.def("set_max_array_bytes", &proxc::set_max_array_bytes, "bytes"_a);
  m.def("max_array_bytes", &proxc::max_array_bytes);
  m.def("parse_byte_size", &proxc::parse_byte_size, "text"_a, "option"_a);
  // The address of an Array's elements after a conversion from NumPy and
  // back, for the tests of the no-copy promise.
  m.def(
      "_roundtrip", [](proxc::Array a) { return a; }, "array"_a);
  m.def(
      "_value_and_address",
      [](const proxc::Problem& p, const proxc::Expr& v) {
        proxc::Array a = p.value(v);
        const auto address = reinterpret_cast<uintptr_t>(static_cast<const proxc::Array&>(a).data());
        return std::make_pair(nb::cast(std::move(a)), address);
      },
      "problem"_a, "variable"_a);
}

// Expressions.
void bind_expressions(nb::module_& m) {
  nb::class_<proxc::Expr>(m, "Expr")
      .def_prop_ro("shape", [](const proxc::Expr& e) { return shape_tuple(e.shape()); })
      .def_prop_ro("name", &proxc::Expr::name)
      .def_prop_ro("kind", &proxc::Expr::kind)
      .def_prop_ro("is_variable", &proxc::Expr::is_variable)
      .def_prop_ro("is_constant", &proxc::Expr::is_constant)
      .def("__add__", [](const proxc::Expr& a, const proxc::Expr& b) { return a + b; })
      .def("__add__", [](const proxc::Expr& a, double b) { return a + b; })
      .def("__radd__", [](const proxc::Expr& a, double b) { return b + a; })
      .def("__sub__", [](const proxc::Expr& a, const proxc::Expr& b) { return a - b; })
      .def("__sub__", [](const proxc::Expr& a, double b) { return a - b; })
      .def("__rsub__", [](const proxc::Expr& a, double b) { return b - a; })
      .def("__neg__", [](const proxc::Expr& a) { return -a; })
      .def("__mul__", [](const proxc::Expr& a, double s) { return a * s; })
      .def("__rmul__", [](const proxc::Expr& a, double s) { return s * a; })
      .def("__truediv__", [](const proxc::Expr& a, double s) { return a / s; });

  m.def("variable", &proxc::variable, "shape"_a, "name"_a = "x");
  m.def("constant", &proxc::constant, "data"_a, "name"_a = "");
  m.def("gaussian", &proxc::gaussian, "size"_a, "sigma"_a);
  m.def("grad", &proxc::grad, "x"_a, "dims"_a = -1);
  m.def("conv",
        nb::overload_cast<const proxc::Expr&, const proxc::Expr&, const std::string&, int64_t>(&proxc::conv),
        "k"_a, "x"_a, "boundary"_a = "circular", "dims"_a = -1);
  m.def("uneven_subsample", &proxc::uneven_subsample, "x"_a, "indices"_a);
  m.def("pxwise_matrixmult", &proxc::pxwise_matrixmult, "matrices"_a, "x"_a);
  m.def("mul_elemwise", &proxc::mul_elemwise, "w"_a, "x"_a);
  m.def("subsample", &proxc::subsample, "x"_a, "steps"_a);
  m.def("scale", &proxc::scale, "s"_a, "x"_a);
  m.def("vstack", &proxc::vstack, "parts"_a);
  m.def("hstack", &proxc::hstack, "parts"_a);
  m.def("reshape", &proxc::reshape, "x"_a, "shape"_a);
  m.def("transpose", &proxc::transpose, "x"_a, "axes"_a = std::vector<int64_t>{});
  m.def("crop", &proxc::crop, "x"_a, "begin"_a, "extent"_a);
  m.def("mul_color", nb::overload_cast<const proxc::Expr&, const proxc::Expr&>(&proxc::mul_color), "x"_a,
        "matrix"_a);
  m.def("mul_color", nb::overload_cast<const proxc::Expr&, const std::string&>(&proxc::mul_color), "x"_a,
        "named"_a);
  m.def("warp",
        nb::overload_cast<const proxc::Expr&, const proxc::Expr&, const std::vector<int64_t>&>(&proxc::warp),
        "x"_a, "homography"_a, "target_shape"_a = std::vector<int64_t>{});
  m.def("black_box", &proxc::black_box, "name"_a, "x"_a);
  m.def("register_python_black_box", &register_python_black_box, "name"_a, "input_shape"_a, "output_shape"_a,
        "forward"_a, "adjoint"_a, "norm_bound"_a = 0.0);
  m.def("register_python_prox_fn", &register_python_prox_fn, "name"_a, "prox"_a, "value"_a.none(),
        "param_names"_a, "param_defaults"_a);
  m.def("evaluate",
        nb::overload_cast<const proxc::Expr&, const std::vector<std::pair<proxc::Expr, proxc::Array>>&>(
            &proxc::evaluate),
        "e"_a, "values"_a);
  m.def("forward", &proxc::forward, "e"_a, "values"_a);
  m.def("adjoint", &proxc::adjoint, "e"_a, "y"_a, "variables"_a);
  m.def(
      "operator_norm",
      [](const proxc::Expr& e, const std::string& kind, double tol) {
        return proxc::operator_norm(e, kind_from<proxc::NormKind>(kind, "norm"), tol);
      },
      "e"_a, "kind"_a = "power", "tol"_a = 1e-3);
}

// Function terms.
void bind_terms(nb::module_& m) {
  nb::class_<proxc::Term>(m, "Term")
      .def(nb::init<>())
      .def("alpha", [](proxc::Term t, double v) { return std::move(t.alpha(v)); })
      .def("beta", [](proxc::Term t, double v) { return std::move(t.beta(v)); })
      .def("b", [](proxc::Term t, nb::handle v) { return std::move(t.b(to_param(v))); })
      .def("c", [](proxc::Term t, nb::handle v) { return std::move(t.c(to_param(v))); })
      .def("gamma", [](proxc::Term t, double v) { return std::move(t.gamma(v)); })
      .def("d", [](proxc::Term t, double v) { return std::move(t.d(v)); })
      .def("__len__", &proxc::Term::size)
      .def("__add__", [](const proxc::Term& a, const proxc::Term& b) { return a + b; })
      .def("__mul__", [](const proxc::Term& t, double s) { return t * s; })
      .def("__rmul__", [](const proxc::Term& t, double s) { return s * t; });
  m.def("evaluate_terms",
        nb::overload_cast<const proxc::Term&, const std::vector<std::pair<proxc::Expr, proxc::Array>>&>(
            &proxc::evaluate),
        "terms"_a, "values"_a);
  m.def("prox", &proxc::prox, "f"_a, "rho"_a, "v"_a);
  m.def("evaluate_at", &proxc::evaluate_at, "f"_a, "v"_a);
  m.def("sum_squares", &proxc::sum_squares, "e"_a);
  m.def("norm1", &proxc::norm1, "e"_a);
  m.def("group_norm1", &proxc::group_norm1, "e"_a, "axes"_a);
  m.def("nonneg", &proxc::nonneg, "e"_a);
  m.def("poisson_norm", &proxc::poisson_norm, "e"_a, "counts"_a);
  m.def("sum_entries", &proxc::sum_entries, "e"_a);
  m.def("weighted_norm1", &proxc::weighted_norm1, "e"_a, "w"_a);
  m.def("weighted_sum_squares", &proxc::weighted_sum_squares, "e"_a, "w"_a);
  m.def("weighted_group_norm1", &proxc::weighted_group_norm1, "e"_a, "axes"_a, "w"_a);
  m.def("weighted_nonneg", &proxc::weighted_nonneg, "e"_a, "w"_a);
  m.def("masked_nonneg", &proxc::masked_nonneg, "e"_a, "mask"_a);
  m.def("weighted_poisson_norm", &proxc::weighted_poisson_norm, "e"_a, "counts"_a, "w"_a);
  m.def("zero_prox", &proxc::zero_prox, "e"_a);
  m.def("prox_fn", &proxc::prox_fn, "name"_a, "e"_a, "params"_a = std::map<std::string, double>{});
  m.def(
      "box",
      [](const proxc::Expr& e, nb::handle lo, nb::handle hi) {
        return proxc::box(e, to_param(lo), to_param(hi));
      },
      "e"_a, "lower"_a, "upper"_a);
}

// Problems.
void bind_problems(nb::module_& m) {
  nb::class_<proxc::Problem>(m, "Problem")
      .def(nb::init<>())
      .def("__copy__", [](const proxc::Problem& p) { return proxc::Problem(p); })
      .def("minimize", &proxc::Problem::minimize, "objective"_a)
      .def("variables", &proxc::Problem::variables)
      .def("name_of", &proxc::Problem::name_of, "e"_a)
      .def("num_terms", &proxc::Problem::num_terms)
      .def("passes_run", &proxc::Problem::passes_run)
      .def("value", &proxc::Problem::value, "variable"_a)
      .def("has_value", &proxc::Problem::has_value, "variable"_a)
      .def("set_constant",
           nb::overload_cast<const std::string&, const proxc::Array&>(&proxc::Problem::set_constant),
           "name"_a, "data"_a)
      .def("set_constant_file",
           nb::overload_cast<const std::string&, const std::string&>(&proxc::Problem::set_constant), "name"_a,
           "path"_a)
      .def(
          "print",
          [](const proxc::Problem& p, const std::string& format, const std::string& base_dir,
             bool inline_constants) {
            proxc::PrintOptions o;
            o.base_dir = base_dir;
            o.inline_constants = inline_constants;
            return p.print(kind_from<proxc::ProblemFormat>(format, "format"), o);
          },
          "format"_a = "text", "base_dir"_a = "", "inline_constants"_a = false);
  m.def("load_problem", &proxc::load_problem, "path"_a);
  m.def("parse_problem", &proxc::parse_problem, "text"_a, "file"_a = "<string>", "base_dir"_a = ".");
  m.def("parse_problem_json", &proxc::parse_problem_json, "json"_a, "file"_a = "<string>",
        "base_dir"_a = ".");
  m.def(
      "run_passes",
      [](const proxc::Problem& p, std::vector<std::string> pipeline, const std::string& solver,
         const std::string& norm, const std::string& dump_dir, bool verify_each,
         const std::vector<std::string>& roles, bool absorb_operators) {
        proxc::PassOptions o;
        o.pipeline = std::move(pipeline);
        o.solver = kind_from<proxc::SolverKind>(solver, "solver");
        o.norm = kind_from<proxc::NormKind>(norm, "norm");
        o.dump_dir = dump_dir;
        o.verify_each = verify_each;
        for (const std::string& r : roles) o.roles.push_back(kind_from<proxc::SplitRole>(r, "role"));
        o.absorb_operators = absorb_operators;
        return proxc::run_passes(p, o);
      },
      "problem"_a, "pipeline"_a = std::vector<std::string>{}, "solver"_a = "pc", "norm"_a = "bound",
      "dump_dir"_a = "", "verify_each"_a = false, "roles"_a = std::vector<std::string>{},
      "absorb_operators"_a = true);
  m.def("pass_names", &proxc::pass_names);
}

// Solving.
void bind_solving(nb::module_& m) {
  nb::class_<proxc::StepSizes>(m, "StepSizes")
      .def(nb::init<>())
      .def_rw("pc_tau", &proxc::StepSizes::pc_tau)
      .def_rw("pc_sigma", &proxc::StepSizes::pc_sigma)
      .def_rw("pc_theta", &proxc::StepSizes::pc_theta)
      .def_rw("ladmm_lambda", &proxc::StepSizes::ladmm_lambda)
      .def_rw("ladmm_mu", &proxc::StepSizes::ladmm_mu)
      .def_rw("admm_rho", &proxc::StepSizes::admm_rho);

  nb::class_<proxc::SolverOptions>(m, "SolverOptions")
      .def(nb::init<>())
      .def_prop_rw(
          "solver", [](const proxc::SolverOptions& o) { return std::string(proxc::to_string(o.solver)); },
          [](proxc::SolverOptions& o, const std::string& v) {
            o.solver = kind_from<proxc::SolverKind>(v, "solver");
          })
      .def_prop_rw(
          "backend", [](const proxc::SolverOptions& o) { return std::string(proxc::to_string(o.backend)); },
          [](proxc::SolverOptions& o, const std::string& v) {
            o.backend = kind_from<proxc::BackendKind>(v, "backend");
          })
      .def_prop_rw(
          "schedule", [](const proxc::SolverOptions& o) { return std::string(proxc::to_string(o.schedule)); },
          [](proxc::SolverOptions& o, const std::string& v) {
            o.schedule = kind_from<proxc::ScheduleKind>(v, "schedule");
          })
      .def_prop_rw(
          "norm", [](const proxc::SolverOptions& o) { return std::string(proxc::to_string(o.norm)); },
          [](proxc::SolverOptions& o, const std::string& v) {
            o.norm = kind_from<proxc::NormKind>(v, "norm");
          })
      .def_rw("target", &proxc::SolverOptions::target)
      .def_rw("cache_dir", &proxc::SolverOptions::cache_dir)
      .def_rw("max_iters", &proxc::SolverOptions::max_iters)
      .def_rw("eps_abs", &proxc::SolverOptions::eps_abs)
      .def_rw("eps_rel", &proxc::SolverOptions::eps_rel)
      .def_rw("time_limit_s", &proxc::SolverOptions::time_limit_s)
      .def_rw("fuse", &proxc::SolverOptions::fuse)
      .def_rw("check_every", &proxc::SolverOptions::check_every)
      .def_rw("proximal_stopping", &proxc::SolverOptions::proximal_stopping)
      .def_rw("cg_max_iters", &proxc::SolverOptions::cg_max_iters)
      .def_rw("cg_tol", &proxc::SolverOptions::cg_tol)
      .def_rw("hqs_rho_0", &proxc::SolverOptions::hqs_rho_0)
      .def_rw("hqs_rho_scale", &proxc::SolverOptions::hqs_rho_scale)
      .def_rw("hqs_rho_max", &proxc::SolverOptions::hqs_rho_max)
      .def_rw("hqs_max_inner_iters", &proxc::SolverOptions::hqs_max_inner_iters)
      .def_rw("steps", &proxc::SolverOptions::steps)
      .def_rw("adaptive_steps", &proxc::SolverOptions::adaptive_steps)
      .def_rw("absorb", &proxc::SolverOptions::absorb)
      .def_rw("merge", &proxc::SolverOptions::merge)
      .def_rw("diagonalize", &proxc::SolverOptions::diagonalize)
      .def_rw("x0", &proxc::SolverOptions::x0)
      .def_rw("objective_each_check", &proxc::SolverOptions::objective_each_check)
      .def_rw("checkpoint_path", &proxc::SolverOptions::checkpoint_path)
      .def_rw("checkpoint_every", &proxc::SolverOptions::checkpoint_every)
      .def_rw("resume_path", &proxc::SolverOptions::resume_path)
      .def("validate", [](const proxc::SolverOptions& o) { o.validate(); });

  nb::class_<proxc::IterationInfo>(m, "IterationInfo")
      .def_ro("iteration", &proxc::IterationInfo::iteration)
      .def_ro("r", &proxc::IterationInfo::r)
      .def_ro("s", &proxc::IterationInfo::s)
      .def_ro("eps_pri", &proxc::IterationInfo::eps_pri)
      .def_ro("eps_dual", &proxc::IterationInfo::eps_dual)
      .def_ro("seconds", &proxc::IterationInfo::seconds)
      .def_ro("objective", &proxc::IterationInfo::objective)
      .def("__repr__", [](const proxc::IterationInfo& i) {
        return "IterationInfo(iteration=" + std::to_string(i.iteration) + ", r=" + std::to_string(i.r) +
               ", s=" + std::to_string(i.s) + ", eps_pri=" + std::to_string(i.eps_pri) +
               ", eps_dual=" + std::to_string(i.eps_dual) + ", objective=" + std::to_string(i.objective) +
               ")";
      });

  nb::class_<proxc::SolverSummary::ProgramTime>(m, "ProgramTime")
      .def_ro("name", &proxc::SolverSummary::ProgramTime::name)
      .def_ro("runs", &proxc::SolverSummary::ProgramTime::runs)
      .def_ro("seconds", &proxc::SolverSummary::ProgramTime::seconds);

  nb::class_<proxc::SolverSummary>(m, "SolverSummary")
      .def_prop_ro("termination",
                   [](const proxc::SolverSummary& s) { return std::string(proxc::to_string(s.termination)); })
      .def_prop_ro("solver",
                   [](const proxc::SolverSummary& s) { return std::string(proxc::to_string(s.solver)); })
      .def_ro("iterations", &proxc::SolverSummary::iterations)
      .def_ro("last", &proxc::SolverSummary::last)
      .def_ro("history", &proxc::SolverSummary::history)
      .def_ro("objective", &proxc::SolverSummary::objective)
      .def_ro("has_projection", &proxc::SolverSummary::has_projection)
      .def_ro("objective_at_projection", &proxc::SolverSummary::objective_at_projection)
      .def_ro("objective_leaves_out", &proxc::SolverSummary::objective_leaves_out)
      .def_ro("warnings", &proxc::SolverSummary::warnings)
      .def_ro("parse_s", &proxc::SolverSummary::parse_s)
      .def_ro("passes_s", &proxc::SolverSummary::passes_s)
      .def_ro("compile_s", &proxc::SolverSummary::compile_s)
      .def_ro("iterate_s", &proxc::SolverSummary::iterate_s)
      .def_prop_ro(
          "backend_used",
          [](const proxc::SolverSummary& s) { return std::string(proxc::to_string(s.backend_used)); })
      .def_prop_ro(
          "schedule_used",
          [](const proxc::SolverSummary& s) { return std::string(proxc::to_string(s.schedule_used)); })
      .def_ro("target_requested", &proxc::SolverSummary::target_requested)
      .def_ro("target_used", &proxc::SolverSummary::target_used)
      .def_ro("target_fft", &proxc::SolverSummary::target_fft)
      .def_ro("fuse", &proxc::SolverSummary::fuse)
      .def_ro("fuse_blocked_in_time", &proxc::SolverSummary::fuse_blocked_in_time)
      .def_ro("knorm", &proxc::SolverSummary::knorm)
      .def_ro("cg_steps", &proxc::SolverSummary::cg_steps)
      .def_ro("adapted_steps", &proxc::SolverSummary::adapted_steps)
      .def_ro("step_changes", &proxc::SolverSummary::step_changes)
      .def_ro("pipelines_compiled", &proxc::SolverSummary::pipelines_compiled)
      .def_ro("pipelines_loaded", &proxc::SolverSummary::pipelines_loaded)
      .def_ro("programs", &proxc::SolverSummary::programs)
      .def("brief_report", &proxc::SolverSummary::brief_report)
      .def("full_report", &proxc::SolverSummary::full_report)
      .def("to_json", &proxc::SolverSummary::to_json)
      .def("__repr__", &proxc::SolverSummary::brief_report);

  m.def("solve", &solve_py, "problem"_a, "options"_a, "callback"_a = nb::none(), "pass_iterate"_a = false);
}

// Checks.
void bind_checks(nb::module_& m) {
  nb::class_<proxc::CheckReport>(m, "CheckReport")
      .def_ro("passed", &proxc::CheckReport::passed)
      .def_ro("norm_estimate", &proxc::CheckReport::norm_estimate)
      .def_ro("norm_bound", &proxc::CheckReport::norm_bound)
      .def_ro("text", &proxc::CheckReport::text)
      .def_ro("json", &proxc::CheckReport::json)
      .def("__repr__", [](const proxc::CheckReport& r) { return r.text; });
  m.def(
      "check",
      [](const proxc::Problem& p, const std::string& backend, const std::string& target, uint64_t seed) {
        proxc::CheckOptions o;
        o.backend = kind_from<proxc::BackendKind>(backend, "backend");
        o.target = target;
        o.seed = seed;
        return interruptible([&] { return proxc::check(p, o); });
      },
      "problem"_a, "backend"_a = "emulate", "target"_a = "host", "seed"_a = 1);
}

// Compiled programs.
void bind_modules(nb::module_& m) {
  nb::class_<proxc::CompileReport>(m, "CompileReport")
      .def_ro("seconds", &proxc::CompileReport::seconds)
      .def_ro("pipelines_compiled", &proxc::CompileReport::pipelines_compiled)
      .def_ro("pipelines_loaded", &proxc::CompileReport::pipelines_loaded)
      .def_ro("cache_dir", &proxc::CompileReport::cache_dir)
      .def_prop_ro("schedule_used", [](const proxc::CompileReport& r) {
        return std::string(proxc::to_string(r.schedule_used));
      });
  nb::class_<proxc::AotArtifacts>(m, "AotArtifacts")
      .def_ro("library", &proxc::AotArtifacts::library)
      .def_ro("header", &proxc::AotArtifacts::header)
      .def_ro("wrapper", &proxc::AotArtifacts::wrapper)
      .def_ro("manifest", &proxc::AotArtifacts::manifest)
      .def_ro("needs_fft_runtime", &proxc::AotArtifacts::needs_fft_runtime)
      .def_ro("black_boxes", &proxc::AotArtifacts::black_boxes)
      .def_ro("prox_fns", &proxc::AotArtifacts::prox_fns);
  nb::class_<proxc::Module>(m, "Module")
      .def_prop_ro("name", &proxc::Module::name)
      .def("inputs",
           [](const proxc::Module& mod) {
             nb::dict d;
             for (const auto& [name, shape] : mod.inputs()) d[nb::str(name.c_str())] = shape_tuple(shape);
             return d;
           })
      .def("params", &proxc::Module::params)
      .def("outputs", &proxc::Module::outputs)
      .def("compile",
           [](proxc::Module& mod) {
             nb::gil_scoped_release release;
             return mod.compile();
           })
      .def("run", &run_program<&proxc::Module::run>, "arrays"_a, "params"_a = std::map<std::string, double>{})
      .def("emulate", &run_program<&proxc::Module::emulate>, "arrays"_a,
           "params"_a = std::map<std::string, double>{})
      .def("source", &proxc::Module::source)
      .def(
          "emit",
          [](const proxc::Module& mod, const std::string& format) {
            return mod.emit(kind_from<proxc::ProgramFormat>(format, "format"));
          },
          "format"_a)
      .def(
          "compile_aot",
          [](const proxc::Module& mod, const std::string& dir, const std::string& name) {
            nb::gil_scoped_release release;
            return mod.compile_aot(dir, name);
          },
          "dir"_a, "name"_a = "proxc_step");
  m.def(
      "compile",
      [](const proxc::Problem& p, const std::string& solver, const std::string& program, int fuse,
         const std::string& target, const std::string& schedule, const std::string& cache_dir) {
        proxc::CompileOptions o;
        o.solver = kind_from<proxc::SolverKind>(solver, "solver");
        o.program = kind_from<proxc::ProgramKind>(program, "program");
        o.fuse = fuse;
        o.target = target;
        o.schedule = kind_from<proxc::ScheduleKind>(schedule, "schedule");
        o.cache_dir = cache_dir;
        return proxc::compile(p, o);
      },
      "problem"_a, "solver"_a = "pc", "program"_a = "iteration", "fuse"_a = 1, "target"_a = "host",
      "schedule"_a = "default", "cache_dir"_a = "");
}

}  // namespace

NB_MODULE(_proxc, m) {
  m.doc() =
      "proxc's C++ API (include/proxc), bound with nanobind; the ProxImaL-style API is the package proxc";

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const proxc::UserError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const proxc::InternalError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  m.def("version", &proxc::version);

  bind_arrays(m);
  bind_expressions(m);
  bind_terms(m);
  bind_problems(m);
  bind_solving(m);
  bind_checks(m);
  bind_modules(m);
  nb::module_::import_("atexit").attr("register")(nb::cpp_function(&release_python_black_boxes));
}
