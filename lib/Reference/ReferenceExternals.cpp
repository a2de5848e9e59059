//===- ReferenceExternals.cpp - Plain reference external functions --------===//
#include "nnc/Reference/ReferenceExternals.h"
#include "nnc/Support/Format.h"
#include "nnc/Support/ForEachIndex.h"

#include <algorithm>
#include <cmath>

namespace nnc {

namespace {

/// out[n, o, y, x] = bias[o] + sum_{c, ky, kx} in[n, g*C/G + c, ...] * w[...]
std::string conv2d(const TensorRef &Out, const std::vector<TensorRef> &Ins,
                   const std::vector<int64_t> &Args) {
  Conv2dParams P;
  if (!decodeConv2dParams(Args, P))
    return "invalid convolution parameters";
  const TensorRef &X = Ins[0], &W = Ins[1];
  const TensorRef *B = Ins.size() > 2 ? &Ins[2] : nullptr;
  auto Expect = conv2dOutputSizes(X.Sizes, W.Sizes, P);
  if (!Expect || Out.Sizes != *Expect || (B && B->Sizes[0] != W.Sizes[0]))
    return "shapes do not match: input " + shapeText(X.Sizes) + ", weight " +
           shapeText(W.Sizes) + ", output " + shapeText(Out.Sizes) + ", groups " +
           std::to_string(P.Groups);
  int64_t N = X.Sizes[0], H = X.Sizes[2], Wd = X.Sizes[3];
  int64_t O = W.Sizes[0], CPerG = W.Sizes[1], KH = W.Sizes[2], KW = W.Sizes[3];
  int64_t OH = Out.Sizes[2], OW = Out.Sizes[3];
  int64_t OPerG = O / P.Groups;
  const auto &XS = X.Strides, &WS = W.Strides, &OS = Out.Strides;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      int64_t G = o / OPerG;
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t x = 0; x < OW; ++x) {
          double Acc = B ? B->Data[o * B->Strides[0]] : 0.0;
          for (int64_t ky = 0; ky < KH; ++ky) {
            int64_t iy = y * P.StrideH - P.PadH + ky * P.DilationH;
            if (iy < 0 || iy >= H)
              continue;
            for (int64_t kx = 0; kx < KW; ++kx) {
              int64_t ix = x * P.StrideW - P.PadW + kx * P.DilationW;
              if (ix < 0 || ix >= Wd)
                continue;
              const float *XP =
                  X.Data + n * XS[0] + (G * CPerG) * XS[1] + iy * XS[2] + ix * XS[3];
              const float *WP = W.Data + o * WS[0] + ky * WS[2] + kx * WS[3];
              for (int64_t c = 0; c < CPerG; ++c)
                Acc += static_cast<double>(XP[c * XS[1]]) * WP[c * WS[1]];
            }
          }
          Out.Data[n * OS[0] + o * OS[1] + y * OS[2] + x * OS[3]] =
              static_cast<float>(Acc);
        }
    }
  return {};
}

/// out = beta * self + alpha * (a @ b); plain matmul has no self.
std::string matmul(const TensorRef &Out, const TensorRef &A, const TensorRef &Bm,
                   const TensorRef *Self, double Beta, double Alpha) {
  size_t R = A.Sizes.size();
  if ((R != 2 && R != 3) || Bm.Sizes.size() != R || Out.Sizes.size() != R)
    return "ranks do not match: " + shapeText(A.Sizes) + " @ " +
           shapeText(Bm.Sizes) + " -> " + shapeText(Out.Sizes);
  int64_t Batch = R == 3 ? A.Sizes[0] : 1;
  size_t Off = R - 2;
  int64_t M = A.Sizes[Off], K = A.Sizes[Off + 1], N = Bm.Sizes[Off + 1];
  if (Bm.Sizes[Off] != K || Out.Sizes[Off] != M || Out.Sizes[Off + 1] != N ||
      (R == 3 && (Bm.Sizes[0] != Batch || Out.Sizes[0] != Batch)))
    return "shapes do not match: " + shapeText(A.Sizes) + " @ " +
           shapeText(Bm.Sizes) + " -> " + shapeText(Out.Sizes);
  // self broadcasts to [M, N]: [N], [1, N], [M, 1], [M, N] (a size 1 repeats).
  if (Self) {
    const auto &SS = Self->Sizes;
    bool Ok = R == 2 &&
              (SS.size() == 1 ? (SS[0] == N || SS[0] == 1)
               : SS.size() == 2 ? (SS[0] == M || SS[0] == 1) &&
                                      (SS[1] == N || SS[1] == 1)
                                : false);
    if (!Ok)
      return "self of shape " + shapeText(SS) + " does not broadcast to " +
             shapeText(std::vector<int64_t>{M, N});
  }
  for (int64_t b = 0; b < Batch; ++b) {
    const float *AP = A.Data + (R == 3 ? b * A.Strides[0] : 0);
    const float *BP = Bm.Data + (R == 3 ? b * Bm.Strides[0] : 0);
    float *OP = Out.Data + (R == 3 ? b * Out.Strides[0] : 0);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double Acc = 0;
        for (int64_t k = 0; k < K; ++k)
          Acc += static_cast<double>(AP[i * A.Strides[Off] + k * A.Strides[Off + 1]]) *
                 BP[k * Bm.Strides[Off] + j * Bm.Strides[Off + 1]];
        double V = Alpha * Acc;
        if (Self) {
          const auto &SS = Self->Sizes;
          int64_t J = SS.back() == 1 ? 0 : j;
          int64_t SO = SS.size() == 1
                           ? J * Self->Strides[0]
                           : (SS[0] == 1 ? 0 : i * Self->Strides[0]) +
                                 J * Self->Strides[1];
          V += Beta * Self->Data[SO];
        }
        OP[i * Out.Strides[Off] + j * Out.Strides[Off + 1]] =
            static_cast<float>(V);
      }
  }
  return {};
}

/// out[cb, kh, kw, i, o] = w[cb * B + o, i, kh, kw].
std::string packConvWeights(const TensorRef &Out, const TensorRef &W,
                            int64_t B) {
  const std::vector<int64_t> &S = W.Sizes;
  if (B < 1 || S[0] % B ||
      Out.Sizes != std::vector<int64_t>{S[0] / B, S[2], S[3], S[1], B})
    return "shapes do not match: weight " + shapeText(S) + ", block " +
           std::to_string(B) + ", output " + shapeText(Out.Sizes);
  forEachIndex(Out.Sizes, [&](const std::vector<int64_t> &I) {
    int64_t To = 0, From = (I[0] * B + I[4]) * W.Strides[0] +
                           I[3] * W.Strides[1] + I[1] * W.Strides[2] +
                           I[2] * W.Strides[3];
    for (size_t D = 0; D < I.size(); ++D)
      To += I[D] * Out.Strides[D];
    Out.Data[To] = W.Data[From];
  });
  return {};
}

} // namespace

void applyReferencePostOps(const TensorRef &Out,
                           const std::vector<PostOp> &PostOps,
                           const std::vector<TensorRef> &Others) {
  forEachIndex(Out.Sizes, [&](const std::vector<int64_t> &Idx) {
    auto OffsetIn = [&](const TensorRef &T) {
      int64_t Off = 0;
      for (size_t D = 0; D < Idx.size(); ++D)
        Off += Idx[D] * T.Strides[D];
      return Off;
    };
    float &X = Out.Data[OffsetIn(Out)];
    size_t NextOther = 0;
    for (const PostOp &P : PostOps) {
      float A = static_cast<float>(P.Alpha), B = static_cast<float>(P.Beta);
      switch (P.Kind) {
      case PostOpKind::Relu:
        X = X < 0.f ? 0.f : X;
        break;
      case PostOpKind::LeakyRelu:
        X = X < 0.f ? A * X : X;
        break;
      case PostOpKind::Clamp:
        X = std::min(std::max(X, A), B);
        break;
      case PostOpKind::Sigmoid:
        X = 1.f / (1.f + std::exp(-X));
        break;
      case PostOpKind::Tanh:
        X = std::tanh(X);
        break;
      case PostOpKind::GeluErf:
        X = 0.5f * X * (1.f + std::erf(X * 0.70710678f));
        break;
      case PostOpKind::GeluTanh:
        X = 0.5f * X *
            (1.f + std::tanh(0.7978845608f * (X + 0.044715f * X * X * X)));
        break;
      case PostOpKind::Silu:
        X = X / (1.f + std::exp(-X));
        break;
      case PostOpKind::Hardswish:
        X = X * std::min(std::max(X + 3.f, 0.f), 6.f) / 6.f;
        break;
      case PostOpKind::Add: {
        const TensorRef &T = Others[NextOther++];
        X = X + T.Data[OffsetIn(T)];
        break;
      }
      }
    }
  });
}

void keepAliasedOperands(const TensorRef &Out, std::vector<TensorRef> &Others,
                         std::vector<std::vector<float>> &Keep) {
  auto Span = [](const TensorRef &T) {
    int64_t N = 1;
    for (size_t D = 0; D < T.Sizes.size(); ++D) {
      if (T.Sizes[D] == 0)
        return int64_t(0);
      N += (T.Sizes[D] - 1) * T.Strides[D];
    }
    return N;
  };
  int64_t OutSpan = Span(Out);
  for (TensorRef &T : Others) {
    int64_t N = Span(T);
    if (N == 0 || OutSpan == 0 || T.Data >= Out.Data + OutSpan ||
        Out.Data >= T.Data + N)
      continue;
    Keep.emplace_back(T.Data, T.Data + N);
    T.Data = Keep.back().data();
  }
}

/// out[b, h, i, :] = sum_j p_j v[b, h, j, :] with p = softmax_j(scale * q[b,
/// h, i, :] . k[b, h, j, :] + mask[b, h, i, j]), in double; where the mask
/// is -inf the score is -inf whatever q . k is (a NaN too). A row whose
/// scores are all -inf is NaN (0 / 0), as PyTorch's softmax gives; with no
/// keys the output is 0, PyTorch's product with an empty value matrix.
std::string attention(const TensorRef &Out, const std::vector<TensorRef> &Ins,
                      double Scale, bool EmptyRowsZero) {
  const TensorRef &Q = Ins[0], &K = Ins[1], &V = Ins[2];
  const TensorRef *M = Ins.size() > 3 ? &Ins[3] : nullptr;
  int64_t B = Q.Sizes[0], H = Q.Sizes[1], Sq = Q.Sizes[2], D = Q.Sizes[3];
  int64_t Sk = K.Sizes[2], Dv = V.Sizes[3];
  std::vector<int64_t> Scores = {B, H, Sq, Sk};
  bool Ok = K.Sizes == std::vector<int64_t>{B, H, Sk, D} &&
            V.Sizes == std::vector<int64_t>{B, H, Sk, Dv} &&
            Out.Sizes == std::vector<int64_t>{B, H, Sq, Dv};
  for (unsigned I = 0; M && I < 4; ++I)
    Ok = Ok && (M->Sizes[I] == 1 || M->Sizes[I] == Scores[I]);
  if (!Ok)
    return "shapes do not match: query " + shapeText(Q.Sizes) + ", key " +
           shapeText(K.Sizes) + ", value " + shapeText(V.Sizes) +
           (M ? ", mask " + shapeText(M->Sizes) : std::string()) +
           ", output " + shapeText(Out.Sizes);
  auto At = [](const TensorRef &T, std::initializer_list<int64_t> Idx) {
    int64_t Off = 0, D = 0;
    for (int64_t I : Idx) {
      Off += (T.Sizes[D] == 1 ? 0 : I) * T.Strides[D];
      ++D;
    }
    return T.Data[Off];
  };
  std::vector<double> S(Sk);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Sq; ++i) {
        double Max = -INFINITY;
        for (int64_t j = 0; j < Sk; ++j) {
          double Dot = 0;
          for (int64_t d = 0; d < D; ++d)
            Dot += static_cast<double>(At(Q, {b, h, i, d})) * At(K, {b, h, j, d});
          double Mask = M ? At(*M, {b, h, i, j}) : 0.0;
          S[j] = Mask == -INFINITY ? -INFINITY : Scale * Dot + Mask;
          Max = std::max(Max, S[j]);
        }
        double Sum = 0;
        for (int64_t j = 0; j < Sk; ++j)
          Sum += S[j] = std::exp(S[j] - Max);
        for (int64_t e = 0; e < Dv; ++e) {
          double Acc = 0;
          for (int64_t j = 0; j < Sk; ++j)
            Acc += S[j] * At(V, {b, h, j, e});
          Out.Data[b * Out.Strides[0] + h * Out.Strides[1] + i * Out.Strides[2] +
                   e * Out.Strides[3]] =
              Sk == 0 || (EmptyRowsZero && Max == -INFINITY)
                  ? 0.f
                  : static_cast<float>(Acc / Sum);
        }
      }
  return {};
}

std::string runReferenceExternal(ExternalFunc Func, const TensorRef &Out,
                                 const std::vector<TensorRef> &Ins,
                                 const std::vector<int64_t> &IntArgs,
                                 const std::vector<double> &FloatArgs) {
  switch (Func) {
  case ExternalFunc::Attention:
    return attention(Out, Ins, FloatArgs.at(0),
                     FloatArgs.size() == 2 && FloatArgs[1] != 0);
  case ExternalFunc::Conv2d:
    return conv2d(Out, Ins, IntArgs);
  case ExternalFunc::PackConvWeights:
    return packConvWeights(Out, Ins[0], IntArgs.at(0));
  case ExternalFunc::Matmul:
    return matmul(Out, Ins[0], Ins[1], nullptr, 0, 1);
  case ExternalFunc::Addmm: {
    double Beta = FloatArgs.size() == 2 ? FloatArgs[0] : 1;
    double Alpha = FloatArgs.size() == 2 ? FloatArgs[1] : 1;
    return matmul(Out, Ins[1], Ins[2], &Ins[0], Beta, Alpha);
  }
  }
  return "unknown external function";
}

} // namespace nnc
