// Arrays inside containers: .npz members and HDF5 datasets, read from files
// NumPy and h5py wrote (the fuzz seeds) and from proxc's own HDF5 writer.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include "io/array_io.h"
#include "io/hdf5.h"
#include "io/hdf5_layout.h"
#include "io/npz.h"
#include "support/array.h"
#include "support/error.h"
#include "support/file_util.h"

namespace proxc::internal::io {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string seed(const std::string& name) { return std::string(PROXC_SOURCE_DIR) + "/fuzz/corpus/" + name; }

std::string tmp_dir() {
  static const std::string dir = [] {
    std::string d = testing::TempDir() + "/proxc_container_test_" + std::to_string(getpid());
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

std::string user_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a UserError: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no exception was thrown";
  return "";
}

// The array every seed holds: arange(12).reshape(3, 4) / 12.
void expect_seed_values(const Array& a, double tolerance = 1e-7) {  // float32 rounding
  ASSERT_EQ(a.shape, (Shape{3, 4}));
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(a.data[i], i / 12.0, tolerance) << i;
}

Array ramp3(Shape shape) {
  Array a(shape);
  for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<float>((i * 7919) % 101) / 100.0f;
  return a;
}

TEST(SplitMemberPath, ContainerExtensionsOnly) {
  MemberPath m = split_member_path("dir/frames.npz:noisy");
  EXPECT_EQ(m.file, "dir/frames.npz");
  EXPECT_EQ(m.member, "noisy");
  m = split_member_path("scan.H5:/entry/data");
  EXPECT_EQ(m.file, "scan.H5");
  EXPECT_EQ(m.member, "/entry/data");
  EXPECT_EQ(split_member_path("a.hdf5:x").file, "a.hdf5");
  EXPECT_FALSE(split_member_path("a.npy").has_member());
  EXPECT_FALSE(split_member_path("c:/data/a.npy").has_member());
  EXPECT_EQ(split_member_path("a.npz:").member, "");
  EXPECT_EQ(split_member_path("a.h5:/g/d").joined(), "a.h5:/g/d");
  EXPECT_TRUE(has_array_extension("frames.npz:noisy"));
  EXPECT_TRUE(has_array_extension("scan.h5:/entry/data"));
  EXPECT_TRUE(has_array_extension("scan.hdf5"));
  EXPECT_FALSE(has_array_extension("frames.zip:noisy"));
  // A folder whose name holds the marker is a folder.
  const std::string folder = tmp_dir() + "/run.h5:old";
  std::filesystem::create_directories(folder);
  EXPECT_FALSE(split_member_path(folder + "/b.npy").has_member());
  save_array(folder + "/b.npy", ramp3({2, 2}));
  EXPECT_EQ(load_array(folder + "/b.npy").shape, (Shape{2, 2}));
}

TEST(Npz, MembersByNameFromNumPy) {
  const std::string path = seed("npz/two_members.npz");
  EXPECT_THAT(npz_members(read_file(path), path), ElementsAre("noisy", "mask"));
  expect_seed_values(load_array(path + ":noisy"));
  expect_seed_values(load_array(path + ":noisy.npy"));
  Array mask = load_array(path + ":mask");  // bool, as 0 and 1
  ASSERT_EQ(mask.shape, (Shape{3, 4}));
  EXPECT_EQ(mask.data[6], 0.0f);
  EXPECT_EQ(mask.data[7], 1.0f);
}

TEST(Npz, TheOnlyMemberOfACompressedArchive) {
  // np.savez_compressed(a.astype(float64)): one deflated member, arr_0.
  const std::string path = seed("npz/compressed_f8.npz");
  expect_seed_values(load_array(path), 1e-7);
  expect_seed_values(load_array(path + ":arr_0"), 1e-7);
}

TEST(Npz, Errors) {
  const std::string two = seed("npz/two_members.npz");
  EXPECT_THAT(user_error_of([&] { load_array(two); }),
              HasSubstr("holds 2 arrays (noisy, mask); name one, as " + two + ":noisy"));
  EXPECT_THAT(user_error_of([&] { load_array(two + ":clean"); }),
              HasSubstr("holds no array 'clean' (it holds noisy, mask)"));
  const std::string bytes = read_file(seed("npz/compressed_f8.npz"));
  // A flipped byte in the deflated data: a CRC or inflate error, not a crash.
  std::string bad = bytes;
  bad[bad.size() / 3] = static_cast<char>(bad[bad.size() / 3] ^ 0x5a);
  EXPECT_THAT(user_error_of([&] { decode_npz(bad, "", "bad.npz"); }), HasSubstr("bad.npz"));
  EXPECT_THAT(user_error_of([&] { decode_npz(bytes.substr(0, bytes.size() / 2), "", "half.npz"); }),
              HasSubstr("half.npz: malformed .npz"));
  EXPECT_THAT(user_error_of([&] { decode_npz("not a zip at all", "", "t.npz"); }), HasSubstr("t.npz: malformed .npz"));
  const std::string out = tmp_dir() + "/out.npz:x";
  EXPECT_THAT(user_error_of([&] { check_array_output(out); }), HasSubstr("does not write them"));
}

TEST(Npz, TheMemberSizeIsCheckedBeforeInflating) {
  const int64_t saved = Limits::max_array_bytes();
  Limits::set_max_array_bytes(16);
  const std::string path = seed("npz/compressed_f8.npz");
  const std::string msg = user_error_of([&] { load_array(path); });
  Limits::set_max_array_bytes(saved);
  EXPECT_THAT(msg, HasSubstr("more than the memory budget"));
}

TEST(Hdf5, DatasetsFromH5py) {
  // Written by h5py: gzip-compressed chunks of float64, big-endian uint16,
  // a file in the earliest format and one in the latest, a scalar, int8.
  const std::string groups = seed("hdf5/groups_gzip.h5");
  EXPECT_THAT(hdf5_datasets(read_file(groups), groups), ElementsAre("/entry/data", "/entry/u16"));
  expect_seed_values(load_array(groups + ":/entry/data"), 1e-7);
  expect_seed_values(load_array(groups + ":entry/data"), 1e-7);
  Array u16 = load_array(groups + ":/entry/u16");
  EXPECT_EQ(u16.data[11], 916.0f);  // (11 / 12 * 1000) truncated
  expect_seed_values(load_array(seed("hdf5/contiguous_f4.h5")));
  const std::string latest = seed("hdf5/latest_scalar.h5");
  Array s = load_array(latest + ":/s");
  EXPECT_TRUE(s.shape.empty());
  ASSERT_EQ(s.data.size(), 1u);
  EXPECT_EQ(s.data[0], 2.5f);
  const Array i8 = load_array(latest + ":i8");
  EXPECT_EQ(std::vector<float>(i8.data.begin(), i8.data.end()), (std::vector<float>{0, 1, 2, 3}));
}

TEST(Hdf5, Errors) {
  const std::string groups = seed("hdf5/groups_gzip.h5");
  EXPECT_THAT(user_error_of([&] { load_array(groups); }),
              HasSubstr("holds 2 datasets (/entry/data, /entry/u16); name one, as " + groups + ":/entry/data"));
  EXPECT_THAT(user_error_of([&] { load_array(groups + ":/entry"); }), HasSubstr("'/entry' is a group, not a dataset"));
  EXPECT_THAT(user_error_of([&] { load_array(groups + ":/entry/nope"); }),
              HasSubstr("no dataset '/entry/nope' (it holds /entry/data, /entry/u16)"));
  EXPECT_THAT(user_error_of([&] { load_array(groups + ":/entry/data/deeper"); }),
              HasSubstr("'/entry/data' is a dataset, not a group"));
  EXPECT_THAT(user_error_of([&] { decode_hdf5("", "", "e.h5"); }), HasSubstr("e.h5: the file is empty"));
  EXPECT_THAT(user_error_of([&] { decode_hdf5("GIF89a not hdf5", "", "g.h5"); }),
              HasSubstr("g.h5: malformed HDF5 (or not an HDF5 file): "));
  // HDF5 2.0's format for filtered chunks (h5py's libver="latest" with HDF5
  // 2.0), which libhdf5 1.10 cannot read: named, with what to do.
  EXPECT_THAT(user_error_of([&] { load_array(seed("hdf5/v200_gzip.h5") + ":/x"); }),
              HasSubstr("v200_gzip.h5:/x: the dataset is stored in a newer HDF5 file format than the libhdf5 1.10"));
  const std::string bytes = read_file(groups);
  for (size_t cut : {size_t{8}, size_t{100}, bytes.size() / 2, bytes.size() - 1}) {
    SCOPED_TRACE(cut);
    EXPECT_THAT(user_error_of([&] { decode_hdf5(bytes.substr(0, cut), "/entry/data", "cut.h5"); }), HasSubstr("cut.h5"));
  }
}

TEST(Hdf5, TheSizeIsCheckedBeforeAllocating) {
  const int64_t saved = Limits::max_array_bytes();
  Limits::set_max_array_bytes(40);
  const std::string msg = user_error_of([&] { load_array(seed("hdf5/contiguous_f4.h5")); });
  Limits::set_max_array_bytes(saved);
  EXPECT_THAT(msg, HasSubstr("of shape (3, 4) would need 48 B, more than the memory budget"));
}

TEST(Hdf5, WritesANewFileAndAddsToAnExistingOne) {
  const std::string dir = tmp_dir();
  Array stack = ramp3({5, 6, 7});
  save_array(dir + "/new.h5:/recon", stack);
  Array back = load_array(dir + "/new.h5:/recon");
  EXPECT_EQ(back.shape, stack.shape);
  EXPECT_EQ(back.data, stack.data);
  // Into a copy of h5py's file: its datasets stay, the new one and its groups appear.
  std::filesystem::copy_file(seed("hdf5/groups_gzip.h5"), dir + "/scan.h5");
  save_array(dir + "/scan.h5:/results/run1/x", stack);
  const std::string bytes = read_file(dir + "/scan.h5");
  EXPECT_THAT(hdf5_datasets(bytes, "scan.h5"), ElementsAre("/entry/data", "/entry/u16", "/results/run1/x"));
  expect_seed_values(load_array(dir + "/scan.h5:/entry/data"), 1e-7);
  // A file in the latest format (superblock version 3, h5py's libver="latest",
  // SWMR files): libhdf5 finishes it when it closes it, its checksum right.
  std::filesystem::copy_file(seed("hdf5/latest_scalar.h5"), dir + "/latest.h5");
  save_array(dir + "/latest.h5:/x", stack);
  EXPECT_EQ(load_array(dir + "/latest.h5:/x").data, stack.data);
  EXPECT_EQ(load_array(dir + "/latest.h5:/s").data[0], 2.5f);
  const std::string v3 = read_file(seed("hdf5/latest_scalar.h5"));
  EXPECT_EQ(decode_hdf5(encode_hdf5(&v3, "/y", stack, "v3.h5"), "/y", "v3.h5").data, stack.data);
  // Writing again replaces the dataset, of another shape too.
  Array small = ramp3({2, 2});
  save_array(dir + "/scan.h5:/results/run1/x", small);
  EXPECT_EQ(load_array(dir + "/scan.h5:/results/run1/x").data, small.data);
}

TEST(Hdf5, WriteErrorsLeaveTheFileAsItWas) {
  const std::string dir = tmp_dir();
  const std::string path = dir + "/keep.h5";
  std::filesystem::copy_file(seed("hdf5/groups_gzip.h5"), path, std::filesystem::copy_options::overwrite_existing);
  const std::string before = read_file(path);
  Array a = ramp3({2, 2});
  EXPECT_THAT(user_error_of([&] { save_array(path + ":/entry", a); }), HasSubstr("'/entry' is a group; refusing"));
  EXPECT_THAT(user_error_of([&] { save_array(path, a); }), HasSubstr("name the dataset to write, as " + path + ":/recon"));
  EXPECT_THAT(user_error_of([&] { save_array(path + ":/a/../b", a); }), HasSubstr("no '.' or '..' parts"));
  // The same refusals before any array exists (before a solve).
  EXPECT_THAT(user_error_of([&] { check_array_output(path + ":/entry"); }), HasSubstr("'/entry' is a group"));
  EXPECT_THAT(user_error_of([&] { check_array_output(path + ":/recon/"); }), HasSubstr("no empty parts"));
  EXPECT_THAT(user_error_of([&] { check_array_output(path + ":/entry/data/x"); }),
              HasSubstr("'/entry/data' is a dataset, not a group: it holds no 'x'"));
  check_array_output(path + ":/entry/data");  // a dataset: replaced
  check_array_output(dir + "/new_file.h5:/x");
  EXPECT_EQ(read_file(path), before);
  // A file that is not HDF5 is not replaced by one.
  const std::string text = dir + "/notes.h5";
  write_file_atomic(text, "my notes\n");
  EXPECT_THAT(user_error_of([&] { check_array_output(text + ":/x"); }), HasSubstr("malformed HDF5"));
  EXPECT_THAT(user_error_of([&] { save_array(text + ":/x", a); }), HasSubstr("malformed HDF5"));
  EXPECT_EQ(read_file(text), "my notes\n");
}

TEST(Hdf5, WrittenFilesReadBackThroughTheWholeFormatRange) {
  // Shapes of rank 0 to 4 round-trip exactly.
  const std::string dir = tmp_dir();
  for (const Shape& shape : {Shape{}, Shape{7}, Shape{3, 4}, Shape{2, 3, 4}, Shape{2, 1, 3, 2}}) {
    Array a = ramp3(shape);
    save_array(dir + "/r.h5:/a", a);
    Array b = load_array(dir + "/r.h5:/a");
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.data, a.data);
  }
}

// What h5py's guess_chunk(shape, None, 4) gives (h5py 3.16), which
// chunks=auto and compression without chunks follow.
TEST(Hdf5Layout, ChunksAreChosenAsH5pyChoosesThem) {
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{96, 128}, {24, 64}},       {{512, 512}, {64, 64}},      {{2048, 2048}, {64, 128}},
      {{3, 100, 200}, {1, 25, 100}}, {{7}, {7}},                {{100000}, {3125}},
      {{30, 40, 3}, {15, 40, 3}},  {{1, 1}, {1, 1}},            {{4096, 4096, 3}, {128, 128, 1}}};
  for (const auto& [shape, want] : cases) EXPECT_EQ(choose_chunks(shape), want) << shape_to_string(shape);
}

TEST(Hdf5Layout, SpecsParseAndBadOnesSayWhichPart) {
  SaveOptions o = parse_save_options("chunks=64x32,gzip=6,shuffle");
  EXPECT_EQ(o.chunks, (std::vector<int64_t>{64, 32}));
  EXPECT_TRUE(o.chunked);
  EXPECT_EQ(o.gzip, 6);
  EXPECT_TRUE(o.shuffle);
  EXPECT_EQ(parse_save_options("gzip").gzip, 4);  // h5py's default level
  o = parse_save_options("chunks=auto");
  EXPECT_TRUE(o.chunked && o.chunks.empty() && o.gzip == 0);
  EXPECT_TRUE(parse_save_options("contiguous").is_default());
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"gzip=0", "gzip=0: the level is 1 (fastest) to 9"},
      {"gzip=10", "gzip=10: the level is 1"},
      {"chunks=64x", "chunks=64x: the chunk shape is positive extents"},
      {"chunks=64xx2", "chunks=64xx2: the chunk shape"},
      {"chunks=0x4", "chunks=0x4: the chunk shape"},
      {"chunks", "'chunks' is not a layout"},
      {"lzf", "'lzf' is not a layout; the parts are chunks=AxB"},
      {"gzip,,shuffle", "'' is not a layout"},
      {"contiguous,gzip", "contiguous storage has no chunks and no filters"},
      {"", "--h5-layout is empty"}};
  for (const auto& c : bad)
    EXPECT_THAT(user_error_of([&] { parse_save_options(c.first, "--h5-layout"); }), HasSubstr(c.second)) << c.first;
}

TEST(Hdf5Layout, OptionsThatDoNotFitTheArrayAreRefusedNamingBothShapes) {
  SaveOptions o;
  o.chunks = {4, 4, 4};
  EXPECT_THAT(user_error_of([&] { resolve_hdf5_layout(o, {8, 8}, "r.h5:/x"); }),
              HasSubstr("r.h5:/x: the chunk shape (4, 4, 4) has 3 axes and the array (8, 8) has 2"));
  o.chunks = {4, 9};
  EXPECT_THAT(user_error_of([&] { resolve_hdf5_layout(o, {8, 8}, "r.h5:/x"); }),
              HasSubstr("the chunk shape (4, 9) does not fit the array (8, 8) (axis 1"));
  o.chunks = {65536, 32768};
  EXPECT_THAT(user_error_of([&] { resolve_hdf5_layout(o, {65536, 65536}, "r.h5:/x"); }),
              HasSubstr("HDF5's limit is 4 GiB"));
  o = SaveOptions();
  o.gzip = 12;
  EXPECT_THAT(user_error_of([&] { resolve_hdf5_layout(o, {8, 8}, "r.h5:/x"); }), HasSubstr("gzip level 12"));
  // Nothing to chunk: a scalar and an empty array are stored contiguous.
  o.gzip = 5;
  EXPECT_TRUE(resolve_hdf5_layout(o, {}, "r.h5:/x").chunks.empty());
  EXPECT_TRUE(resolve_hdf5_layout(o, {0, 8}, "r.h5:/x").chunks.empty());
  EXPECT_EQ(resolve_hdf5_layout(o, {96, 128}, "r.h5:/x").chunks, (std::vector<int64_t>{24, 64}));
  // Other formats take the default alone, named by path.
  EXPECT_THAT(user_error_of([&] { save_array(tmp_dir() + "/r.npy", ramp3({4, 4}), o); }),
              HasSubstr("r.npy: chunks, gzip and shuffle are HDF5 storage"));
  EXPECT_FALSE(std::filesystem::exists(tmp_dir() + "/r.npy"));
}

TEST(Hdf5Layout, ChunkedAndCompressedDatasetsReadBackExactlyAndSmaller) {
  const std::string dir = tmp_dir();
  Array smooth({200, 300});
  for (size_t i = 0; i < smooth.data.size(); ++i) smooth.data[i] = static_cast<float>((i / 300) * 0.001);
  save_array(dir + "/plain.h5:/x", smooth);
  SaveOptions gz;
  gz.gzip = 6;
  gz.shuffle = true;
  save_array(dir + "/gz.h5:/x", smooth, gz);
  EXPECT_EQ(load_array(dir + "/gz.h5:/x").data, smooth.data);
  EXPECT_LT(std::filesystem::file_size(dir + "/gz.h5"), std::filesystem::file_size(dir + "/plain.h5") / 10);
  // Partial edge chunks, every rank that can be chunked, into an existing file.
  for (const Shape& shape : {Shape{7}, Shape{3, 4}, Shape{2, 3, 5}, Shape{2, 1, 3, 2}}) {
    SaveOptions o;
    o.chunks.assign(shape.size(), 2);
    for (size_t k = 0; k < shape.size(); ++k) o.chunks[k] = std::min<int64_t>(2, shape[k]);
    o.gzip = 1;
    Array a = ramp3(shape);
    save_array(dir + "/gz.h5:/r" + std::to_string(shape.size()), a, o);
    EXPECT_EQ(load_array(dir + "/gz.h5:/r" + std::to_string(shape.size())).data, a.data);
  }
  EXPECT_EQ(load_array(dir + "/gz.h5:/x").data, smooth.data);  // kept beside the new ones
}

}  // namespace
}  // namespace proxc::internal::io
