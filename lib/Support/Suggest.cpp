//===- Suggest.cpp - "did you mean" for unknown names ---------------------===//
#include "nnc/Support/Suggest.h"

#include <algorithm>
#include <cctype>
#include <numeric>

namespace nnc {

namespace {

std::string lower(std::string_view S) {
  std::string R(S);
  for (char &C : R)
    C = static_cast<char>(std::tolower(static_cast<unsigned char>(C)));
  return R;
}

/// Levenshtein distance, one row at a time.
size_t editDistance(std::string_view A, std::string_view B) {
  std::vector<size_t> Row(B.size() + 1);
  std::iota(Row.begin(), Row.end(), 0);
  for (size_t I = 1; I <= A.size(); ++I) {
    size_t Diagonal = Row[0];
    Row[0] = I;
    for (size_t J = 1; J <= B.size(); ++J) {
      size_t Up = Row[J];
      Row[J] = std::min({Row[J] + 1, Row[J - 1] + 1,
                         Diagonal + (A[I - 1] == B[J - 1] ? 0 : 1)});
      Diagonal = Up;
    }
  }
  return Row[B.size()];
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
