//===- OneDNNMatmul.cpp - nnc_aten_matmul on oneDNN -----------------------===//
//
// A matmul of 2-D or batched 3-D tensors, on the buffers' own strides; one
// primitive per shape, strides and thread count, kept in the primitive cache.
//
//===----------------------------------------------------------------------===//
#include "OneDNNCommon.h"
#include "nnc/Runtime/Runtime.h"

#include <omp.h>

namespace nnc::onednn {

using namespace detail;

namespace {

struct MatmulEntry {
  dnnl::matmul Prim;
  memory::desc A, B, C, Scratch;
  std::string Impl;
};

PrimitiveCache<MatmulEntry> MatmulCache;

} // namespace

int32_t matmul(const Tensor &Out, const Tensor &A, const Tensor &B,
               std::string &Err) {
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
  std::string K = "matmul " + shape(Out) + shape(A) + shape(B) +
                  " threads=" + std::to_string(omp_get_max_threads());
  try {
    std::shared_ptr<MatmulEntry> E = MatmulCache.find(K);
    if (!E) {
      E = std::make_shared<MatmulEntry>();
      E->A = descOf(A);
      E->B = descOf(B);
      E->C = descOf(Out);
      dnnl::primitive_attr Attr;
      Attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::matmul::primitive_desc PD(dnnl::matmul::desc(E->A, E->B, E->C),
                                      Attr, engine());
      E->Prim = dnnl::matmul(PD);
      E->Scratch = PD.scratchpad_desc();
      E->Impl = PD.impl_info_str();
      addRuntimeNote(false, "matmul " + sizes(A) + " @ " + sizes(B) + " -> " +
                                sizes(Out) + ": " + E->Impl);
      MatmulCache.insert(K, E, [&](CacheStats &S) { S.LastImpl = E->Impl; });
    }
    std::unordered_map<int, memory> Args = {
        {DNNL_ARG_SRC, memory(E->A, engine(), A.Data)},
        {DNNL_ARG_WEIGHTS, memory(E->B, engine(), B.Data)},
        {DNNL_ARG_DST, memory(E->C, engine(), Out.Data)}};
    runWith(E->Prim, Args, E->Scratch);
    return 0;
  } catch (const dnnl::error &Ex) {
    Err = std::string("oneDNN: ") + Ex.what();
    return 1;
  }
}

} // namespace nnc::onednn
