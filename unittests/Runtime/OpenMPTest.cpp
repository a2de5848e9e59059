//===- OpenMPTest.cpp - One OpenMP runtime in the process -----------------===//
//
// A binary of its own: it counts the threads of the process, so no other
// test may have started a larger pool before it.
//
//===----------------------------------------------------------------------===//
#include "nnc/Runtime/OneDNN.h"
#include "nnc/Runtime/Runtime.h"

#include <gtest/gtest.h>

#include <atomic>
#include <dirent.h>
#include <dlfcn.h>
#include <string>

namespace {

int32_t work(int64_t B, int64_t E, void *Env) {
  auto *Sum = static_cast<std::atomic<int64_t> *>(Env);
  for (int64_t I = B; I < E; ++I)
    *Sum += I & 1;
  return 0;
}

/// The dynamic library that defines Symbol in this process.
std::string libraryOf(const char *Symbol) {
  void *P = dlsym(RTLD_DEFAULT, Symbol);
  Dl_info Info;
  if (!P || !dladdr(P, &Info) || !Info.dli_fname)
    return "";
  return Info.dli_fname;
}

// One OpenMP runtime: GOMP_* entry points (what GNU-compiled code, oneDNN
// included, calls) must resolve to LLVM's libomp, never to libgomp.
TEST(OpenMP, OnlyLibompServesTheProcess) {
  std::string Lib = libraryOf("GOMP_parallel");
  EXPECT_NE(Lib.find("libomp.so"), std::string::npos) << Lib;
  EXPECT_NE(libraryOf("omp_get_max_threads").find("libomp.so"),
            std::string::npos);
}

int countThreads() {
  int N = 0;
  if (DIR *D = opendir("/proc/self/task")) {
    while (dirent *E = readdir(D))
      N += E->d_name[0] != '.';
    closedir(D);
  }
  return N;
}

TEST(OpenMP, OneThreadPool) {
  nnc_runtime_set_num_threads(2);
  std::atomic<int64_t> Sum{0};
  // Compiled-loop regions and oneDNN convolutions, alternating.
  std::vector<float> X(1 * 16 * 28 * 28, 0.5f), W(16 * 16 * 9, 0.25f),
      Y(1 * 16 * 28 * 28);
  nnc::onednn::Tensor TX{X.data(), {1, 16, 28, 28}, {12544, 1, 448, 16}};
  nnc::onednn::Tensor TW{W.data(), {16, 16, 3, 3}, {144, 9, 3, 1}};
  nnc::onednn::Tensor TY{Y.data(), {1, 16, 28, 28}, {12544, 1, 448, 16}};
  nnc::Conv2dParams P{1, 1, 1, 1, 1, 1, 1};
  std::string Err;
  for (int R = 0; R < 3; ++R) {
    nnc_parallel_for(work, 0, 1 << 16, 1, &Sum);
    ASSERT_EQ(nnc::onednn::conv2d(TY, TX, TW, nullptr, P, {}, {}, Err), 0)
        << Err;
  }
  EXPECT_FLOAT_EQ(Y[(14 * 28 + 14) * 16], 0.5f * 0.25f * 9 * 16); // Interior.
  // The main thread plus one pool worker: oneDNN used the same pool. A
  // second OpenMP runtime (libgomp behind oneDNN) would add its own threads.
  EXPECT_EQ(countThreads(), 2);
  nnc_runtime_set_num_threads(0);
}

} // namespace
