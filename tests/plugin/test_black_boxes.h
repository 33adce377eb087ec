/// \file
/// The test black boxes and prox functions (test_black_boxes.cpp); call
/// register_test_black_boxes() before building a problem that uses them.
#pragma once

#include "proxc/black_box.h"
#include "proxc/prox_fn.h"

extern "C" int proxc_plugin_init(proxc_register_black_box_fn reg);
extern "C" int proxc_plugin_init_prox(proxc_register_prox_fn_fn reg);

namespace proxc::internal::test {
inline void register_test_black_boxes() {
  static const int rc = proxc_plugin_init(proxc_register_black_box) | proxc_plugin_init_prox(proxc_register_prox_fn);
  (void)rc;
}
}  // namespace proxc::internal::test
