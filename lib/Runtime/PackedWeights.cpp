//===- PackedWeights.cpp - Convolution weights packed once ----------------===//
//
// nnc_runtime_pack_conv_weights, the storage of nnc_conv_pack_weights (the
// weights of a generated convolution in blocks of output channels,
// docs/Passes.md, generate-convs). Weights are constants, as they are to
// the oneDNN calls (docs/Runtime.md): a packed copy is made once per
// identity (address, shape, and a checksum of sampled values) and block,
// in a cache like the oneDNN primitives' (PrimitiveCache): owned by the
// functions that use it, replaced when the weights at its address change,
// within the caches' common budget, emptied when the last compiled kernel
// goes. A call holds its copy through a handle until it frees the buffer,
// so an eviction never frees weights a running kernel reads.
//
//===----------------------------------------------------------------------===//
#include "OneDNNCommon.h"

#include <cstdint>
#include <cstdlib>

using namespace nnc::onednn;
using namespace nnc::onednn::detail;

namespace {

/// One packed copy of a convolution's weights.
struct Packed {
  std::shared_ptr<float> Data;
  size_t Bytes = 0;
  size_t bytes() const { return Bytes; }
};

/// The copies, a cache like oneDNN's primitives' (OneDNNCommon.h): never
/// destroyed, since a kernel may go after static destructors ran.
PrimitiveCache<Packed> &packedCache() {
  static auto *C = new PrimitiveCache<Packed>;
  return *C;
}

} // namespace

extern "C" {

float *nnc_runtime_pack_conv_weights(const float *W, const int64_t *Sizes,
                                     const int64_t *Strides, int64_t Block,
                                     void **Handle) {
  try {
    Tensor T{const_cast<float *>(W), {Sizes, Sizes + 4}, {Strides, Strides + 4}};
    int64_t O = Sizes[0], I = Sizes[1], KH = Sizes[2], KW = Sizes[3];
    if (Block < 1 || O % Block) {
      nnc::setLastError("nnc_conv_pack_weights: the block does not divide "
                        "the output channels");
      return nullptr;
    }
    std::string Key = weightsKey(T) + " block=" + std::to_string(Block);
    std::shared_ptr<Packed> E = packedCache().find(Key);
    if (!E) {
      E = std::make_shared<Packed>();
      E->Bytes = (size_t(O) * I * KH * KW * sizeof(float) + 63) / 64 * 64;
      E->Data.reset(static_cast<float *>(std::aligned_alloc(64, E->Bytes)),
                    std::free);
      if (!E->Data) {
        nnc::setLastError("cannot allocate " + std::to_string(E->Bytes) +
                          " bytes of packed weights");
        return nullptr;
      }
      // [O / B, KH, KW, I, B] = w[cb * B + o, i, kh, kw], read in w's order.
      float *D = E->Data.get();
      for (int64_t Oc = 0; Oc < O; ++Oc)
        for (int64_t Ic = 0; Ic < I; ++Ic)
          for (int64_t Kh = 0; Kh < KH; ++Kh)
            for (int64_t Kw = 0; Kw < KW; ++Kw)
              D[(((Oc / Block * KH + Kh) * KW + Kw) * I + Ic) * Block +
                Oc % Block] = W[Oc * Strides[0] + Ic * Strides[1] +
                                Kh * Strides[2] + Kw * Strides[3]];
      // (Where another thread kept its copy first, this call reads its own.)
      packedCache().insert(Key, E, [](CacheStats &) {});
    }
    *Handle = new std::shared_ptr<Packed>(E);
    return E->Data.get();
  } catch (const std::exception &E) {
    nnc::setLastError(std::string("nnc_conv_pack_weights: ") + E.what());
    return nullptr;
  }
}

void nnc_runtime_release_packed(void *Handle) {
  delete static_cast<std::shared_ptr<Packed> *>(Handle);
}

} // extern "C"
