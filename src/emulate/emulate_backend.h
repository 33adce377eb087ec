/// \file
/// The emulate backend: a plain C++ interpreter of step programs in double
/// precision (float32 at the inputs and outputs). The ground truth of the
/// tests and the "software emulation" half of every Module.
#pragma once

#include <memory>

#include "emulate/linop.h"
#include "step/backend.h"

namespace proxc::internal {

/// Creates the emulator. `debug` deliberately breaks an operator's adjoint
/// (for testing the checkers only).
std::unique_ptr<Backend> make_emulate_backend(const emulate::EmulateDebug& debug = {});

}  // namespace proxc::internal
