// signal_chain.hpp — handing a signal on to the handler installed before ours (the crash reporter,
// mapped files' SIGBUS handler): its SA_SIGINFO or plain handler, else the default, raised again.
// Async-signal-safe.
#pragma once

#include <signal.h>

namespace wick::detail {

inline void pass_to_previous(const struct sigaction& previous, int sig, siginfo_t* info,
                             void* context) {
  if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(sig, info, context);
    return;
  }
  if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN &&
      previous.sa_handler != nullptr) {
    previous.sa_handler(sig);
    return;
  }
  ::signal(sig, SIG_DFL);  // the default: terminate (with a core where enabled), as without us
  ::raise(sig);
}

}  // namespace wick::detail
