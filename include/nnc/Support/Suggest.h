//===- Suggest.h - "did you mean" for unknown names -------------*- C++ -*-===//
#ifndef NNC_SUPPORT_SUGGEST_H
#define NNC_SUPPORT_SUGGEST_H

#include <string>
#include <string_view>
#include <vector>

namespace nnc {

/// The candidate most likely meant by Name: equal ignoring case, or the
/// closest by edit distance when at most a third of Name's letters (at
/// least one) differ. Empty when none is that close.
std::string closestName(std::string_view Name,
                        const std::vector<std::string> &Candidates);

/// "; did you mean 'X'?" for the closest candidate, or "".
std::string didYouMean(std::string_view Name,
                       const std::vector<std::string> &Candidates);

} // namespace nnc

#endif // NNC_SUPPORT_SUGGEST_H
