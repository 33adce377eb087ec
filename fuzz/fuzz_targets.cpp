// libFuzzer targets for every reader of outside data: the .prox parser, the
// JSON loader and the .npy / .png / .tif / .npz / HDF5 decoders. One source, one target per
// PROXC_FUZZ_TARGET value. A UserError is the expected outcome of bad input;
// anything else (an InternalError, a crash, a sanitizer report, a hang) is a
// finding.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "frontend/parser.h"
#include "io/hdf5.h"
#include "io/npy.h"
#include "io/npz.h"
#include "io/png.h"
#include "io/tiff.h"
#include "frontend/json.h"
#include "ir/printer.h"
#include "support/array.h"
#include "support/error.h"

namespace {
struct Setup {
  // Keep every allocation small: a fuzzer input must not ask for gigabytes.
  Setup() { proxc::internal::Limits::set_max_array_bytes(int64_t{64} << 20); }
} setup;

// What parses must print, and the printed text and JSON must read back to
// the same problem (print -> parse -> print is byte-identical). A UserError
// here is a finding too: the reader refused what the printer wrote.
[[maybe_unused]] void round_trip(const proxc::internal::Problem& p) {
  const std::string text = proxc::internal::print_text(p);
  const std::string json = proxc::internal::print_json(p);
  try {
    const std::string from_text = proxc::internal::print_text(proxc::internal::parse_program(text, "printed.prox", "/nonexistent-fuzz-dir").problem);
    const std::string from_json = proxc::internal::print_text(proxc::internal::parse_json(json, "printed.json", "/nonexistent-fuzz-dir"));
    if (from_text != text || from_json != text) {
      std::fprintf(stderr, "round trip changed the problem:\n%s\n--- text -> parse -> print:\n%s\n--- json -> parse -> print:\n%s\n",
                   text.c_str(), from_text.c_str(), from_json.c_str());
      std::abort();
    }
  } catch (const proxc::internal::UserError& e) {
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
    round_trip(proxc::internal::parse_program(bytes, "fuzz.prox", "/nonexistent-fuzz-dir").problem);
#elif PROXC_FUZZ_TARGET == 1
    round_trip(proxc::internal::parse_json(bytes, "fuzz.json", "/nonexistent-fuzz-dir"));
#elif PROXC_FUZZ_TARGET == 2
    proxc::internal::io::parse_npy(bytes, "fuzz.npy");
#elif PROXC_FUZZ_TARGET == 3
    proxc::internal::io::decode_png(bytes, "fuzz.png");
#elif PROXC_FUZZ_TARGET == 4
    proxc::internal::io::decode_tiff(bytes, "fuzz.tif");
#elif PROXC_FUZZ_TARGET == 5
    // Every member by name, then the archive's only one.
    for (const std::string& m : proxc::internal::io::npz_members(bytes, "fuzz.npz")) {
      try {
        proxc::internal::io::decode_npz(bytes, m, "fuzz.npz");
      } catch (const proxc::internal::UserError&) {
      }
    }
    proxc::internal::io::decode_npz(bytes, "", "fuzz.npz");
#elif PROXC_FUZZ_TARGET == 6
    // Every dataset, then the file's only one, then a write into it.
    for (const std::string& d : proxc::internal::io::hdf5_datasets(bytes, "fuzz.h5", 8)) {
      try {
        proxc::internal::io::decode_hdf5(bytes, d, "fuzz.h5");
      } catch (const proxc::internal::UserError&) {
      }
    }
    // A file that reads may take a dataset, and must read back with it.
    proxc::internal::Array a({2, 3});
    for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<float>(i);
    std::string written;
    try {
      written = proxc::internal::io::encode_hdf5(&bytes, "/proxc/out", a, "fuzz.h5");
    } catch (const proxc::internal::UserError&) {
      return 0;  // a file libhdf5 cannot add to: refused, nothing written
    }
    if (proxc::internal::io::decode_hdf5(written, "/proxc/out", "written.h5").data != a.data) {
      std::fprintf(stderr, "the dataset written does not read back\n");
      std::abort();
    }
#endif
  } catch (const proxc::internal::UserError&) {
    // The expected answer to bad input.
  } catch (const proxc::internal::InternalError& e) {
    std::fprintf(stderr, "InternalError: %s\n", e.what());
    std::abort();
  }
  return 0;
}
