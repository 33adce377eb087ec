/// \file
/// proxc::halide_ops::Graph: recording each call as a line of C++ (the cache key and the printed generator).
/// Part of the Halide-op library (proxc/halide_ops.h includes every part).
#pragma once

#include "proxc/halide_ops/graph.h"

namespace proxc::halide_ops {

inline std::string Graph::fmt(double d) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

inline std::string Graph::fmt(const std::string& s) {
  std::string o = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\';
    o += ch;
  }
  return o + "\"";
}

template <typename T>
inline std::string Graph::fmt(const std::vector<T>& v) {
  std::string o = "{";
  for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + fmt(v[i]);
  return o + "}";
}

template <typename... A>
inline std::string Graph::args(const A&... a) {
  std::string o;
  ((o += (o.empty() ? "" : ", ") + fmt(a)), ...);
  return o;
}

template <typename... A>
inline Val Graph::rec(Val v, const char* op, const A&... a) {
  v.id = "v" + std::to_string(ids_++);
  if (v.f.defined()) ext_of_[v.f.name()] = v.ext;
  if (record_) *record_ << "  Val " << v.id << " = g." << op << "(" << args(a...) << ");\n";
  return v;
}

}  // namespace proxc::halide_ops
