// How the proxc command stops on SIGINT, SIGTERM and SIGHUP (signals.h).
#include "signals.h"

#include <csignal>
#include <initializer_list>

namespace proxc_cli {

std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signal{0};

namespace {

std::atomic<bool> g_started{false};  // the iterations have begun
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "the signal handler stores to lock-free atomics only");

extern "C" void on_stop_signal(int sig) {
  if (g_signal.exchange(sig) != 0 || !g_started.load()) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_interrupted.store(true);
}

}  // namespace

int stop_signal() { return g_signal.load(); }

void handle_stop_signals() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, on_stop_signal);
}

void iterations_started() { g_started.store(true); }

}  // namespace proxc_cli
