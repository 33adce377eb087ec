// How the proxc command stops on SIGINT, SIGTERM and SIGHUP (signals.h).
#include "signals.h"

#include <signal.h>

#include <csignal>
#include <initializer_list>

#include "proxc/proxc.h"

namespace proxc_cli {

std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signal{0};

namespace {

std::atomic<bool> g_started{false};  // the iterations have begun
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "the signal handler stores to lock-free atomics only");

extern "C" void on_stop_signal(int sig) {
  if (g_signal.exchange(sig) != 0 || !g_started.load()) {
    // Ended now, as the default action would: the files half written go first.
    proxc::remove_temporary_files_now();
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_interrupted.store(true);
}

}  // namespace

int stop_signal() { return g_signal.load(); }

void handle_stop_signals() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    // A signal the command was started to ignore (nohup, a shell's
    // background job without job control) stays ignored.
    struct sigaction was {};
    if (::sigaction(sig, nullptr, &was) == 0 && was.sa_handler == SIG_IGN) continue;
    std::signal(sig, on_stop_signal);
  }
}

void ignore_write_signals() {
  // A reader that closed standard output or a FIFO, and a file over
  // ulimit -f, are write errors (EPIPE, EFBIG) that the writer reports and
  // cleans up after, not deaths that leave temporaries behind.
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGXFSZ, SIG_IGN);
}

void iterations_started() { g_started.store(true); }

}  // namespace proxc_cli
