/// \file
/// The test black boxes (test_black_boxes.cpp); call register_test_black_boxes()
/// before building a problem that uses them.
#pragma once

#include "proxc/black_box.h"

extern "C" int proxc_plugin_init(proxc_register_black_box_fn reg);

namespace proxc::internal::test {
inline void register_test_black_boxes() {
  static const int rc = proxc_plugin_init(proxc_register_black_box);
  (void)rc;
}
}  // namespace proxc::internal::test
