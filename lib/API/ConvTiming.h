//===- ConvTiming.h - Time a convolution generated and through oneDNN --*- C++ -*-===//
#ifndef NNC_LIB_API_CONVTIMING_H
#define NNC_LIB_API_CONVTIMING_H

#include "nnc/API/Compiler.h"

#include <optional>

namespace nnc {

/// The fastest of a few interleaved runs of a convolution call compiled
/// alone with --conv=generated and with --conv=onednn (ConvTiming.cpp);
/// nothing if it cannot be compiled or run alone.
std::optional<ConvTimes> timeConvolution(const ExternalCall &Call,
                                         const CompileOptions &Opts);

} // namespace nnc

#endif // NNC_LIB_API_CONVTIMING_H
