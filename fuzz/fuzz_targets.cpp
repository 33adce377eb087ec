// libFuzzer targets for every reader of outside data: the .prox parser, the
// JSON loader and the .npy / .png / .tif decoders. One source, one target per
// PROXC_FUZZ_TARGET value. A UserError is the expected outcome of bad input;
// anything else (an InternalError, a crash, a sanitizer report, a hang) is a
// finding.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "frontend/parser.h"
#include "io/npy.h"
#include "io/png.h"
#include "io/tiff.h"
#include "ir/json.h"
#include "ir/printer.h"
#include "support/array.h"
#include "support/error.h"

namespace {
struct Setup {
  // Keep every allocation small: a fuzzer input must not ask for gigabytes.
  Setup() { proxc::Limits::set_max_array_bytes(int64_t{64} << 20); }
} setup;

// What parses must print, and the printed text and JSON must read back to
// the same problem (print -> parse -> print is byte-identical). A UserError
// here is a finding too: the reader refused what the printer wrote.
[[maybe_unused]] void round_trip(const proxc::Problem& p) {
  const std::string text = proxc::print_text(p);
  const std::string json = proxc::print_json(p);
  try {
    const std::string from_text = proxc::print_text(proxc::parse_program(text, "printed.prox", "/nonexistent-fuzz-dir").problem);
    const std::string from_json = proxc::print_text(proxc::parse_json(json, "printed.json", "/nonexistent-fuzz-dir"));
    if (from_text != text || from_json != text) {
      std::fprintf(stderr, "round trip changed the problem:\n%s\n--- text -> parse -> print:\n%s\n--- json -> parse -> print:\n%s\n",
                   text.c_str(), from_text.c_str(), from_json.c_str());
      std::abort();
    }
  } catch (const proxc::UserError& e) {
    std::fprintf(stderr, "the printed problem does not read back: %s\n%s\n", e.what(), text.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
#if PROXC_FUZZ_TARGET == 0
    // Inline data only: a fuzzed load("...") reads files relative to a folder that has none.
    round_trip(proxc::parse_program(bytes, "fuzz.prox", "/nonexistent-fuzz-dir").problem);
#elif PROXC_FUZZ_TARGET == 1
    round_trip(proxc::parse_json(bytes, "fuzz.json", "/nonexistent-fuzz-dir"));
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
