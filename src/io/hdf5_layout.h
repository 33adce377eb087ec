/// \file
/// The storage of a dataset proxc writes (SaveOptions resolved against the
/// array's shape): contiguous, or chunked with the deflate and shuffle
/// filters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proxc/save_options.h"
#include "support/array.h"

namespace proxc::internal::io {

/// What libhdf5 is asked for: `chunks` empty for contiguous storage.
struct Hdf5Layout {
  std::vector<int64_t> chunks;
  int gzip = 0;
  bool shuffle = false;
};

/// The layout `options` give an array of `shape`, checked (`where` names
/// the dataset in messages). Chunks are chosen when asked for without a
/// shape (h5py's guess_chunk rule, choose_chunks); arrays that cannot be
/// chunked (rank 0, an empty axis) are stored contiguous whatever is asked,
/// as they hold nothing to compress.
Hdf5Layout resolve_hdf5_layout(const SaveOptions& options, const Shape& shape, const std::string& where);

/// Chunks for `shape` of 4-byte elements as h5py's chunks=True chooses
/// them: the shape halved an axis at a time, in turn, until a chunk is
/// within half of a target size that grows with the array (16 KiB at 1 MiB,
/// doubling for every tenfold, kept between 8 KiB and 1 MiB) and under
/// 1 MiB. Every extent of `shape` must be positive.
std::vector<int64_t> choose_chunks(const Shape& shape);

}  // namespace proxc::internal::io
