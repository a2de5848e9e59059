//===- Suggest.cpp - "did you mean" for unknown names ---------------------===//
#include "nnc/Support/Suggest.h"

#include <algorithm>
#include <cctype>

namespace nnc {

namespace {

std::string lower(std::string_view S) {
  std::string R(S);
  for (char &C : R)
    C = static_cast<char>(std::tolower(static_cast<unsigned char>(C)));
  return R;
}

/// Edits (insert, delete, replace, swap two neighbours) from A to B: the
/// optimal string alignment distance, so that a swapped pair is one typo.
size_t editDistance(std::string_view A, std::string_view B) {
  std::vector<std::vector<size_t>> D(A.size() + 1,
                                     std::vector<size_t>(B.size() + 1));
  for (size_t I = 0; I <= A.size(); ++I)
    D[I][0] = I;
  for (size_t J = 0; J <= B.size(); ++J)
    D[0][J] = J;
  for (size_t I = 1; I <= A.size(); ++I)
    for (size_t J = 1; J <= B.size(); ++J) {
      D[I][J] = std::min({D[I - 1][J] + 1, D[I][J - 1] + 1,
                          D[I - 1][J - 1] + (A[I - 1] == B[J - 1] ? 0 : 1)});
      if (I > 1 && J > 1 && A[I - 1] == B[J - 2] && A[I - 2] == B[J - 1])
        D[I][J] = std::min(D[I][J], D[I - 2][J - 2] + 1);
    }
  return D[A.size()][B.size()];
}

} // namespace

std::string closestName(std::string_view Name,
                        const std::vector<std::string> &Candidates) {
  std::string Lower = lower(Name);
  for (const std::string &C : Candidates)
    if (C != Name && lower(C) == Lower)
      return C;
  size_t Limit = std::max<size_t>(1, Name.size() / 3);
  std::string Best;
  size_t BestDistance = Limit + 1;
  for (const std::string &C : Candidates) {
    if (C == Name)
      continue;
    size_t D = editDistance(Lower, lower(C));
    if (D < BestDistance) {
      Best = C;
      BestDistance = D;
    }
  }
  return Best;
}

std::string didYouMean(std::string_view Name,
                       const std::vector<std::string> &Candidates) {
  std::string C = closestName(Name, Candidates);
  return C.empty() ? "" : "; did you mean '" + C + "'?";
}

} // namespace nnc
