// The on-disk pipeline cache shared by processes and users (issue 63, item
// 5): nothing written through a link planted at any name proxc writes there,
// concurrent compiles of one pipeline giving one good entry, and a folder
// that others may write used read-only.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <regex>

#include "support/file_util.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

namespace fs = std::filesystem;
using test::shell_quote;
using ::testing::HasSubstr;
using ::testing::Not;

std::string proxc_command(const std::string& args) {
  return "timeout 300 " + shell_quote(test::proxc_binary()) + " " + args + " 2>&1";
}

test::CommandResult proxc(const std::string& args) { return test::run_command(proxc_command(args)); }

// A problem with an FFT solve (the wisdom file) and several pipelines.
std::string deconvolution(const std::string& dir) {
  test::write_text(dir + "/d.prox",
                   "x = variable(48, 40)\nk = gaussian(5, 1.2)\nb = gaussian([48, 40], 7)\n"
                   "minimize sum_squares(conv(k, x) - b) + 0.01 * group_norm1(grad(x), [2]) + nonneg(x)\n");
  return dir + "/d.prox";
}

// "N pipelines compiled, M loaded" of `proxc compile`'s line.
std::pair<int, int> compiled_and_loaded(const std::string& out) {
  std::smatch m;
  static const std::regex re("(\\d+) pipelines? compiled, (\\d+) loaded from the on-disk cache");
  if (!std::regex_search(out, m, re)) return {-1, -1};
  return {std::stoi(m[1]), std::stoi(m[2])};
}

// The names in the cache folder, and whether each is a plain file.
std::map<std::string, bool> listing(const std::string& cache) {
  std::map<std::string, bool> names;
  for (const auto& e : fs::directory_iterator(cache)) {
    names[e.path().filename().string()] = fs::is_regular_file(fs::symlink_status(e.path()));
  }
  return names;
}

TEST(CacheSafety, LinksPlantedAtEveryNameProxcWritesAreReplacedNotWrittenThrough) {
  const std::string dir = test::temp_dir(), cache = dir + "/cache", victims = dir + "/victims";
  const std::string args = "compile " + shell_quote(deconvolution(dir)) + " --cache-dir " + shell_quote(cache);
  auto first = proxc(args);
  ASSERT_EQ(first.exit_code, 0) << first.out;
  const auto names = listing(cache);
  // What a compile writes: entries, their checksums, schedules, locks, the runtime.
  int sums = 0, locks = 0, schedules = 0;
  for (const auto& [name, plain] : names) {
    EXPECT_TRUE(plain) << name;
    EXPECT_THAT(name, Not(HasSubstr("scratch"))) << "a scratch folder was left behind";
    sums += name.size() > 4 && name.compare(name.size() - 4, 4, ".sum") == 0;
    locks += name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") == 0;
    schedules += name.size() > 9 && name.compare(name.size() - 9, 9, ".schedule") == 0;
  }
  EXPECT_GE(sums, 2);
  EXPECT_GE(locks, 2);
  EXPECT_GE(schedules, 1);
  // Every name becomes a link to a file of someone else's (half of them not
  // there yet: a dangling link would create it).
  fs::create_directories(victims);
  int n = 0;
  for (const auto& [name, plain] : names) {
    const std::string victim = victims + "/" + name;
    if (n++ % 2 == 0) test::write_text(victim, "someone else's file\n");
    fs::remove(cache + "/" + name);
    fs::create_symlink(victim, cache + "/" + name);
  }
  auto again = proxc(args);
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_EQ(compiled_and_loaded(again.out).second, 0) << "a link was loaded as an entry\n" << again.out;
  n = 0;
  for (const auto& [name, plain] : names) {
    const std::string victim = victims + "/" + name;
    if (n++ % 2 == 0) {
      EXPECT_EQ(read_file(victim), "someone else's file\n") << name;
    } else {
      EXPECT_FALSE(fs::exists(fs::symlink_status(victim))) << name << ": created through a dangling link";
    }
  }
  // The entries are plain files again (a lock file may stay a link: it is
  // never opened through one), and the next run loads every one of them.
  for (const auto& [name, plain] : listing(cache)) {
    if (name.size() <= 5 || name.compare(name.size() - 5, 5, ".lock") != 0) {
      EXPECT_TRUE(plain) << name;
    }
  }
  auto third = proxc(args);
  ASSERT_EQ(third.exit_code, 0) << third.out;
  EXPECT_EQ(compiled_and_loaded(third.out).first, 0) << third.out;
  EXPECT_THAT(third.out, Not(HasSubstr("unusable")));
}

TEST(CacheSafety, FourProcessesCompilingOnePipelineAtOnceGiveOneGoodEntry) {
  const std::string dir = test::temp_dir(), cache = dir + "/cache";
  const std::string args = "compile " + shell_quote(deconvolution(dir)) + " --cache-dir " + shell_quote(cache);
  std::string script;
  for (int i = 0; i < 4; ++i) script += proxc_command(args) + " > " + shell_quote(dir + "/out" + std::to_string(i)) + " & ";
  script += "wait";
  ASSERT_EQ(test::run_command(script).exit_code, 0);
  int compiled = 0, total = -1;
  for (int i = 0; i < 4; ++i) {
    const std::string out = read_file(dir + "/out" + std::to_string(i));
    const auto [c, l] = compiled_and_loaded(out);
    ASSERT_GE(c, 0) << out;
    EXPECT_THAT(out, Not(HasSubstr("unusable"))) << out;
    EXPECT_THAT(out, Not(HasSubstr("warning"))) << out;
    if (total < 0) total = c + l;
    EXPECT_EQ(c + l, total) << out;
    compiled += c;
  }
  // Each pipeline compiled by one process; the others waited and loaded it.
  EXPECT_EQ(compiled, total);
  for (const auto& [name, plain] : listing(cache)) {
    EXPECT_TRUE(plain) << name;
    EXPECT_THAT(name, Not(HasSubstr("scratch"))) << "a scratch folder was left behind";
  }
  auto after = proxc(args);
  EXPECT_EQ(compiled_and_loaded(after.out), std::make_pair(0, total)) << after.out;
}

TEST(CacheSafety, AFolderOthersMayWriteIsUsedReadOnlyAndOthersEntriesAreNotLoaded) {
  const std::string dir = test::temp_dir(), cache = dir + "/cache";
  const std::string args = "compile " + shell_quote(deconvolution(dir)) + " --cache-dir " + shell_quote(cache);
  auto first = proxc(args);
  ASSERT_EQ(first.exit_code, 0) << first.out;
  struct stat st;
  ASSERT_EQ(::stat(cache.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u) << "proxc made its cache folder for others to read or write";
  const auto before = listing(cache);
  ASSERT_EQ(::chmod(cache.c_str(), 01777), 0);
  auto shared = proxc(args);
  ASSERT_EQ(shared.exit_code, 0) << shared.out;
  EXPECT_THAT(shared.out, HasSubstr("is used read-only: others may write into it (mode 1777"));
  // This user's entries are still served; nothing is written.
  EXPECT_EQ(compiled_and_loaded(shared.out).first, 0) << shared.out;
  EXPECT_EQ(listing(cache), before);
  // An entry someone else may write, or that is someone else's, is not loaded.
  std::string pipeline;
  for (const auto& [name, plain] : before) {
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".so") == 0 && name.rfind("runtime-", 0) != 0) {
      pipeline = cache + "/" + name;
    }
  }
  ASSERT_FALSE(pipeline.empty());
  ASSERT_EQ(::chmod(pipeline.c_str(), 0666), 0);
  auto writable_entry = proxc(args);
  ASSERT_EQ(writable_entry.exit_code, 0) << writable_entry.out;
  EXPECT_THAT(writable_entry.out, HasSubstr("is unusable: others may write it (mode 0666)"));
  EXPECT_EQ(compiled_and_loaded(writable_entry.out).first, 1) << writable_entry.out;
  ASSERT_EQ(::chmod(pipeline.c_str(), 0644), 0);
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(pipeline.c_str(), 65534, 65534), 0);
    auto others = proxc(args);
    ASSERT_EQ(others.exit_code, 0) << others.out;
    EXPECT_THAT(others.out, HasSubstr("is unusable: it belongs to another user (uid 65534)"));
    EXPECT_EQ(compiled_and_loaded(others.out).first, 1) << others.out;
  }
  // Made this user's alone again, the folder takes new entries.
  ASSERT_EQ(::chmod(cache.c_str(), 0700), 0);
  auto own = proxc(args);
  ASSERT_EQ(own.exit_code, 0) << own.out;
  EXPECT_THAT(own.out, Not(HasSubstr("read-only")));
  auto loads = proxc(args);
  EXPECT_EQ(compiled_and_loaded(loads.out).first, 0) << loads.out;
}

}  // namespace
}  // namespace proxc::internal
