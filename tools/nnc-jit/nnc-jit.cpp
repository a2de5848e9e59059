//===- nnc-jit.cpp - Run .nnc kernels -------------------------------------===//
//
// The tool is its library: lib/Driver parses the flags and runs the file on
// the public API. See docs/CommandLine.md.
//
//===----------------------------------------------------------------------===//
#include "nnc/Driver/Driver.h"

#include "llvm/Support/InitLLVM.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

/// A kernel running in JIT-compiled code cannot be interrupted safely from
/// inside the process, so --timeout ends the process: a watchdog thread
/// reports the timeout and exits with status 1.
static void startWatchdog(unsigned Seconds) {
  std::thread([Seconds] {
    std::this_thread::sleep_for(std::chrono::seconds(Seconds));
    std::fprintf(stderr, "nnc-jit: error: timed out after %u s (--timeout)\n",
                 Seconds);
    std::fflush(stderr);
    std::_Exit(1);
  }).detach();
}

int main(int argc, char **argv) {
  llvm::InitLLVM X(argc, argv);
  nnc::DriverOptions Opts;
  if (std::optional<int> Done =
          nnc::parseCommandLine(argc, argv, Opts, std::cerr))
    return *Done;
  if (Opts.TimeoutSeconds)
    startWatchdog(Opts.TimeoutSeconds);
  return nnc::runDriver(Opts, std::cout, std::cerr);
}
