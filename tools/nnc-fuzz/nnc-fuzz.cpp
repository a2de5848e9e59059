//===- nnc-fuzz.cpp - Differential fuzzing of the whole compiler ----------===//
//
// Generates random kernels and checks each against the interpreter at several
// thread counts (lib/Testing/DifferentialFuzz.cpp). docs/Testing.md says how
// to run it long; CI runs a short seeded smoke through lit.
//
//===----------------------------------------------------------------------===//
#include "nnc/Testing/DifferentialFuzz.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

#include <chrono>
#include <iostream>

using namespace llvm;

static cl::OptionCategory Category("nnc-fuzz options");
static cl::opt<uint64_t> Seed("seed", cl::init(1),
                              cl::desc("First seed"), cl::cat(Category));
static cl::opt<uint64_t> Count("count", cl::init(100),
                               cl::desc("Kernels to check (0: until --time)"),
                               cl::cat(Category));
static cl::opt<unsigned> Seconds("time", cl::init(0),
                                 cl::desc("Stop after this many seconds"),
                                 cl::cat(Category));
static cl::list<unsigned> ThreadCounts("thread-counts", cl::CommaSeparated,
                                       cl::desc("Thread counts (default 1,2,3,4)"),
                                       cl::cat(Category));
static cl::list<unsigned>
    OptLevels("opt-levels", cl::CommaSeparated,
              cl::desc("Optimization levels to compile each kernel at "
                       "(default 0,1,2,3)"),
              cl::cat(Category));
static cl::opt<bool> Print("print", cl::desc("Print each kernel and stop"),
                           cl::cat(Category));
static cl::opt<bool> Hostile(
    "hostile",
    cl::desc("Generate hostile kernels and arguments instead (strides, "
             "overflowing sizes, offsets, empty shapes, views, aliasing, "
             "parameter ranges): both engines fail, or agree"),
    cl::cat(Category));
static cl::opt<bool> Wrap(
    "wrap",
    cl::desc("Generate kernels whose index arithmetic wraps instead (narrow "
             "types, casts, wrapped bounds, hand-written tasks), each run "
             "three times: both engines fail, or agree"),
    cl::cat(Category));
static cl::opt<bool> Transforms(
    "transforms",
    cl::desc("Also apply random loop transforms of the embedded API to each "
             "kernel and check they change no result"),
    cl::cat(Category));

int main(int argc, char **argv) {
  InitLLVM X(argc, argv);
  cl::HideUnrelatedOptions(Category);
  cl::ParseCommandLineOptions(argc, argv, "nnc-fuzz: differential fuzzing\n");
  auto Special = [](uint64_t S) {
    return Wrap ? nnc::generateWrapKernel(S) : nnc::generateHostileKernel(S);
  };
  if (Print) {
    nnc::FuzzKernel FK = Hostile || Wrap ? Special(Seed)
                                         : nnc::generateRandomKernel(Seed);
    for (const std::string &P : FK.Params)
      std::cout << "// --param " << P << '\n';
    std::cout << FK.Text;
    return 0;
  }
  std::vector<unsigned> Threads(ThreadCounts.begin(), ThreadCounts.end());
  if (Threads.empty())
    Threads = {1, 2, 3, 4};
  std::vector<unsigned> Levels(OptLevels.begin(), OptLevels.end());
  if (Levels.empty())
    Levels = {0, 1, 2, 3};
  std::vector<std::unique_ptr<nnc::FuzzTarget>> Targets;
  for (unsigned L : Levels)
    Targets.push_back(std::make_unique<nnc::FuzzTarget>(L, Threads));
  auto Start = std::chrono::steady_clock::now();
  uint64_t N = 0, NumTransforms = 0;
  for (uint64_t S = Seed;; ++S) {
    if (Count && N >= Count)
      break;
    if (Seconds && std::chrono::steady_clock::now() - Start >=
                       std::chrono::seconds(Seconds))
      break;
    if (Hostile || Wrap) {
      nnc::FuzzKernel H = Special(S);
      // A race shows in some runs only: wrap kernels run three times.
      for (size_t I = 0; I < Targets.size() * (Wrap ? 3 : 1); ++I) {
        std::string Failure;
        if (!nnc::checkHostileKernel(H, *Targets[I % Targets.size()],
                                     Failure)) {
          std::cout << "nnc-fuzz: seed " << S << " at -O"
                    << Levels[I % Targets.size()] << ": " << Failure << "\n";
          for (const std::string &P : H.Params)
            std::cout << "// --param " << P << '\n';
          std::cout << H.Text;
          return 1;
        }
      }
      ++N;
      continue;
    }
    nnc::FuzzKernel FK = nnc::generateRandomKernel(S);
    auto Show = [&] {
      for (const std::string &P : FK.Params)
        std::cout << "// --param " << P << '\n';
      std::cout << FK.Text;
    };
    if (Transforms) {
      std::string Failure;
      std::vector<std::string> Applied;
      if (!nnc::checkRandomTransforms(FK, S, *Targets.back(), Failure,
                                      Applied)) {
        std::cout << "nnc-fuzz: seed " << S << ", transforms: " << Failure
                  << "\n";
        Show();
        return 1;
      }
      NumTransforms += Applied.size();
    }
    for (size_t I = 0; I < Targets.size(); ++I) {
      std::string Failure;
      if (!nnc::checkRandomKernel(FK, *Targets[I], Failure)) {
        std::cout << "nnc-fuzz: seed " << S << " at -O" << Levels[I] << ": "
                  << Failure << "\n";
        Show();
        return 1;
      }
    }
    ++N;
  }
  std::cout << "nnc-fuzz: " << N << " kernels, 0 mismatches";
  if (Transforms)
    std::cout << " (" << NumTransforms << " loop transforms applied)";
  std::cout << "\n";
  return 0;
}
