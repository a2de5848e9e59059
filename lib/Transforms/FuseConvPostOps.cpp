//===- FuseConvPostOps.cpp - Fold elementwise loops into convolutions -----===//
//
// Pass `fuse-conv-post-ops`. Runs on verified IR, before parallelize.
//
// A top-level loop nest right after a convolution ExternalCall that reads the
// convolution's output C element by element, at the same offsets it stores
// to, and applies a chain of supported operations to it (relu, leaky relu,
// clamp/hardtanh/relu6, sigmoid, tanh, GELU in the erf and tanh forms, SiLU,
// hardswish, the addition of another tensor of the output's shape) is folded
// into the call as oneDNN post-ops; the loop disappears. The call then writes
// the loop's destination Y directly.
//
// It fires only when the result is unchanged: the nest covers exactly the
// convolution's output, elementwise (the loops' strides are the output's);
// Y, and any added tensor, have the output's shape and layout; and C is used
// nowhere else afterwards (or C is Y, updated in place), so no one can see
// that C no longer holds the raw convolution. C's Allocate and Free go when
// it is no longer used. `--remarks=fuse-conv-post-ops` says why a candidate
// was not fused.
//
// Before:
//   t(dtype=float, sizes=[...], strides=[...]) = nnc_aten_conv2d(buf_args={x, w, b}, args={...})
//   for (int64_t i = 0ll; i < 4096ll; i++) {
//     y[i] = (t[i]) + (r[i])<0.f ? 0.f : (t[i]) + (r[i]);
//   }
// After:
//   y(dtype=float, sizes=[...], strides=[...]) = nnc_aten_conv2d(buf_args={x, w, b}, args={...}, post_ops={add(r(...)), relu})
//
//===----------------------------------------------------------------------===//
#include "nnc/IR/Equality.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/IR/Printer.h"
#include "nnc/Transforms/Passes.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

namespace nnc {

namespace {

/// " at line N", or nothing for IR built in code (no location).
std::string atLine(SourceLoc L) {
  return L.isValid() ? " at line " + std::to_string(L.Line) : std::string();
}


std::optional<double> floatConst(const Expr &E) {
  if (auto *F = dyn_cast<FloatImm>(E))
    return F->Value;
  return std::nullopt;
}

bool isConst(const Expr &E, double V) {
  auto C = floatConst(E);
  return C && std::fabs(*C - V) <= 1e-6 * std::max(1.0, std::fabs(V));
}

/// The factors of a product (a * b * c in any association).
void factors(const Expr &E, std::vector<Expr> &Out) {
  if (auto *B = dyn_cast<Binary>(E); B && B->Op == BinOp::Mul) {
    factors(B->A, Out);
    factors(B->B, Out);
    return;
  }
  Out.push_back(E);
}

/// Recognizes post-op chains applied to the convolution's element.
class Matcher {
public:
  Matcher(Expr Base, std::vector<Expr> Index, const Buffer &C)
      : Base(std::move(Base)), Index(std::move(Index)), C(C) {}

  /// The post-ops that turn the base element into E, innermost first.
  std::optional<std::vector<PostOp>> match(const Expr &E, unsigned Depth = 0) {
    if (Depth > 16)
      return std::nullopt;
    if (equal(E, Base))
      return std::vector<PostOp>{};
    auto With = [&](const Expr &Inner, PostOp P)
        -> std::optional<std::vector<PostOp>> {
      auto Chain = match(Inner, Depth + 1);
      if (!Chain)
        return std::nullopt;
      Chain->push_back(std::move(P));
      return Chain;
    };
    PostOp P;
    if (auto *S = dyn_cast<CompareSelect>(E)) {
      // relu: a<0 ? 0 : a;  a>0 ? a : 0;  leaky: a<0 ? a*c : a.
      if (S->Op == CmpOp::LT && isConst(S->B, 0) && equal(S->A, S->F)) {
        if (isConst(S->T, 0))
          return With(S->A, PostOp{PostOpKind::Relu, 0, 0, {}});
        std::vector<Expr> F;
        factors(S->T, F);
        if (F.size() == 2)
          for (int K = 0; K < 2; ++K)
            if (equal(F[K], S->A) && floatConst(F[1 - K]))
              return With(S->A, PostOp{PostOpKind::LeakyRelu,
                                       *floatConst(F[1 - K]), 0, {}});
      }
      if (S->Op == CmpOp::GT && isConst(S->B, 0) && equal(S->A, S->T) &&
          isConst(S->F, 0))
        return With(S->A, PostOp{PostOpKind::Relu, 0, 0, {}});
      // clamp as NNC prints hardtanh: (a<lo ? lo : a)>hi ? hi : (same).
      if (S->Op == CmpOp::GT && equal(S->A, S->F) && equal(S->B, S->T) &&
          floatConst(S->B)) {
        if (auto *In = dyn_cast<CompareSelect>(S->A);
            In && In->Op == CmpOp::LT && equal(In->B, In->T) &&
            equal(In->A, In->F) && floatConst(In->B))
          return With(In->A, PostOp{PostOpKind::Clamp, *floatConst(In->B),
                                    *floatConst(S->B), {}});
      }
      return std::nullopt;
    }
    if (auto *B = dyn_cast<Binary>(E)) {
      if (B->Op == BinOp::Max || B->Op == BinOp::Min) {
        // relu: Max(a, 0); clamp: Min(Max(a, lo), hi) or Max(Min(a, hi), lo).
        for (int K = 0; K < 2; ++K) {
          const Expr &X = K ? B->B : B->A, &Y = K ? B->A : B->B;
          auto C0 = floatConst(Y);
          if (!C0)
            continue;
          if (B->Op == BinOp::Max && *C0 == 0) {
            if (auto *In = dyn_cast<Binary>(X); In && In->Op == BinOp::Min) {
              for (int J = 0; J < 2; ++J)
                if (auto Hi = floatConst(J ? In->A : In->B))
                  return With(J ? In->B : In->A,
                              PostOp{PostOpKind::Clamp, 0, *Hi, {}});
            }
            return With(X, PostOp{PostOpKind::Relu, 0, 0, {}});
          }
          auto *In = dyn_cast<Binary>(X);
          BinOp Want = B->Op == BinOp::Min ? BinOp::Max : BinOp::Min;
          if (In && In->Op == Want)
            for (int J = 0; J < 2; ++J)
              if (auto C1 = floatConst(J ? In->A : In->B)) {
                double Lo = B->Op == BinOp::Min ? *C1 : *C0;
                double Hi = B->Op == BinOp::Min ? *C0 : *C1;
                return With(J ? In->B : In->A,
                            PostOp{PostOpKind::Clamp, Lo, Hi, {}});
              }
        }
        return std::nullopt;
      }
      if (B->Op == BinOp::Add) {
        for (int K = 0; K < 2; ++K) {
          const Expr &X = K ? B->B : B->A, &Z = K ? B->A : B->B;
          if (auto *L = dyn_cast<Load>(Z);
              L && L->Buf != C && L->Buf->Type == DType::F32 &&
              sameIndices(L->Indices, Index)) {
            PostOp P{PostOpKind::Add, 0, 0, BufferView::of(L->Buf, L->Loc)};
            if (auto R = With(X, P))
              return R;
          }
        }
        return std::nullopt;
      }
      if (B->Op == BinOp::Div) {
        // sigmoid: 1 / (1 + exp(0 - a)); silu: a / (1 + exp(0 - a));
        // hardswish: a * Min(Max(a + 3, 0), 6) / 6.
        if (auto A = sigmoidArg(B->B)) {
          if (isConst(B->A, 1))
            return With(*A, PostOp{PostOpKind::Sigmoid, 0, 0, {}});
          if (equal(B->A, *A))
            return With(*A, PostOp{PostOpKind::Silu, 0, 0, {}});
        }
        if (isConst(B->B, 6))
          if (auto A = hardswishArg(B->A))
            return With(*A, PostOp{PostOpKind::Hardswish, 0, 0, {}});
        return std::nullopt;
      }
      if (B->Op == BinOp::Mul)
        return matchProduct(E, Depth);
      return std::nullopt;
    }
    if (auto *I = dyn_cast<Intrinsic>(E)) {
      if (I->Op == IntrinsicOp::Sigmoid)
        return With(I->Args[0], PostOp{PostOpKind::Sigmoid, 0, 0, {}});
      if (I->Op == IntrinsicOp::Tanh)
        return With(I->Args[0], PostOp{PostOpKind::Tanh, 0, 0, {}});
    }
    return std::nullopt;
  }

private:
  static bool sameIndices(const std::vector<Expr> &A,
                          const std::vector<Expr> &B) {
    return A.size() == B.size() &&
           std::equal(A.begin(), A.end(), B.begin(),
                      [](const Expr &X, const Expr &Y) { return equal(X, Y); });
  }

  /// x in `1 + exp(0 - x)` / `1 + exp(-x)` (either order of the sum).
  static std::optional<Expr> sigmoidArg(const Expr &E) {
    auto *Add = dyn_cast<Binary>(E);
    if (!Add || Add->Op != BinOp::Add)
      return std::nullopt;
    for (int K = 0; K < 2; ++K) {
      if (!isConst(K ? Add->B : Add->A, 1))
        continue;
      auto *Ex = dyn_cast<Intrinsic>(K ? Add->A : Add->B);
      if (!Ex || Ex->Op != IntrinsicOp::Exp)
        continue;
      const Expr &Arg = Ex->Args[0];
      if (auto *N = dyn_cast<Neg>(Arg))
        return N->A;
      if (auto *S = dyn_cast<Binary>(Arg); S && S->Op == BinOp::Sub &&
                                           isConst(S->A, 0))
        return S->B;
    }
    return std::nullopt;
  }

  /// x in `x * Min(Max(x + 3, 0), 6)` (the numerator of hardswish).
  static std::optional<Expr> hardswishArg(const Expr &E) {
    std::vector<Expr> F;
    factors(E, F);
    if (F.size() != 2)
      return std::nullopt;
    for (int K = 0; K < 2; ++K) {
      auto *Mn = dyn_cast<Binary>(F[1 - K]);
      if (!Mn || Mn->Op != BinOp::Min || !isConst(Mn->B, 6))
        continue;
      auto *Mx = dyn_cast<Binary>(Mn->A);
      if (!Mx || Mx->Op != BinOp::Max || !isConst(Mx->B, 0))
        continue;
      auto *P3 = dyn_cast<Binary>(Mx->A);
      if (P3 && P3->Op == BinOp::Add && isConst(P3->B, 3) &&
          equal(P3->A, F[K]))
        return F[K];
    }
    return std::nullopt;
  }

  /// Products: silu a * sigmoid(a); GELU (erf) a * 0.5 * (1 + erf(a * c));
  /// GELU (tanh) 0.5 * a * (1 + tanh(c1 * (a + c2 * a * a * a))).
  std::optional<std::vector<PostOp>> matchProduct(const Expr &E,
                                                  unsigned Depth) {
    std::vector<Expr> F;
    factors(E, F);
    auto Rest = [&](std::vector<size_t> Used) -> std::optional<Expr> {
      std::optional<Expr> Only;
      for (size_t I = 0; I < F.size(); ++I) {
        if (std::find(Used.begin(), Used.end(), I) != Used.end())
          continue;
        if (Only)
          return std::nullopt;
        Only = F[I];
      }
      return Only;
    };
    auto Chain = [&](const Expr &A, PostOpKind K)
        -> std::optional<std::vector<PostOp>> {
      auto C = match(A, Depth + 1);
      if (C)
        C->push_back(PostOp{K, 0, 0, {}});
      return C;
    };
    for (size_t I = 0; I < F.size(); ++I) {
      // silu: a * sigmoid(a).
      if (auto *S = dyn_cast<Intrinsic>(F[I]); S && S->Op == IntrinsicOp::Sigmoid)
        if (auto A = Rest({I}); A && equal(*A, S->Args[0]))
          return Chain(*A, PostOpKind::Silu);
      // GELU: 0.5 * a * (1 + erf(a * c)) or (1 + tanh(...)).
      auto *Sum = dyn_cast<Binary>(F[I]);
      if (!Sum || Sum->Op != BinOp::Add || !isConst(Sum->A, 1))
        continue;
      auto *Fn = dyn_cast<Intrinsic>(Sum->B);
      if (!Fn)
        continue;
      for (size_t H = 0; H < F.size(); ++H) {
        if (H == I || !isConst(F[H], 0.5))
          continue;
        auto A = Rest({I, H});
        if (!A)
          continue;
        std::vector<Expr> In;
        factors(Fn->Args[0], In);
        if (Fn->Op == IntrinsicOp::Erf && In.size() == 2) {
          for (int K = 0; K < 2; ++K)
            if (equal(In[K], *A) && isConst(In[1 - K], 0.70710678118654752))
              return Chain(*A, PostOpKind::GeluErf);
        }
        if (Fn->Op == IntrinsicOp::Tanh && In.size() == 2) {
          for (int K = 0; K < 2; ++K) {
            if (!isConst(In[K], 0.7978845608028654))
              continue;
            auto *Inner = dyn_cast<Binary>(In[1 - K]);
            if (!Inner || Inner->Op != BinOp::Add ||
                !equal(Inner->A, *A))
              continue;
            std::vector<Expr> Cube;
            factors(Inner->B, Cube);
            size_t As = 0;
            bool C2 = false;
            for (const Expr &X : Cube) {
              As += equal(X, *A);
              C2 |= isConst(X, 0.044715);
            }
            if (Cube.size() == 4 && As == 3 && C2)
              return Chain(*A, PostOpKind::GeluTanh);
          }
        }
      }
    }
    return std::nullopt;
  }

  Expr Base;
  std::vector<Expr> Index;
  const Buffer &C;
};

/// (stride, size) pairs sorted by stride, with dense runs merged, so that a
/// flat loop over a contiguous range equals any layout that covers it.
std::vector<std::pair<int64_t, int64_t>>
normalize(std::vector<std::pair<int64_t, int64_t>> V) {
  V.erase(std::remove_if(V.begin(), V.end(),
                         [](auto &P) { return P.second == 1; }),
          V.end());
  std::sort(V.begin(), V.end());
  std::vector<std::pair<int64_t, int64_t>> Out;
  for (auto P : V) {
    if (!Out.empty() && Out.back().first * Out.back().second == P.first)
      Out.back().second *= P.second;
    else
      Out.push_back(P);
  }
  return Out;
}

/// The (stride, extent) pairs of a loop nest or a buffer's dims: those of
/// constant extent apart, as normalize compares them, from the symbolic
/// ones.
struct Extents {
  std::vector<std::pair<int64_t, int64_t>> Constant;
  std::vector<std::pair<int64_t, Expr>> Symbolic;

  void add(int64_t Stride, const Expr &Extent) {
    if (auto N = evaluateConstant(Extent))
      Constant.push_back({Stride, *N});
    else
      Symbolic.push_back({Stride, Extent});
  }

  bool same(const Extents &O) const {
    if (normalize(Constant) != normalize(O.Constant) ||
        Symbolic.size() != O.Symbolic.size())
      return false;
    std::vector<bool> Taken(O.Symbolic.size());
    for (auto &[Stride, Extent] : Symbolic) {
      size_t J = 0;
      while (J < O.Symbolic.size() &&
             (Taken[J] || O.Symbolic[J].first != Stride ||
              !equal(O.Symbolic[J].second, Extent)))
        ++J;
      if (J == O.Symbolic.size())
        return false;
      Taken[J] = true;
    }
    return true;
  }
};

/// Coefficients of loop variables in an integer index (constant only).
std::optional<std::map<std::string, int64_t>>
linearIndex(const Expr &E, int64_t &Const) {
  std::map<std::string, int64_t> Coef;
  std::function<bool(const Expr &, int64_t)> Walk = [&](const Expr &X,
                                                        int64_t Scale) {
    if (auto C = evaluateConstant(X)) {
      Const += Scale * *C;
      return true;
    }
    if (auto *V = dyn_cast<Var>(X)) {
      Coef[V->Name] += Scale;
      return true;
    }
    auto *B = dyn_cast<Binary>(X);
    if (!B)
      return false;
    if (B->Op == BinOp::Add)
      return Walk(B->A, Scale) && Walk(B->B, Scale);
    if (B->Op == BinOp::Sub)
      return Walk(B->A, Scale) && Walk(B->B, -Scale);
    if (B->Op == BinOp::Mul) {
      if (auto C = evaluateConstant(B->A))
        return Walk(B->B, Scale * *C);
      if (auto C = evaluateConstant(B->B))
        return Walk(B->A, Scale * *C);
    }
    return false;
  };
  Const = 0;
  if (!Walk(E, 1))
    return std::nullopt;
  return Coef;
}

class Fuser {
public:
  Fuser(Kernel &K, PassDiagnostics &D) : K(K), Diags(D) {}

  void run() {
    auto *Body = dyn_cast<Block>(K.Body);
    if (!Body)
      return;
    std::vector<Stmt> S = Body->Stmts;
    bool Changed = false;
    for (size_t I = 0; I + 1 < S.size(); ++I) {
      auto *Call = dyn_cast<ExternalCall>(S[I]);
      auto *Loop = dyn_cast<For>(S[I + 1]);
      if (!Call || !Loop || Call->Func != "nnc_aten_conv2d")
        continue;
      std::string Why;
      Stmt Fused = tryFuse(*Call, *Loop, S, I, Why);
      if (!Fused) {
        Diags.remark(Loop->Loc, "loop '" + Loop->Var +
                              "' not fused into the convolution" +
                              atLine(Call->Loc) + ": " + Why);
        continue;
      }
      Diags.remark(Loop->Loc, "loop '" + Loop->Var +
                            "' fused into the convolution" +
                            atLine(Call->Loc));
      Buffer C = Call->Out.Buf;
      S[I] = Fused;
      S.erase(S.begin() + I + 1);
      if (C != cast<ExternalCall>(Fused)->Out.Buf && C->isTemp())
        dropTemp(S, C);
      Changed = true;
      --I; // The fused call may take the next loop too.
    }
    if (Changed)
      K.Body = Block::make(std::move(S), Body->Loc);
  }

private:

  /// Removes the Allocate and Free of a temporary nothing uses any more.
  static void dropTemp(std::vector<Stmt> &S, const Buffer &C) {
    std::vector<Stmt> Out;
    for (const Stmt &X : S) {
      if (auto *A = dyn_cast<Allocate>(X); A && A->Buf == C)
        continue;
      if (auto *F = dyn_cast<Free>(X); F && F->Buf == C)
        continue;
      if (auto *F = dyn_cast<FreeExt>(X)) {
        std::vector<Buffer> Keep;
        for (const Buffer &B : F->Bufs)
          if (B != C)
            Keep.push_back(B);
        if (Keep.size() != F->Bufs.size()) {
          Out.push_back(FreeExt::make(Keep, F->Loc));
          continue;
        }
      }
      Out.push_back(X);
    }
    S = std::move(Out);
  }

  Stmt tryFuse(const ExternalCall &Call, const For &Loop,
               const std::vector<Stmt> &S, size_t At, std::string &Why) {
    const Buffer &C = Call.Out.Buf;
    // The output's sizes may be symbolic (a batch of any size), its
    // strides not.
    const std::vector<Expr> &Sizes = Call.Out.Sizes;
    std::vector<int64_t> Strides;
    for (const Expr &E : Call.Out.Strides) {
      auto St = evaluateConstant(E);
      if (!St) {
        Why = "the convolution's output has symbolic strides";
        return nullptr;
      }
      Strides.push_back(*St);
    }
    // A perfect nest of loops from 0 around one store.
    std::vector<std::pair<std::string, Expr>> Loops;
    const For *L = &Loop;
    const Store *St = nullptr;
    while (true) {
      auto Start = getConstInt(L->Start);
      if (!Start || *Start != 0) {
        Why = "the loops do not run from 0";
        return nullptr;
      }
      Loops.push_back({L->Var, L->Stop});
      auto *B = cast<Block>(L->Body);
      if (B->Stmts.size() != 1) {
        Why = "the loop body is not a single statement";
        return nullptr;
      }
      if (auto *Next = dyn_cast<For>(B->Stmts[0])) {
        L = Next;
        continue;
      }
      St = dyn_cast<Store>(B->Stmts[0]);
      break;
    }
    if (!St || St->Buf->Type != DType::F32) {
      Why = "the innermost statement is not a store of f32 values";
      return nullptr;
    }
    const Buffer &Y = St->Buf;
    // The store's offsets are exactly the output's: same loops, same strides.
    std::optional<std::vector<Expr>> FlatIdx;
    int64_t Const = 0;
    std::optional<std::map<std::string, int64_t>> Coef;
    if (St->Indices.size() == 1 && Y->rank() != 1) {
      Coef = linearIndex(St->Indices[0], Const);
    } else if (St->Indices.size() == Y->rank()) {
      Coef.emplace();
      for (size_t D = 0; D < St->Indices.size() && Coef; ++D) {
        int64_t C0 = 0;
        auto Stride = evaluateConstant(Y->Strides[D]);
        auto CD = linearIndex(St->Indices[D], C0);
        if (!CD || !Stride) {
          Coef.reset();
          break;
        }
        for (auto &[V, X] : *CD)
          (*Coef)[V] += X * *Stride;
        Const += C0 * *Stride;
      }
    }
    if (!Coef || Const != 0) {
      Why = "the store's index is not a linear function of the loops";
      return nullptr;
    }
    // The (stride, trip) of the loops and the (stride, size) of the output
    // dims must be the same: those of constant sizes up to merged dense
    // runs (normalize), the symbolic ones one for one, by equal
    // expressions.
    Extents Iter, Out;
    for (auto &[V, Trip] : Loops) {
      auto It = Coef->find(V);
      if (It == Coef->end()) {
        Why = "loop '" + V + "' does not move the store";
        return nullptr;
      }
      Iter.add(It->second, Trip);
    }
    for (size_t D = 0; D < Sizes.size(); ++D)
      Out.add(Strides[D], Sizes[D]);
    if (!Iter.same(Out)) {
      Why = "the loops do not cover the convolution's output elementwise";
      return nullptr;
    }
    if (!sameValues(Y->Dims, Sizes) &&
        !(Y == C && Call.Out.Sizes.size() == Sizes.size())) {
      Why = "'" + Y->Name + "' does not have the output's shape";
      return nullptr;
    }
    // With one index per dimension, the same indices name the same logical
    // element in C and Y: their strides must agree too. (A flat index is a
    // storage offset in both.)
    bool PerDim = !(St->Indices.size() == 1 && Y->rank() != 1);
    auto SameLayout = [&](const Buffer &B) {
      for (size_t D = 0; D < B->Strides.size(); ++D)
        if (evaluateConstant(B->Strides[D]) != Strides[D])
          return false;
      return true;
    };
    if (PerDim && Y != C && !SameLayout(Y)) {
      Why = "'" + Y->Name + "' does not have the output's layout";
      return nullptr;
    }
    // The stored value: a post-op chain applied to C at the same index.
    Matcher M(Load::make(C, St->Indices), St->Indices, C);
    auto Posts = M.match(St->Value);
    if (!Posts || Posts->empty()) {
      Why = Posts ? "the loop only copies the output"
                  : "the computation is not a supported post-op chain";
      return nullptr;
    }
    for (PostOp &P : *Posts)
      if (P.Other) {
        if (!sameValues(P.Other->Buf->Dims, Sizes) ||
            (PerDim && !SameLayout(P.Other->Buf))) {
          Why = "'" + P.Other->Buf->Name +
                "' does not have the output's shape and layout";
          return nullptr;
        }
        P.Other = makeView(P.Other->Buf, Call.Out, P.Other->Loc);
      }
    // Nothing else may see C without its post-ops.
    if (Y != C) {
      if (!C->isTemp()) {
        Why = "the convolution's output '" + C->Name +
              "' is a kernel output and would lose its value";
        return nullptr;
      }
      for (size_t I = At + 2; I < S.size(); ++I)
        if (!isa<Free>(S[I]) && !isa<FreeExt>(S[I]) && usesBuffer(S[I], C)) {
          Why = "the convolution's output '" + C->Name +
                "' is used again" + atLine(S[I]->Loc);
          return nullptr;
        }
    }
    std::vector<PostOp> All = Call.PostOps;
    All.insert(All.end(), Posts->begin(), Posts->end());
    BufferView OutView = Y == C ? Call.Out : makeView(Y, Call.Out, St->Loc);
    return ExternalCall::make(OutView, Call.Func, Call.Args, Call.ScalarArgs,
                              Y == C && Call.DeclaresOut, Call.Loc,
                              std::move(All));
  }

  /// B described with the convolution output's sizes and strides.
  static BufferView makeView(const Buffer &B, const BufferView &Like,
                             SourceLoc L) {
    BufferView V = Like;
    V.Buf = B;
    V.Explicit = true;
    V.Type = DType::F32;
    V.Loc = L;
    return V;
  }

  Kernel &K;
  PassDiagnostics &Diags;
};

} // namespace

bool fuseConvPostOps(Kernel &K, const PassOptions &,
                     PassDiagnostics &Diags) {
  Fuser(K, Diags).run();
  return true;
}

} // namespace nnc
