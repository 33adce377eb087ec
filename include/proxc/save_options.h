/// \file
/// How save_array stores an array in an HDF5 dataset: chunked and compressed
/// as h5py's create_dataset(chunks=, compression="gzip", compression_opts=,
/// shuffle=) stores it, for files that instruments and h5py users read
/// partially or keep small.
///
///     proxc::SaveOptions o;
///     o.gzip = 4;                                    // chunks chosen for it
///     proxc::save_array("scan.h5:/recon", x, o);
///     o = proxc::parse_save_options("chunks=64x64,gzip=6,shuffle");
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace proxc {

/// The default is what save_array writes without options: one contiguous
/// float32 dataset. Formats other than HDF5 refuse any other setting.
struct SaveOptions {
  /// The chunk shape, one extent per axis of the array, each from 1 to that
  /// axis's extent, at most 4 GiB a chunk. Empty: contiguous, unless gzip or
  /// shuffle is asked for; then chunks are chosen as h5py's chunks=True
  /// chooses them (between 8 KiB and 1 MiB, larger for larger arrays).
  std::vector<int64_t> chunks;
  /// Chunked storage without filters too, the chunks chosen as above when
  /// `chunks` is empty (h5py's chunks=True).
  bool chunked = false;
  /// The deflate (gzip) filter at this level, 1 (fastest) to 9 (smallest);
  /// 0: none.
  int gzip = 0;
  /// The shuffle filter before deflate: it groups the bytes of the values by
  /// significance, which compresses floats better.
  bool shuffle = false;

  /// True when nothing is asked beyond the contiguous default.
  bool is_default() const { return chunks.empty() && !chunked && gzip == 0 && !shuffle; }
};

/// The options a comma-separated spec names, as the CLI's --h5-layout takes
/// them: "chunks=AxBx..." (or "chunks=auto"), "gzip" (level 4, h5py's
/// default) or "gzip=N", "shuffle", "contiguous" (the default; alone).
/// Throws UserError naming the part that is not one of these, `what` (for
/// example "--h5-layout") leading the message.
SaveOptions parse_save_options(const std::string& spec, const std::string& what = "the HDF5 layout");

}  // namespace proxc
