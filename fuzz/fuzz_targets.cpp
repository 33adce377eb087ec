// libFuzzer targets for every reader of outside data: the .prox parser, the
// JSON loader and the .npy / .png / .tif decoders. One source, one target per
// PROXC_FUZZ_TARGET value. A UserError is the expected outcome of bad input;
// anything else (an InternalError, a crash, a sanitizer report, a hang) is a
// finding.

#include <cstdint>
#include <cstdlib>
#include <string>

#include "frontend/parser.h"
#include "io/npy.h"
#include "io/png.h"
#include "io/tiff.h"
#include "ir/json.h"
#include "support/array.h"
#include "support/error.h"

namespace {
struct Setup {
  // Keep every allocation small: a fuzzer input must not ask for gigabytes.
  Setup() { proxc::Limits::set_max_array_bytes(int64_t{64} << 20); }
} setup;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
#if PROXC_FUZZ_TARGET == 0
    // Inline data only: a fuzzed load("...") reads files relative to a folder that has none.
    proxc::parse_program(bytes, "fuzz.prox", "/nonexistent-fuzz-dir");
#elif PROXC_FUZZ_TARGET == 1
    proxc::parse_json(bytes, "fuzz.json", "/nonexistent-fuzz-dir");
#elif PROXC_FUZZ_TARGET == 2
    proxc::io::parse_npy(bytes, "fuzz.npy");
#elif PROXC_FUZZ_TARGET == 3
    proxc::io::decode_png(bytes, "fuzz.png");
#elif PROXC_FUZZ_TARGET == 4
    proxc::io::decode_tiff(bytes, "fuzz.tif");
#endif
  } catch (const proxc::UserError&) {
    // The expected answer to bad input.
  } catch (const proxc::InternalError& e) {
    std::fprintf(stderr, "InternalError: %s\n", e.what());
    std::abort();
  }
  return 0;
}
