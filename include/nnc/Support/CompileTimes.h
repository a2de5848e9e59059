//===- CompileTimes.h - Wall time of each compile phase ---------*- C++ -*-===//
#ifndef NNC_SUPPORT_COMPILETIMES_H
#define NNC_SUPPORT_COMPILETIMES_H

namespace nnc {

/// Wall time spent in each compile phase, in milliseconds.
struct CompileTimes {
  double Passes = 0;       ///< The IR pipeline (verify, then each pass).
  double Lowering = 0;     ///< IR to LLVM IR.
  double Optimization = 0; ///< LLVM's optimization pipeline.
  double MachineCode = 0;  ///< Instruction selection to an object.
  double Linking = 0;      ///< Loading the object into the JIT.
  bool CacheHit = false;   ///< The object came from the compile cache.
  double total() const {
    return Passes + Lowering + Optimization + MachineCode + Linking;
  }
};

} // namespace nnc

#endif // NNC_SUPPORT_COMPILETIMES_H
