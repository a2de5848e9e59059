//===- ConvTiming.cpp - Time a convolution generated and through oneDNN ---===//
//
// --conv=auto (docs/Passes.md, generate-convs): the compiler times each
// convolution that generate-convs covers both ways before it decides. The
// call is compiled alone, in a kernel of its own whose parameters are its
// views (a symbolic size taken as 1), once with --conv=generated and once
// with --conv=onednn, at the compile's thread count and target, and the two
// run in interleaved rounds on pseudo-random data. Each shape is timed once
// per process.
//
//===----------------------------------------------------------------------===//
#include "ConvTiming.h"

#include "nnc/IR/Printer.h"

#include <chrono>
#include <map>
#include <mutex>

namespace nnc {

namespace {

constexpr unsigned kWarmUpRounds = 2, kTimedRounds = 5;

/// The view's sizes and strides with every symbol taken as 1.
std::optional<std::pair<std::vector<int64_t>, std::vector<int64_t>>>
evaluated(const BufferView &V) {
  std::string Why;
  auto One = [](const std::string &) -> std::optional<int64_t> { return 1; };
  std::vector<int64_t> Sizes, Strides;
  for (size_t D = 0; D < V.Sizes.size(); ++D) {
    auto S = evaluateSize(V.Sizes[D], One, Why);
    auto St = evaluateSize(V.Strides[D], One, Why);
    if (!S || !St)
      return std::nullopt;
    Sizes.push_back(*S);
    Strides.push_back(*St);
  }
  return std::make_pair(Sizes, Strides);
}

/// The call alone in a kernel whose parameters are the buffers it uses,
/// each declared as the call views it; nothing if a size is not known or
/// one buffer is seen through two different views.
std::optional<Kernel> standalone(const ExternalCall &Call) {
  struct Use {
    std::vector<int64_t> Sizes, Strides;
    BufferRole Role;
    Buffer New;
  };
  std::vector<const BufferNode *> Order; // First use first.
  std::map<const BufferNode *, Use> Uses;
  auto Note = [&](const BufferView &V, BufferRole Role) {
    auto E = evaluated(V);
    if (!E)
      return false;
    auto [It, Fresh] =
        Uses.try_emplace(V.Buf.get(), Use{E->first, E->second, Role, {}});
    if (Fresh) {
      Order.push_back(V.Buf.get());
      return true;
    }
    if (It->second.Role != Role)
      It->second.Role = BufferRole::InOut; // The add operand is the output.
    return It->second.Sizes == E->first && It->second.Strides == E->second;
  };
  bool Ok = true;
  for (const BufferView &A : Call.Args)
    Ok &= Note(A, BufferRole::In);
  for (const PostOp &P : Call.PostOps)
    if (P.Other)
      Ok &= Note(*P.Other, BufferRole::In);
  Ok &= Note(Call.Out, BufferRole::Out);
  if (!Ok)
    return std::nullopt;
  auto Consts = [](const std::vector<int64_t> &Vs) {
    std::vector<Expr> R;
    for (int64_t V : Vs)
      R.push_back(IntImm::make(DType::I64, V));
    return R;
  };
  Kernel K;
  K.Name = "conv";
  for (const BufferNode *Old : Order) {
    Use &U = Uses[Old];
    U.New = BufferNode::make(Old->Name, Old->Type, Consts(U.Sizes), U.Role,
                             LayoutKind::Explicit, Consts(U.Strides));
    K.Params.push_back({Old->Name, Old->Type, U.New, {}});
  }
  auto Remap = [&](BufferView V) {
    V.Buf = Uses[V.Buf.get()].New;
    V.Explicit = true;
    V.Sizes = V.Buf->Dims;
    V.Strides = V.Buf->Strides;
    return V;
  };
  std::vector<BufferView> Args;
  for (const BufferView &A : Call.Args)
    Args.push_back(Remap(A));
  std::vector<PostOp> Posts = Call.PostOps;
  for (PostOp &P : Posts)
    if (P.Other)
      P.Other = Remap(*P.Other);
  K.Body = Block::make({ExternalCall::make(Remap(Call.Out), Call.Func, Args,
                                           Call.ScalarArgs, false, {}, Posts)});
  return K;
}

} // namespace

std::optional<ConvTimes> timeConvolution(const ExternalCall &Call,
                                         const CompileOptions &Opts) {
  auto K = standalone(Call);
  if (!K)
    return std::nullopt;
  // The kernel's options, for the default pipeline and without the
  // observers of the kernel's own compile.
  CompileOptions O = Opts;
  O.Passes.reset();
  O.Remarks.clear();
  O.PrintAfter.clear();
  O.PrintAfterAll = false;
  O.OnPrint = nullptr;
  O.OnDiagnostic = nullptr;
  O.TimeConv = nullptr;
  O.CacheDir.clear();
  std::string Key = toString(K->Body) + "|" + cacheKeyOptions(O) + "|" +
                    std::to_string(O.Threads);
  static std::mutex Mu;
  static std::map<std::string, ConvTimes> Timed;
  {
    std::lock_guard<std::mutex> Lock(Mu);
    auto It = Timed.find(Key);
    if (It != Timed.end())
      return It->second;
  }
  // The arguments: each buffer's span, pseudo-random in [-1, 1).
  std::vector<std::vector<float>> Data;
  std::vector<Arg> Args;
  uint64_t State = 0x9E3779B97F4A7C15ull;
  for (const Param &P : K->Params) {
    int64_t Span = 1;
    llvm::SmallVector<int64_t, 4> Shape, Strides;
    for (size_t D = 0; D < P.Buf->Dims.size(); ++D) {
      int64_t S = *getConstInt(P.Buf->Dims[D]),
              St = *getConstInt(P.Buf->Strides[D]);
      Shape.push_back(S);
      Strides.push_back(St);
      Span += (S - 1) * St;
    }
    Data.emplace_back(std::max<int64_t>(Span, 1));
    for (float &V : Data.back()) {
      State = State * 6364136223846793005ull + 1442695040888963407ull;
      V = static_cast<float>(State >> 40) / float(1 << 23) - 1.f;
    }
    Args.push_back(BufferArg::of(Data.back().data(), Shape, Strides));
  }
  ConvTimes T;
  std::vector<BoundCall> Calls;
  for (ConvImpl Impl : {ConvImpl::Generated, ConvImpl::OneDNN}) {
    O.Conv = Impl;
    auto F = Compiler(O).compile(*K);
    if (!F) {
      llvm::consumeError(F.takeError());
      return std::nullopt;
    }
    auto B = F->bind(Args);
    if (!B) {
      llvm::consumeError(B.takeError());
      return std::nullopt;
    }
    Calls.push_back(std::move(*B));
  }
  double Best[2] = {1e30, 1e30};
  for (unsigned R = 0; R < kWarmUpRounds + kTimedRounds; ++R)
    for (size_t I = 0; I < 2; ++I) {
      auto T0 = std::chrono::steady_clock::now();
      if (Calls[I].runRaw())
        return std::nullopt;
      double Ms = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - T0)
                      .count();
      if (R >= kWarmUpRounds)
        Best[I] = std::min(Best[I], Ms);
    }
  T.GeneratedMs = Best[0];
  T.OneDNNMs = Best[1];
  std::lock_guard<std::mutex> Lock(Mu);
  Timed.emplace(Key, T);
  return T;
}

} // namespace nnc
