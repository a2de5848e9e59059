//===- Attention.cpp - nnc_aten_attention: attention in one pass ----------===//
//
// out = softmax(scale * q @ k^T + mask) @ v without the score matrix in
// memory, as FlashAttention computes it. The work is split into tasks of one
// (batch, head, block of query rows), run by nnc_parallel_for. A task walks
// the keys in blocks: it computes the block's scores into a tile of its
// thread, adds the mask, and folds the block into the rows' running maximum
// m, sum l and weighted sum acc (online softmax):
//
//   m' = max(m, max_j s_j)   p_j = exp(s_j - m')   c = exp(m - m')
//   l' = c * l + sum_j p_j    acc' = c * acc + p @ v_block
//
// and ends with out = acc / l. A row whose scores are all -inf has l = 0 and
// acc = 0, so it is NaN (0 / 0), as PyTorch's softmax gives, or 0 where the
// call asks for it (EmptyRowsZero: torch 2's scaled dot product attention);
// a NaN score makes its row NaN. Tiles are sized to stay in the core's L2 cache.
//
// A mask is scanned once per call (MaskRanges): the range of keys each of
// its rows keeps, and whether it is 0 inside. Keys no row of a task keeps
// are skipped; a mask of such ranges (causal, padding) is not read again.
// Where a value is NaN or infinite nothing is skipped: its weight 0 times
// it is NaN, as in PyTorch's product.
//
// Two ways to run a task, by the loops of the vector ISA (AttentionLoops.h):
// - tiled: the ISA's own register-blocked loops compute both products, with
//   the scores transposed (a query to a vector lane), so that the softmax
//   runs down the lanes and nothing is packed but the block's queries. It
//   takes a value matrix whose rows are contiguous and a width the vectors
//   divide;
// - by rows: oneDNN's sgemm (on one thread inside the parallel loop) writes
//   a query's scores to a row, and the row loops fold them. Everything else,
//   and the baseline ISA, runs this way.
//
//===----------------------------------------------------------------------===//
#include "AttentionLoops.h"
#include "Internal.h"
#include "OneDNNCommon.h"
#include "nnc/Runtime/Runtime.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <immintrin.h>
#include <unistd.h>

namespace nnc::onednn {

using detail::allFinite;
using detail::AttentionLoops;
using detail::AttentionLoopsAVX2;
using detail::AttentionLoopsAVX512;
using detail::AttentionLoopsBase;
using detail::ScoreMask;
using detail::sizes;
using detail::ValueOutput;

namespace {

/// Keys per block: a block's scores are QueryBlock x MaxKeyBlock floats,
/// which stay in L2 with the block's keys and values. (Smaller blocks cost
/// more than they save: 128 keys took 13.2 ms against 10.7 ms for 512 on a
/// Zen 4 core at seq 512 by rows; tiled on a Zen 5 core, 64 keys took
/// 4.5-4.6 ms against 4.1-4.5 ms for 128 to 512. The keys a mask leaves out
/// are skipped anyway.)
constexpr int64_t MaxKeyBlock = 512;

/// Rows of queries per task, at most: 128 where L2 holds the scores of a
/// block (256 KiB) twice over, else 64. (Zen 4, 1 MiB of L2, seq 512: 128
/// rows took 9.7-10.5 ms a core against 10.6-11.2 ms for 64 by rows; tiled
/// on Zen 5, 64 and 128 rows are within noise, 256 slower.) Fewer rows
/// where there would be too few tasks for the threads.
int64_t maxQueryBlock() {
  static const int64_t N = [] {
    long L2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return L2 >= (1L << 20) ? int64_t(128) : int64_t(64);
  }();
  return N;
}

/// A [Rows, Cols] matrix for sgemm (row-major): its transpose flag and
/// leading dimension, from its strides; false where neither stride is 1.
struct GemmMatrix {
  char Trans;
  int64_t Ld;
};

bool gemmMatrix(int64_t RowStride, int64_t ColStride, int64_t Rows,
                int64_t Cols, GemmMatrix &G) {
  if (ColStride == 1 || Cols == 1) {
    G = {'N', std::max(RowStride, Cols)};
    return Rows == 1 || RowStride >= Cols;
  }
  if (RowStride == 1 || Rows == 1) {
    G = {'T', std::max(ColStride, Rows)};
    return Cols == 1 || ColStride >= Rows;
  }
  return false;
}

/// The keys each of the mask's own rows keeps (its batch, head and query
/// dims, of size 1 where they broadcast), found once per call: row R is -inf
/// outside [First[R], End[R]) (First == End: every key left out). Zero:
/// every row is 0 inside its range, so that the ranges are the whole mask
/// (a causal or a padding mask) and tasks need not read it.
struct MaskRanges {
  std::vector<int64_t> First, End;
  bool Zero = false;
};

struct Problem {
  const Tensor *Out, *Q, *K, *V, *Mask;
  const MaskRanges *Ranges;
  float Scale;
  bool EmptyRowsZero;
  int64_t H, Sq, Sk, D, Dv, QueryBlock, QueryBlocks, KeyBlock;
  GemmMatrix QM, KM, VM;
  bool Tiled;
};

/// The tiles of the calling thread, reused from task to task. Tiled tasks
/// also use Qt (the block's queries transposed), Max (each lane's new
/// maximum), C (its rescale), R (1 / l, for the last block's values to
/// write the output) and, with a mask that varies by query, either
/// Lo and Hi (each lane's range of keys) or Mt (the mask's block,
/// transposed as the scores are).
///
/// Each starts at a cache line (TileFloats).
struct Tiles {
  detail::TileFloats S, Acc, M, L, Qt, Max, C, R, Lo, Hi, Mt;
};

float *at(const Tensor &T, int64_t B, int64_t H, int64_t I, int64_t J) {
  return T.Data + B * T.Strides[0] + H * T.Strides[1] + I * T.Strides[2] +
         J * T.Strides[3];
}

/// The mask's entries for a block (rows from I0, keys from J0): the first,
/// and the row and column strides (0 where a size-1 dim broadcasts).
struct MaskBlock {
  const float *Base;
  int64_t RS, CS;
};

MaskBlock maskBlock(const Problem &P, int64_t B, int64_t H, int64_t I0,
                    int64_t J0) {
  const Tensor &M = *P.Mask;
  int64_t RS = M.Sizes[2] == 1 ? 0 : M.Strides[2];
  int64_t CS = M.Sizes[3] == 1 ? 0 : M.Strides[3];
  return {at(M, M.Sizes[0] == 1 ? 0 : B, M.Sizes[1] == 1 ? 0 : H, 0, 0) +
              I0 * RS + J0 * CS,
          RS, CS};
}

/// Whether some entry of Row[0, 16) is not X (NaN is never X). SSE2, which
/// every x86-64 CPU has.
__attribute__((always_inline)) inline bool anyNot(const float *Row, __m128 X) {
  __m128 N = _mm_or_ps(_mm_or_ps(_mm_cmpneq_ps(_mm_loadu_ps(Row), X),
                                 _mm_cmpneq_ps(_mm_loadu_ps(Row + 4), X)),
                       _mm_or_ps(_mm_cmpneq_ps(_mm_loadu_ps(Row + 8), X),
                                 _mm_cmpneq_ps(_mm_loadu_ps(Row + 12), X)));
  return _mm_movemask_ps(N) != 0;
}

/// The keys [First, End) of a mask row (Cols entries of stride CS) outside
/// which every entry is -inf (First == End: none); returns whether every
/// entry inside is 0. Scanned 16 entries at a time where the row is
/// contiguous.
bool scanMaskRow(const float *Row, int64_t CS, int64_t Cols, int64_t &First,
                 int64_t &End) {
  const __m128 NegInf = _mm_set1_ps(-INFINITY), Zero = _mm_setzero_ps();
  auto Kept = [&](int64_t J) { return Row[J * CS] != -INFINITY; };
  int64_t F = 0, E = Cols;
  if (CS == 1) {
    while (F + 16 <= Cols && !anyNot(Row + F, NegInf))
      F += 16;
    while (E - 16 >= F && !anyNot(Row + E - 16, NegInf))
      E -= 16;
  }
  while (F < E && !Kept(F))
    ++F;
  while (E > F && !Kept(E - 1))
    --E;
  First = F;
  End = E;
  int64_t J = F;
  if (CS == 1)
    for (; J + 16 <= E; J += 16)
      if (anyNot(Row + J, Zero))
        return false;
  for (; J < E; ++J)
    if (Row[J * CS] != 0.f)
      return false;
  return true;
}

struct RangesEnv {
  const Tensor *Mask;
  MaskRanges *R;
  std::vector<char> *Zero;
};

/// Rows [Begin, End) of the mask's own rows (see MaskRanges).
int32_t scanMaskRows(int64_t Begin, int64_t End, void *Env) {
  auto &E = *static_cast<RangesEnv *>(Env);
  const Tensor &M = *E.Mask;
  for (int64_t R = Begin; R < End; ++R) {
    int64_t I = R % M.Sizes[2], BH = R / M.Sizes[2];
    const float *Row = at(M, BH / M.Sizes[1], BH % M.Sizes[1], I, 0);
    (*E.Zero)[R] = scanMaskRow(Row, M.Sizes[3] == 1 ? 0 : M.Strides[3],
                               M.Sizes[3] == 1 ? 1 : M.Sizes[3], E.R->First[R],
                               E.R->End[R]);
    if (M.Sizes[3] == 1 && E.R->First[R] < E.R->End[R])
      E.R->End[R] = INT64_MAX; // One entry for every key.
  }
  return 0;
}

/// The mask's ranges, its rows scanned on the threads.
bool maskRanges(const Tensor &M, MaskRanges &R) {
  int64_t Rows = M.Sizes[0] * M.Sizes[1] * M.Sizes[2];
  R.First.assign(static_cast<size_t>(Rows), 0);
  R.End.assign(static_cast<size_t>(Rows), 0);
  std::vector<char> Zero(static_cast<size_t>(Rows));
  RangesEnv Env{&M, &R, &Zero};
  if (nnc_parallel_for(scanMaskRows, 0, Rows, 16, &Env) != 0)
    return false;
  R.Zero = std::all_of(Zero.begin(), Zero.end(), [](char Z) { return Z; });
  return true;
}

/// Index of the mask's own row for query I of head H of batch B.
int64_t maskRow(const Problem &P, int64_t B, int64_t H, int64_t I) {
  const Tensor &M = *P.Mask;
  return ((M.Sizes[0] == 1 ? 0 : B) * M.Sizes[1] + (M.Sizes[1] == 1 ? 0 : H)) *
             M.Sizes[2] +
         (M.Sizes[2] == 1 ? 0 : I);
}

/// The keys [Lo, Hi) of the block [J0, J0 + Cols), counted from J0, that
/// rows [I0, I0 + Rows) keep (Lo == Hi: none, the block is skipped). Only
/// these are multiplied: below a causal mask's diagonal, before a padding
/// mask's end.
void keptKeys(const Problem &P, int64_t B, int64_t H, int64_t I0, int64_t Rows,
              int64_t J0, int64_t Cols, int64_t &Lo, int64_t &Hi) {
  int64_t L = Cols, U = 0;
  for (int64_t I = 0; I < (P.Mask->Sizes[2] == 1 ? 1 : Rows); ++I) {
    int64_t R = maskRow(P, B, H, I0 + I);
    int64_t F = std::max(P.Ranges->First[R] - J0, int64_t(0));
    int64_t E = std::min(P.Ranges->End[R] - J0, Cols);
    if (F < E) {
      L = std::min(L, F);
      U = std::max(U, E);
    }
  }
  Lo = L;
  Hi = U > L ? U : L;
}

/// Applies the mask to a block of scores: adds it, and where it is -inf
/// the score is -inf whatever it was (as masked_fill leaves a score out).
__attribute__((always_inline)) inline void applyMask(const MaskBlock &MB,
                                                     float *S, int64_t Ld,
                                                     int64_t Rows,
                                                     int64_t Cols) {
  for (int64_t I = 0; I < Rows; ++I) {
    const float *Row = MB.Base + I * MB.RS;
    float *SR = S + I * Ld;
    if (MB.CS == 1) {
#pragma omp simd
      for (int64_t J = 0; J < Cols; ++J)
        SR[J] = Row[J] == -INFINITY ? -INFINITY : SR[J] + Row[J];
    } else {
      for (int64_t J = 0; J < Cols; ++J) {
        float M = Row[J * MB.CS];
        SR[J] = M == -INFINITY ? -INFINITY : SR[J] + M;
      }
    }
  }
}

/// Folds a block of scores (rows of stride Ld) into the rows' running
/// statistics: S becomes exp(s - m'), Acc is rescaled by exp(m - m')
/// (First: Acc holds nothing yet), and M and L become m' and l'.
__attribute__((always_inline)) inline void
foldBlock(const AttentionLoops &K, float *S, int64_t Ld, float *Acc, float *M,
          float *L, int64_t Rows, int64_t Cols, int64_t Dv, bool First) {
  for (int64_t I = 0; I < Rows; ++I) {
    float *SR = S + I * Ld;
    float Old = First ? -INFINITY : M[I];
    float New = std::max(Old, K.Max(SR, Cols));
    // Every score so far is -inf: exp(s - 0) is 0 for them, and the row
    // stays l = 0, acc = 0 until a finite score comes.
    float Shift = New == -INFINITY ? 0.f : New;
    float Sum = K.ExpSum(SR, Cols, Shift);
    M[I] = New;
    if (First) {
      L[I] = Sum;
      continue;
    }
    float C = std::exp(Old - Shift);
    L[I] = L[I] * C + Sum;
    float *AR = Acc + I * Dv;
#pragma omp simd
    for (int64_t E = 0; E < Dv; ++E)
      AR[E] *= C;
  }
}

/// 1 / l of a row: l = 0 where every key was left out (acc = 0 too), which
/// makes the row NaN, as PyTorch's softmax gives, or 0 (EmptyRowsZero).
inline float reciprocalSum(const Problem &P, float L) {
  return P.EmptyRowsZero && L == 0.f ? 0.f : 1.f / L;
}

/// The end of a task: its rows of out = acc * (1 / l). (First: every key
/// was left out, so l = 0 and acc = 0.)
__attribute__((always_inline)) inline std::string
finishTask(const Problem &P, Tiles &T, int64_t B, int64_t H, int64_t I0,
           int64_t Rows, bool First) {
  if (First) {
    std::fill_n(T.Acc.begin(), Rows * P.Dv, 0.f);
    std::fill_n(T.L.begin(), Rows, 0.f);
  }
  const Tensor &O = *P.Out;
  for (int64_t I = 0; I < Rows; ++I) {
    float *OR = at(O, B, H, I0 + I, 0);
    const float *AR = T.Acc.data() + I * P.Dv;
    float R = reciprocalSum(P, T.L[I]);
    if (O.Strides[3] == 1) {
#pragma omp simd
      for (int64_t E = 0; E < P.Dv; ++E)
        OR[E] = AR[E] * R;
    } else {
      for (int64_t E = 0; E < P.Dv; ++E)
        OR[E * O.Strides[3]] = AR[E] * R;
    }
  }
  return {};
}

/// One task: rows [I0, I0 + Rows) of head H of batch B, with the row loops
/// of K. Its own loops are compiled for each vector level (pathOn picks
/// one).
__attribute__((always_inline)) inline std::string
runTaskBody(const Problem &P, const AttentionLoops &K, Tiles &T, int64_t B,
            int64_t H, int64_t I0, int64_t Rows) {
  const float *QP = at(*P.Q, B, H, I0, 0);
  const int64_t Ld = P.KeyBlock;
  bool First = true;
  for (int64_t Block = 0; Block < P.Sk; Block += Ld) {
    int64_t J0 = Block, Cols = std::min(Ld, P.Sk - Block);
    MaskBlock MB{};
    if (P.Mask) {
      int64_t Lo, Hi;
      keptKeys(P, B, H, I0, Rows, J0, Cols, Lo, Hi);
      if (Lo == Hi)
        continue;
      J0 += Lo;
      Cols = Hi - Lo;
      MB = maskBlock(P, B, H, I0, J0);
    }
    const float *KP = at(*P.K, B, H, J0, 0);
    const float *VP = at(*P.V, B, H, J0, 0);
    // S = scale * Q_rows @ K_block^T: K_block is [Cols, D], so its
    // transpose flips the flag.
    char KT = P.KM.Trans == 'N' ? 'T' : 'N';
    if (dnnl_sgemm(P.QM.Trans, KT, Rows, Cols, P.D, P.Scale, QP, P.QM.Ld, KP,
                   P.KM.Ld, 0.f, T.S.data(), Ld) != dnnl_success)
      return "oneDNN's sgemm failed on the scores";
    if (P.Mask)
      applyMask(MB, T.S.data(), Ld, Rows, Cols);
    foldBlock(K, T.S.data(), Ld, T.Acc.data(), T.M.data(), T.L.data(), Rows,
              Cols, P.Dv, First);
    if (dnnl_sgemm('N', P.VM.Trans, Rows, P.Dv, Cols, 1.f, T.S.data(), Ld, VP,
                   P.VM.Ld, First ? 0.f : 1.f, T.Acc.data(),
                   P.Dv) != dnnl_success)
      return "oneDNN's sgemm failed on the values";
    First = false;
  }
  return finishTask(P, T, B, H, I0, Rows, First);
}

/// A tiled task (see the file comment): rows [I0, I0 + Rows) of head H of
/// batch B, with the tile loops of K.
__attribute__((always_inline)) inline std::string
runTiledTaskBody(const Problem &P, const AttentionLoops &K, Tiles &T, int64_t B,
                 int64_t H, int64_t I0, int64_t Rows) {
  // The queries transposed, their lanes rounded up to whole vectors; the
  // lanes past Rows hold 0 and their results are never read.
  const int64_t Lanes = (Rows + K.Width - 1) / K.Width * K.Width;
  const Tensor &Q = *P.Q;
  K.PackQueries(at(Q, B, H, I0, 0), Q.Strides[2], Q.Strides[3], Rows, P.D,
                Lanes, T.Qt.data());
  const Tensor &KT = *P.K, &VT = *P.V, &O = *P.Out;
  // A mask that varies by query is each lane's range of keys, or else
  // transposed, a block at a time, to a bias per key and lane.
  const bool PerQuery = P.Mask && P.Mask->Sizes[2] != 1;
  bool First = true;
  for (int64_t Block = 0; Block < P.Sk; Block += P.KeyBlock) {
    int64_t J0 = Block, Cols = std::min(P.KeyBlock, P.Sk - Block);
    ScoreMask SM;
    if (P.Mask) {
      int64_t Lo, Hi;
      keptKeys(P, B, H, I0, Rows, J0, Cols, Lo, Hi);
      if (Lo == Hi)
        continue;
      J0 += Lo;
      Cols = Hi - Lo;
      if (P.Ranges->Zero) {
        // A mask the same for every query adds nothing to the keys kept;
        // one that varies by query is each lane's range.
        if (PerQuery) {
          for (int64_t I = 0; I < Lanes; ++I) {
            int64_t F = 0, E = 0;
            if (I < Rows) {
              int64_t R = maskRow(P, B, H, I0 + I);
              F = std::clamp(P.Ranges->First[R] - J0, int64_t(0), Cols);
              E = std::clamp(P.Ranges->End[R] - J0, F, Cols);
            }
            T.Lo[I] = static_cast<float>(F);
            T.Hi[I] = static_cast<float>(E);
          }
          SM = {ScoreMask::Range, nullptr, 0, T.Lo.data(), T.Hi.data()};
        }
      } else {
        MaskBlock MB = maskBlock(P, B, H, I0, J0);
        SM = {ScoreMask::PerKey, MB.Base, MB.CS};
        if (PerQuery) {
          K.PackQueries(MB.Base, MB.RS, MB.CS, Rows, Cols, Lanes, T.Mt.data());
          SM = {ScoreMask::PerLane, T.Mt.data()};
        }
      }
    }
    float *St = T.S.data(), *Max = T.Max.data();
    if (First)
      std::fill_n(Max, Lanes, -INFINITY);
    else
      std::copy_n(T.M.data(), Lanes, Max);
    K.Scores(T.Qt.data(), P.D, Lanes, at(KT, B, H, J0, 0), KT.Strides[2],
             KT.Strides[3], Cols, P.Scale, SM, St, Max);
    K.Fold(St, Lanes, Cols, Max, T.M.data(), T.L.data(), T.C.data(), First);
    // The last block's values write the output, times 1 / l, as
    // finishTask would, without the pass over acc.
    ValueOutput Final;
    if (Block + P.KeyBlock >= P.Sk && O.Strides[3] == 1) {
      for (int64_t I = 0; I < Rows; ++I)
        T.R[I] = reciprocalSum(P, T.L[I]);
      Final = {at(O, B, H, I0, 0), O.Strides[2], T.R.data()};
    }
    K.Values(St, at(VT, B, H, J0, 0), VT.Strides[2], Cols, Rows, P.Dv,
             T.C.data(), SM.Lo, SM.Hi, T.Acc.data(), First, Final);
    if (Final.Data)
      return {};
    First = false;
  }
  // The last block had no key kept, or the output's rows are strided.
  return finishTask(P, T, B, H, I0, Rows, First);
}

using TaskFn = std::string (*)(const Problem &, Tiles &, int64_t, int64_t,
                               int64_t, int64_t);

__attribute__((target("arch=x86-64-v4"))) std::string
runTaskV4(const Problem &P, Tiles &T, int64_t B, int64_t H, int64_t I0,
          int64_t Rows) {
  return P.Tiled ? runTiledTaskBody(P, AttentionLoopsAVX512, T, B, H, I0, Rows)
                 : runTaskBody(P, AttentionLoopsAVX512, T, B, H, I0, Rows);
}

__attribute__((target("arch=x86-64-v3"))) std::string
runTaskV3(const Problem &P, Tiles &T, int64_t B, int64_t H, int64_t I0,
          int64_t Rows) {
  return P.Tiled ? runTiledTaskBody(P, AttentionLoopsAVX2, T, B, H, I0, Rows)
                 : runTaskBody(P, AttentionLoopsAVX2, T, B, H, I0, Rows);
}

std::string runTaskBase(const Problem &P, Tiles &T, int64_t B, int64_t H,
                        int64_t I0, int64_t Rows) {
  return runTaskBody(P, AttentionLoopsBase, T, B, H, I0, Rows);
}

/// A vector ISA's task function and loops.
struct Path {
  TaskFn Run;
  const AttentionLoops *Loops;
};

/// The widest vectors the CPU has (x86-64-v4: AVX-512; v3: AVX2 and FMA),
/// no wider than ONEDNN_MAX_CPU_ISA allows oneDNN (AVX2 or older names cap
/// it at v3 or the baseline), so that one variable selects a whole ISA path.
/// Found once per process.
const Path &pathOn() {
  static const Path On = [] {
    std::string Cap;
    if (const char *E = std::getenv("ONEDNN_MAX_CPU_ISA"))
      for (const char *C = E; *C; ++C)
        Cap += static_cast<char>(std::toupper(static_cast<unsigned char>(*C)));
    bool CapV3 = Cap.rfind("AVX2", 0) == 0;
    bool CapBase = Cap.rfind("SSE", 0) == 0 || Cap == "AVX";
    if (!CapV3 && !CapBase && __builtin_cpu_supports("x86-64-v4"))
      return Path{&runTaskV4, &AttentionLoopsAVX512};
    if (!CapBase && __builtin_cpu_supports("x86-64-v3"))
      return Path{&runTaskV3, &AttentionLoopsAVX2};
    return Path{&runTaskBase, &AttentionLoopsBase};
  }();
  return On;
}

struct TaskEnv {
  const Problem *P;
  std::string Err;
};

int32_t runTasks(int64_t Begin, int64_t End, void *Env) {
  auto &E = *static_cast<TaskEnv *>(Env);
  const Problem &P = *E.P;
  thread_local Tiles T;
  // Room for a tiled task's lanes: whole vectors of 16 floats at most.
  const auto Lanes = static_cast<size_t>((P.QueryBlock + 15) / 16 * 16);
  T.S.resize(Lanes * static_cast<size_t>(P.KeyBlock));
  T.Acc.resize(static_cast<size_t>(P.QueryBlock * P.Dv));
  T.M.resize(Lanes);
  T.L.resize(Lanes);
  if (P.Tiled) {
    T.Qt.resize(Lanes * static_cast<size_t>(P.D));
    T.Max.resize(Lanes);
    T.C.resize(Lanes);
    T.R.resize(Lanes);
    if (P.Mask && P.Mask->Sizes[2] != 1) {
      T.Lo.resize(Lanes);
      T.Hi.resize(Lanes);
      if (!P.Ranges->Zero)
        T.Mt.resize(T.S.size());
    }
  }
  const TaskFn Run = pathOn().Run;
  for (int64_t Task = Begin; Task < End; ++Task) {
    int64_t Block = Task % P.QueryBlocks, BH = Task / P.QueryBlocks;
    int64_t I0 = Block * P.QueryBlock;
    std::string Err =
        Run(P, T, BH / P.H, BH % P.H, I0, std::min(P.QueryBlock, P.Sq - I0));
    if (!Err.empty()) {
      // Tasks stop at the first failure; which message wins is immaterial.
#pragma omp critical(nnc_attention_error)
      E.Err = Err;
      return 1;
    }
  }
  return 0;
}

} // namespace

int32_t attention(const Tensor &Out, const Tensor &Q, const Tensor &K,
                  const Tensor &V, const Tensor *Mask, float Scale,
                  bool EmptyRowsZero, std::string &Err) {
  MaskRanges Ranges;
  Problem P{&Out,       &Q,         &K,         &V,
            Mask,       &Ranges,    Scale,      EmptyRowsZero,
            Q.Sizes[1], Q.Sizes[2], K.Sizes[2], Q.Sizes[3],
            V.Sizes[3], 0,          0,          0,
            {},         {},         {},         false};
  if (!gemmMatrix(Q.Strides[2], Q.Strides[3], P.Sq, P.D, P.QM) ||
      !gemmMatrix(K.Strides[2], K.Strides[3], P.Sk, P.D, P.KM) ||
      !gemmMatrix(V.Strides[2], V.Strides[3], P.Sk, P.Dv, P.VM)) {
    Err = "an operand's rows and columns both have strides other than 1";
    addRuntimeNote(true, "attention on query " + sizes(Q) + ": " + Err +
                             "; the reference runs");
    return 1;
  }
  int64_t Heads = Q.Sizes[0] * P.H;
  if (Heads == 0 || P.Sq == 0 || P.Dv == 0)
    return 0;
  if (P.Sk == 0) { // No keys: the product with an empty value matrix.
    for (int64_t B = 0; B < Q.Sizes[0]; ++B)
      for (int64_t H = 0; H < P.H; ++H)
        for (int64_t I = 0; I < P.Sq; ++I)
          for (int64_t E = 0; E < P.Dv; ++E)
            at(Out, B, H, I, 0)[E * Out.Strides[3]] = 0.f;
    return 0;
  }
  // Blocks of queries small enough for four tasks a thread, down to 16 rows.
  int64_t Threads = nnc_runtime_num_threads();
  P.QueryBlock = maxQueryBlock();
  while (P.QueryBlock > 16 &&
         Heads * ((P.Sq + P.QueryBlock - 1) / P.QueryBlock) < 4 * Threads)
    P.QueryBlock /= 2;
  P.QueryBlock = std::min(P.QueryBlock, P.Sq);
  P.QueryBlocks = (P.Sq + P.QueryBlock - 1) / P.QueryBlock;
  P.KeyBlock = std::min(MaxKeyBlock, P.Sk);
  // Tiled where the ISA has tile loops and the operands suit them (see the
  // file comment).
  const AttentionLoops &Loops = *pathOn().Loops;
  P.Tiled = Loops.Scores && V.Strides[3] == 1 && P.Dv % Loops.Width == 0;
  if (Mask && !maskRanges(*Mask, Ranges)) {
    Err = nnc_runtime_last_error();
    return 1;
  }
  // A key the mask leaves out has weight 0, and 0 times a value that is
  // NaN or infinite is NaN in PyTorch's product: where the values are not
  // all finite, every key is multiplied, the mask applied to every block.
  if (Mask && !allFinite(V)) {
    std::fill(Ranges.First.begin(), Ranges.First.end(), int64_t(0));
    std::fill(Ranges.End.begin(), Ranges.End.end(), INT64_MAX);
    Ranges.Zero = false;
  }
  TaskEnv Env{&P, {}};
  // A chunk a task: a task is long (about 0.2 ms at [128, 512] x 64), so
  // handing each out on its own costs nothing, and a thread that a
  // neighbour slows holds up the call by at most one task.
  const int64_t Tasks = Heads * P.QueryBlocks;
  if (nnc::detail::parallelFor(runTasks, 0, Tasks, 1, &Env, Tasks) != 0) {
    Err = Env.Err.empty() ? nnc_runtime_last_error() : Env.Err;
    return 1;
  }
  return 0;
}

} // namespace nnc::onednn
