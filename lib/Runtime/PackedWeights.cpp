//===- PackedWeights.cpp - Convolution weights packed once ----------------===//
//
// nnc_runtime_pack_conv_weights, the storage of nnc_conv_pack_weights (the
// weights of a generated convolution in blocks of output channels,
// docs/Passes.md, generate-convs). Weights are constants, as they are to
// the oneDNN calls (docs/Runtime.md): a packed copy is made once per
// identity (address, shape, and a checksum of sampled values) and block,
// and kept with the oneDNN caches' reordered weights: under their lock,
// within their budget (least recently used first out), emptied with them
// when the last compiled kernel goes. A call holds its copy through a
// handle until it frees the buffer, so an eviction never frees weights a
// running kernel reads.
//
//===----------------------------------------------------------------------===//
#include "OneDNNCommon.h"

#include <cstdint>
#include <cstdlib>

using namespace nnc::onednn;
using namespace nnc::onednn::detail;

namespace {

class PackedCache final : public ClearableCache {
public:
  struct Entry {
    std::shared_ptr<float> Data;
    size_t Bytes = 0;
    uint64_t Used = 0;
  };
  std::map<std::string, Entry> Map;
  size_t Bytes = 0;

  PackedCache() {
    std::lock_guard<std::mutex> L(cacheMutex());
    cachesLocked().push_back(this);
  }
  void clearLocked() override {
    Map.clear();
    Bytes = 0;
  }
  size_t sizeLocked() const override { return Map.size(); }
  size_t bytesLocked() const override { return Bytes; }
  uint64_t oldestUseLocked() const override {
    uint64_t Oldest = UINT64_MAX;
    for (const auto &[Key, E] : Map)
      Oldest = std::min(Oldest, E.Used);
    return Oldest;
  }
  void dropOldestLocked() override {
    auto Oldest = std::min_element(Map.begin(), Map.end(),
                                   [](const auto &A, const auto &B) {
                                     return A.second.Used < B.second.Used;
                                   });
    if (Oldest == Map.end())
      return;
    Bytes -= Oldest->second.Bytes;
    Map.erase(Oldest);
  }
  void releaseOwnerLocked(const void *) override {} // Never owned.
};

/// The cache; never destroyed (a kernel may go after static destructors).
PackedCache &packedCache() {
  static auto *C = new PackedCache;
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
    PackedCache &C = packedCache();
    std::shared_ptr<float> Data;
    {
      std::lock_guard<std::mutex> L(cacheMutex());
      auto It = C.Map.find(Key);
      if (It != C.Map.end()) {
        It->second.Used = tickLocked();
        Data = It->second.Data;
      }
    }
    if (!Data) {
      size_t Bytes = (size_t(O) * I * KH * KW * sizeof(float) + 63) / 64 * 64;
      Data.reset(static_cast<float *>(std::aligned_alloc(64, Bytes)),
                 std::free);
      if (!Data) {
        nnc::setLastError("cannot allocate " + std::to_string(Bytes) +
                          " bytes of packed weights");
        return nullptr;
      }
      // [O / B, KH, KW, I, B] = w[cb * B + o, i, kh, kw], read in w's order.
      float *D = Data.get();
      for (int64_t Oc = 0; Oc < O; ++Oc)
        for (int64_t Ic = 0; Ic < I; ++Ic)
          for (int64_t Kh = 0; Kh < KH; ++Kh)
            for (int64_t Kw = 0; Kw < KW; ++Kw)
              D[(((Oc / Block * KH + Kh) * KW + Kw) * I + Ic) * Block +
                Oc % Block] = W[Oc * Strides[0] + Ic * Strides[1] +
                                Kh * Strides[2] + Kw * Strides[3]];
      std::lock_guard<std::mutex> L(cacheMutex());
      auto [It, New] = C.Map.try_emplace(Key);
      if (New) {
        It->second = {Data, Bytes, tickLocked()};
        C.Bytes += Bytes;
        evictLocked(It->second.Used);
      } else {
        Data = It->second.Data; // Another thread packed them first.
      }
    }
    *Handle = new std::shared_ptr<float>(Data);
    return Data.get();
  } catch (const std::exception &E) {
    nnc::setLastError(std::string("nnc_conv_pack_weights: ") + E.what());
    return nullptr;
  }
}

void nnc_runtime_release_packed(void *Handle) {
  delete static_cast<std::shared_ptr<float> *>(Handle);
}

} // extern "C"
