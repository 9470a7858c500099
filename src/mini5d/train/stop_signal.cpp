// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/stop_signal.hpp"

#include <cstdlib>
#include <cstring>

namespace mini5d::train {

namespace {
volatile std::sig_atomic_t g_signal = 0;
void on_stop_signal(int sig) { g_signal = sig; }
}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // MPI and file calls in flight carry on
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);
}

void raise_stop_for_test(const char* point) {
  const char* want = std::getenv("MINI5D_TEST_RAISE");
  if (want && std::strcmp(want, point) == 0) std::raise(SIGUSR1);
}

int stop_signal() { return int(g_signal); }
void clear_stop_signal() { g_signal = 0; }

}  // namespace mini5d::train
