//===- OneDNNMatmul.cpp - nnc_aten_matmul on oneDNN -----------------------===//
//
// A matmul of 2-D or batched 3-D tensors, on the buffers' own strides; one
// primitive per shape, strides and thread count, kept in the primitive cache.
//
// Constant weights (a 2-D right operand the call marks constant, as the
// lowering's linear layers are) may be kept in another layout, made once:
// dense rows, where the buffer's are not (a linear layer's [N, K] weight
// comes as its transposed view, so that the model's copy is the only one
// unless a layout of the runtime's is faster), rows padded by 64 bytes
// (oneDNN 2.6's AVX2 sgemm packs a [768, 3072] weight, whose rows are 12 KiB
// apart and so fall in one L1 set, at half its speed: 4.8 against 2.8 ms for
// [128, 768] @ [768, 3072] on a Zen 5), or the layout oneDNN prefers for it
// (format_tag::any; its AVX-512 brgemm's blocked weights). Which is fastest
// depends on the CPU and the shape (padding slows AVX-512's brgemm at 128
// rows and speeds it at 1024),
// so it is timed on the first call of each shape, on the call's data, and
// kept for the shape; the weights in it are kept by their identity, as
// convolutions' are.
//
// A kernel of symbolic sizes calls one weight with a new number of rows at
// each new size (a batch, a sequence), and says so (args={1, 1}: the rows
// vary). Creating a primitive takes 0.2-0.35 ms (oneDNN 2.6's brgemm, Zen
// 4), 4-5 ms for the 16 linear layers of a small encoder: a request of a
// new size would wait that long. So the rows of the first call get their
// own primitive, as above, and every other number of rows one primitive of
// any number of rows (oneDNN's runtime dims, its gemm: 0.8-1.1x the
// brgemm's time), made at the first too; where the rows or the result are not
// dense, each shape gets its own, and a constant weight takes the layout
// timed at its first shape without timing again, the weights laid out so
// shared by every shape that wants that layout.
//
//===----------------------------------------------------------------------===//
#include "OneDNNCommon.h"
#include "nnc/Runtime/Runtime.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <memory>
#include <new>
#include <omp.h>
#include <sstream>

namespace nnc::onednn {

using namespace detail;

namespace {

struct MatmulEntry {
  dnnl::matmul Prim;
  memory::desc A, B, C, Scratch;
  std::string Impl;
  /// The constant right operand in the entry's layout (padded or oneDNN's),
  /// or null: the call's own buffer. Shared by the entries of other sizes
  /// of the same weights in the same layout (sharedWeights).
  std::shared_ptr<float> Weights;
  size_t WeightBytes = 0;
  /// What Weights takes (PrimitiveCache's budget).
  size_t bytes() const { return WeightBytes; }
};

/// Never destroyed (PrimitiveCache).
PrimitiveCache<MatmulEntry> &matmulCache() {
  static auto *Cache = new PrimitiveCache<MatmulEntry>;
  return *Cache;
}

/// The layout chosen for constant weights of each shape (without their
/// identity), so that each shape is timed once; and for each weights (their
/// identity, shape and the thread count), the layout timed at their first
/// shape, which their other shapes take.
std::map<std::string, MatmulWeights> &chosenLocked() {
  static std::map<std::string, MatmulWeights> Chosen;
  return Chosen;
}

const char *layoutName(MatmulWeights W) {
  switch (W) {
  case MatmulWeights::Dense:
    return "dense rows";
  case MatmulWeights::Padded:
    return "rows padded by 64 bytes";
  case MatmulWeights::OneDNN:
    return "oneDNN's layout";
  default:
    return "the buffer's";
  }
}

/// A primitive for Out = A @ B with B in layout W; null where W is not one
/// for B (dense rows or padding for a 3-D operand, dense rows where the
/// buffer has them, oneDNN's layout where it is the buffer's).
std::shared_ptr<MatmulEntry> makeMatmul(const Tensor &Out, const Tensor &A,
                                        const Tensor &B, MatmulWeights W) {
  auto E = std::make_shared<MatmulEntry>();
  E->A = descOf(A);
  E->B = descOf(B);
  E->C = descOf(Out);
  memory::desc Want = E->B;
  int64_t K = B.Sizes[0], N = B.Sizes.back();
  if (W == MatmulWeights::Dense) {
    if (B.Sizes.size() != 2 || (B.Strides[1] == 1 && B.Strides[0] == N))
      return nullptr;
    Want = memory::desc({K, N}, memory::data_type::f32, {N, 1});
  } else if (W == MatmulWeights::Padded) {
    if (B.Sizes.size() != 2)
      return nullptr;
    Want = memory::desc({K, N}, memory::data_type::f32, {N + 16, 1});
  } else if (W == MatmulWeights::OneDNN) {
    Want = memory::desc(E->B.dims(), memory::data_type::f32,
                        memory::format_tag::any);
  }
  dnnl::primitive_attr Attr;
  Attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::matmul::primitive_desc PD(dnnl::matmul::desc(E->A, Want, E->C), Attr,
                                  engine());
  if (W == MatmulWeights::OneDNN && PD.weights_desc() == E->B)
    return nullptr;
  E->Prim = dnnl::matmul(PD);
  E->Scratch = PD.scratchpad_desc();
  E->Impl = PD.impl_info_str();
  if (W != MatmulWeights::Plain) {
    memory::desc Layout = PD.weights_desc();
    E->Weights = sharedWeights(B, Layout, E->WeightBytes, [&](memory &To) {
      memory Src(E->B, engine(), B.Data);
      thread_local dnnl::stream S(engine());
      dnnl::reorder(Src, To).execute(S, Src, To);
      S.wait();
    });
    E->B = Layout;
  }
  return E;
}

void runMatmul(MatmulEntry &E, const Tensor &Out, const Tensor &A,
               const Tensor &B) {
  std::unordered_map<int, memory> Args = {
      {DNNL_ARG_SRC, memory(E.A, engine(), A.Data)},
      {DNNL_ARG_WEIGHTS,
       memory(E.B, engine(), E.Weights ? E.Weights.get() : B.Data)},
      {DNNL_ARG_DST, memory(E.C, engine(), Out.Data)}};
  runWith(E.Prim, Args, E.Scratch);
}

/// Whether T is [rows, n] with dense rows.
bool denseRows(const Tensor &T) {
  return T.Sizes.size() == 2 && !T.Blocked && T.Strides[1] == 1 &&
         T.Strides[0] == T.Sizes[1];
}

/// Out = A @ B for any number of rows of A (dense rows, as Out's), on one
/// primitive of B's (runtime rows), made at the first call.
void matmulAnyRows(const std::string &Key, const Tensor &Out, const Tensor &A,
                   const Tensor &B) {
  std::shared_ptr<MatmulEntry> E = matmulCache().find(Key);
  int64_t K = A.Sizes[1], N = Out.Sizes[1];
  if (!E) {
    E = std::make_shared<MatmulEntry>();
    E->B = descOf(B);
    memory::desc AnyA({DNNL_RUNTIME_DIM_VAL, K}, memory::data_type::f32, {K, 1});
    memory::desc AnyC({DNNL_RUNTIME_DIM_VAL, N}, memory::data_type::f32, {N, 1});
    dnnl::matmul::primitive_desc PD(dnnl::matmul::desc(AnyA, E->B, AnyC),
                                    engine());
    E->Prim = dnnl::matmul(PD);
    E->Impl = PD.impl_info_str();
    addRuntimeNote(false, "matmul [*, " + std::to_string(K) + "] @ " +
                              sizes(B) + ", of any number of rows: " + E->Impl);
    matmulCache().insert(Key, E, [&](CacheStats &S) { S.LastImpl = E->Impl; });
  }
  std::unordered_map<int, memory> Args = {
      {DNNL_ARG_SRC, memory(descOf(A), engine(), A.Data)},
      {DNNL_ARG_WEIGHTS, memory(E->B, engine(), B.Data)},
      {DNNL_ARG_DST, memory(descOf(Out), engine(), Out.Data)}};
  // Its scratchpad is oneDNN's own (its size depends on the rows).
  runWith(E->Prim, Args, memory::desc());
}

/// The right operands (a constant's weightsKey, another's shape) whose
/// first number of rows has its primitive.
std::set<std::string> &firstShapeLocked() {
  static std::set<std::string> Seen;
  return Seen;
}

} // namespace

int32_t matmul(const Tensor &Out, const Tensor &A, const Tensor &B,
               bool ConstantB, std::string &Err, MatmulWeights Force,
               bool RowsVary) {
  size_t R = A.Sizes.size();
  size_t Off = R - 2;
  if (B.Sizes.size() != R || Out.Sizes.size() != R ||
      A.Sizes[Off + 1] != B.Sizes[Off] || Out.Sizes[Off] != A.Sizes[Off] ||
      Out.Sizes[Off + 1] != B.Sizes[Off + 1] ||
      (R == 3 && (B.Sizes[0] != A.Sizes[0] || Out.Sizes[0] != A.Sizes[0]))) {
    Err = "shapes do not match: " + sizes(A) + " @ " + sizes(B) + " -> " +
          sizes(Out);
    return 1;
  }
  std::string Shape = "matmul " + shape(Out) + shape(A) + shape(B) +
                      " threads=" + std::to_string(omp_get_max_threads());
  // Constant 2-D weights get a layout of their own; the key then holds their
  // identity and the layout forced, if one was.
  bool Kept = ConstantB && R == 2;
  std::string K = Shape;
  if (Kept)
    K += " weights " + identity(B) + " " +
         std::to_string(static_cast<int>(Force));
  try {
    std::shared_ptr<MatmulEntry> E = matmulCache().find(K);
    if (!E && RowsVary && denseRows(A) && denseRows(Out)) {
      // Another number of rows than the operand's first: any rows' primitive.
      std::string Right = Kept ? weightsKey(B)
                               : shape(B) + " threads=" +
                                     std::to_string(omp_get_max_threads());
      bool Again;
      {
        std::lock_guard<std::mutex> L(cacheMutex());
        Again = !firstShapeLocked().insert(Right).second;
      }
      // The first call makes (and runs once, which generates its code) the
      // primitive of any rows too, so that no later size waits for it; its
      // result is then overwritten by the first rows' own primitive.
      matmulAnyRows("matmul any rows " + Right, Out, A, B);
      if (Again)
        return 0;
    }
    if (!E) {
      std::string Note = "matmul " + sizes(A) + " @ " + sizes(B) + " -> " +
                         sizes(Out);
      MatmulWeights W = Force;
      if (Kept && W == MatmulWeights::Auto) {
        std::lock_guard<std::mutex> L(cacheMutex());
        auto It = chosenLocked().find(Shape);
        if (It == chosenLocked().end())
          It = chosenLocked().find(weightsKey(B));
        if (It != chosenLocked().end())
          W = It->second;
      }
      if (!Kept || W == MatmulWeights::Auto) {
        E = makeMatmul(Out, A, B, MatmulWeights::Plain);
      } else {
        E = makeMatmul(Out, A, B, W);
        if (!E)
          E = makeMatmul(Out, A, B, MatmulWeights::Plain);
      }
      if (Kept && W == MatmulWeights::Auto) {
        // The first weights of this shape: each layout timed on this call
        // (each with its copy of the weights until the fastest is known).
        std::vector<MatmulWeights> Ws = {MatmulWeights::Plain};
        std::vector<std::shared_ptr<MatmulEntry>> Candidates = {E};
        for (MatmulWeights Other : {MatmulWeights::Dense, MatmulWeights::Padded,
                                    MatmulWeights::OneDNN}) {
          try {
            if (auto O = makeMatmul(Out, A, B, Other)) {
              Ws.push_back(Other);
              Candidates.push_back(std::move(O));
            }
          } catch (const dnnl::error &) {
          }
        }
        std::vector<double> Times =
            fastestInTurn(Candidates.size(), 1, 3, [&](size_t J) {
              runMatmul(*Candidates[J], Out, A, B);
            });
        size_t Best = 0;
        std::ostringstream Timing;
        Timing.precision(3);
        for (size_t J = 0; J < Times.size(); ++J) {
          Timing << (J ? ", " : " [timed: ")
                 << (J ? layoutName(Ws[J]) : "the buffer's") << ' '
                 << Times[J] * 1e3 << " ms";
          if (Times[J] < Times[Best])
            Best = J;
        }
        Timing << "]";
        E = Candidates[Best];
        W = Ws[Best];
        Note += ", weights in " + std::string(layoutName(W)) + Timing.str();
        std::lock_guard<std::mutex> L(cacheMutex());
        chosenLocked()[Shape] = W;
        chosenLocked().emplace(weightsKey(B), W);
      } else if (Kept) {
        Note += ", weights in " + std::string(layoutName(W));
      }
      addRuntimeNote(false, Note + ": " + E->Impl);
      matmulCache().insert(K, E, [&](CacheStats &S) { S.LastImpl = E->Impl; });
    }
    runMatmul(*E, Out, A, B);
    return 0;
  } catch (const dnnl::error &Ex) {
    Err = std::string("oneDNN: ") + Ex.what();
    return 1;
  }
}

} // namespace nnc::onednn
