// Checkpoints are verified before a resume uses them (issue 27): a flipped
// bit, a tampered iteration, a NaN in the state, a truncation, an older
// format and a foreign file are each refused with a message naming the file.

#include "solvers/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "support/file_util.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

using ::testing::HasSubstr;

std::map<std::string, Array> state_of(float first) {
  std::map<std::string, Array> s;
  s["x0"] = Array(Shape{3, 4});
  s["y0"] = Array(Shape{3, 4, 2});
  for (auto& [name, a] : s) {
    for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = first + 0.25f * static_cast<float>(i);
  }
  return s;
}

std::string load_error(const std::string& path, int max_iters = 100) {
  std::map<std::string, Array> into = state_of(0);
  return test::user_error_of([&] { load_checkpoint(path, "pc", "sig", max_iters, &into); });
}

TEST(Checkpoint, RoundTripsAndRefusesEveryCorruption) {
  std::string dir = test::temp_dir(), path = dir + "/s.ckpt";
  save_checkpoint(path, "pc", "sig", 42, state_of(1));
  std::map<std::string, Array> into = state_of(0);
  EXPECT_EQ(load_checkpoint(path, "pc", "sig", 100, &into), 42);
  EXPECT_EQ(into.at("y0").data, state_of(1).at("y0").data);
  const std::string good = read_file(path);

  // One flipped bit anywhere in the data, and 100 corrupted bytes.
  for (size_t at : {good.size() - 1, good.size() - 40, good.size() - 100}) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x01);
    write_file_atomic(path, bad);
    EXPECT_THAT(load_error(path), HasSubstr("checksum does not match")) << at;
  }
  std::string bad = good;
  for (size_t i = good.size() - 100; i < good.size(); ++i) bad[i] = 'Z';
  write_file_atomic(path, bad);
  EXPECT_THAT(load_error(path), HasSubstr("checksum does not match"));

  // The iteration edited in the header: out of range, or in range but not what was saved.
  for (const char* it : {"5000", "100000000000", "-3"}) {
    std::string edited = good;
    size_t at = edited.find("\"iteration\":42");
    ASSERT_NE(at, std::string::npos);
    edited.replace(at, 14, std::string("\"iteration\":") + it);
    // The header's length (8 bytes after the 10-byte magic) grows with the edit.
    uint64_t header = 0;
    for (int i = 0; i < 8; ++i)
      header |= static_cast<uint64_t>(static_cast<unsigned char>(good[10 + i])) << (8 * i);
    header += std::string(it).size() - 2;
    for (int i = 0; i < 8; ++i) edited[10 + i] = static_cast<char>((header >> (8 * i)) & 0xff);
    write_file_atomic(path, edited);
    EXPECT_THAT(load_error(path), HasSubstr("outside 0..100")) << it;
  }
  {
    std::string edited = good;
    size_t at = edited.find("\"iteration\":42");
    edited.replace(at, 14, "\"iteration\":41");
    write_file_atomic(path, edited);
    EXPECT_THAT(load_error(path), HasSubstr("checksum does not match"));
  }

  // A NaN saved in the state (a diverging run's) does not resume.
  std::map<std::string, Array> nan_state = state_of(1);
  nan_state.at("x0").data[5] = std::nanf("");
  save_checkpoint(path, "pc", "sig", 7, nan_state);
  EXPECT_THAT(load_error(path), HasSubstr("holds NaN or Inf values"));

  // A damaged byte in the header's JSON: said where, without the damaged bytes themselves.
  {
    std::string edited = good;
    size_t at = edited.find("\"solver\"");
    ASSERT_NE(at, std::string::npos);
    edited[at] = '\x01';
    write_file_atomic(path, edited);
    const std::string e = load_error(path);
    EXPECT_THAT(e, HasSubstr("corrupt checkpoint header (not JSON at its byte"));
    EXPECT_EQ(e.find('\x01'), std::string::npos) << e;
  }
  // The same array named twice (the header edited, the length kept): refused by name.
  {
    std::string edited = good;
    size_t at = edited.find("\"name\":\"y0\"");
    ASSERT_NE(at, std::string::npos);
    edited.replace(at, 11, "\"name\":\"x0\"");
    write_file_atomic(path, edited);
    EXPECT_THAT(load_error(path), HasSubstr("the array 'x0' appears twice"));
  }

  // Truncated, of an older format, not a checkpoint, of another run.
  write_file_atomic(path, good.substr(0, good.size() - 4));
  EXPECT_THAT(load_error(path), HasSubstr("bytes of data"));
  write_file_atomic(path, "PROXCKPT1\n" + good.substr(10));
  EXPECT_THAT(load_error(path), HasSubstr("older proxc"));
  write_file_atomic(path, "hello");
  EXPECT_THAT(load_error(path), HasSubstr("not a proxc checkpoint"));
  write_file_atomic(path, good);
  into = state_of(0);
  EXPECT_THAT(test::user_error_of([&] { load_checkpoint(path, "pc", "other", 100, &into); }),
              HasSubstr("belongs to another run"));
  EXPECT_THAT(test::user_error_of([&] { load_checkpoint(path, "admm", "sig", 100, &into); }),
              HasSubstr("of the solver 'pc'"));
}

// A checkpoint written with valid checksums (forged, or by a bug) whose step
// sizes break the options' rules is refused, as the options would be (issue
// 63, item 7): it was accepted and the solve ran with a zero or negative step.
TEST(Checkpoint, StepSizesAreCheckedAsOptionsAre) {
  const std::string dir = test::temp_dir(), path = dir + "/s.ckpt";
  const std::map<std::string, double> good = {{"pc_tau", 2.0}, {"pc_sigma", 0.5}, {"_pc_alpha", 0.5}};
  save_checkpoint(path, "pc", "sig", 7, state_of(1), good);
  std::map<std::string, Array> into = state_of(0);
  std::map<std::string, double> steps = {{"pc_tau", 1}, {"pc_sigma", 1}, {"_pc_alpha", 1}};
  EXPECT_EQ(load_checkpoint(path, "pc", "sig", 100, &into, &steps), 7);
  EXPECT_EQ(steps, good);
  const std::pair<std::map<std::string, double>, const char*> forged[] = {
      {{{"pc_tau", 0.0}, {"pc_sigma", 0.5}, {"_pc_alpha", 0.5}}, "step size 'pc_tau' is 0; it must be > 0"},
      {{{"pc_tau", 2.0}, {"pc_sigma", -0.5}, {"_pc_alpha", 0.5}}, "step size 'pc_sigma' is -0.5; it must be > 0"},
      {{{"pc_tau", 1e39}, {"pc_sigma", 0.5}, {"_pc_alpha", 0.5}}, "within float32's range"},
      {{{"pc_tau", 2.0}, {"pc_sigma", 0.5}, {"_pc_alpha", -1.0}}, "'_pc_alpha' is -1; it must be >= 0"},
  };
  for (const auto& [scalars, message] : forged) {
    save_checkpoint(path, "pc", "sig", 7, state_of(1), scalars);
    std::map<std::string, double> mine = {{"pc_tau", 1}, {"pc_sigma", 1}, {"_pc_alpha", 1}};
    const std::string error = test::user_error_of([&] { load_checkpoint(path, "pc", "sig", 100, &into, &mine); });
    EXPECT_THAT(error, HasSubstr(path + ": the checkpoint's ")) << message;
    EXPECT_THAT(error, HasSubstr(message));
  }
}

}  // namespace
}  // namespace proxc::internal
