"""nnc-jit from Python: compile .nnc kernels and call them on NumPy arrays and
torch tensors, zero-copy (docs/python.md).

    import nncjit, numpy as np
    f = nncjit.compile('''
    kernel scale(in x: f32[64], out y: f32[64]) {
      for (int64_t i = 0ll; i < 64ll; i++) {
        y[i] = x[i] * 2.f;
      }
    }''', threads=2)
    y = f(np.ones(64, np.float32))      # the output is allocated and returned

`nncjit.torch` runs a PyTorch model's fusion groups on nnc-jit.
"""
from ._nncjit import (Error, Function, Kernel, Module, NNCStatement,
                      cache_budget, cache_stats, compile, llvm_ir, lower, parse,
                      parse_nnc_statement, print, remarks, set_cache_budget)

__all__ = ["Error", "Function", "Kernel", "Module", "NNCStatement",
           "cache_budget", "cache_stats", "compile", "llvm_ir", "lower", "parse",
           "parse_nnc_statement", "print", "remarks", "set_cache_budget"]
