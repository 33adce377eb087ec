/// \file
/// Loading plugins: shared libraries that register user black-box operators
/// (include/proxc/black_box.h) through their `proxc_plugin_init` entry point.
#pragma once

#include <string>
#include <vector>

namespace proxc::internal {

/// Loads the shared library at `path` and calls its
/// `int proxc_plugin_init(proxc_register_black_box_fn)`; returns the names it
/// registered. A UserError (naming the path) when the library cannot be
/// loaded, has no entry point, returns non-zero, or registers an operator
/// that is invalid or clashes with one already registered. The library
/// stays loaded for the life of the process.
std::vector<std::string> load_plugin(const std::string& path);

/// Registers the prox functions proxc ships (patch_NLM) once per process;
/// the parser, the JSON loader and the API call it before they look a
/// function up. Plugins also register prox functions
/// (proxc_plugin_init_prox, include/proxc/prox_fn.h).
void register_builtin_prox_fns();

}  // namespace proxc::internal
