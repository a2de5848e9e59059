//===- LowerExpressions.cpp - Types, values and expressions ---------------===//
//
// Registers and memory types, f16/bf16 rounding, element loads and stores,
// and every expression: arithmetic with the interpreter's wrapping and NaN
// rules, casts, comparisons and intrinsics (inline or vector-math calls).
//
//===----------------------------------------------------------------------===//
#include "KernelLowering.h"

using namespace llvm;

namespace nnc::codegen {

/// Rounds a float register to f16/bf16 precision; other types unchanged.
Value *KernelLowering::roundTo(DType T, Value *V) {
  if (T == DType::F16)
    return B.CreateFPExt(B.CreateFPTrunc(V, B.getHalfTy()), B.getFloatTy());
  if (T == DType::BF16)
    return bf16BitsToFloat(floatToBF16Bits(V));
  return V;
}

Value *KernelLowering::floatToBF16Bits(Value *V) {
  // Round to nearest even; NaN stays a quiet NaN (as floatToBF16Bits).
  Value *Bits = B.CreateBitCast(V, B.getInt32Ty());
  Value *Lsb = B.CreateAnd(B.CreateLShr(Bits, 16), 1);
  Value *Rounded = B.CreateAdd(Bits, B.CreateAdd(B.getInt32(0x7fff), Lsb));
  Value *Quiet = B.CreateOr(Bits, B.getInt32(0x400000));
  Value *IsNan = B.CreateFCmpUNO(V, V);
  Value *R = B.CreateSelect(IsNan, Quiet, Rounded);
  return B.CreateTrunc(B.CreateLShr(R, 16), B.getInt16Ty());
}

Value *KernelLowering::bf16BitsToFloat(Value *H) {
  Value *W = B.CreateShl(B.CreateZExt(H, B.getInt32Ty()), 16);
  return B.CreateBitCast(W, B.getFloatTy());
}

Value *KernelLowering::loadElem(DType T, Value *Ptr) {
  Type *MT = memType(T);
  LoadInst *L = B.CreateAlignedLoad(MT, Ptr, Align(dtypeSize(T)));
  switch (T) {
  case DType::Bool:
    return B.CreateICmpNE(L, B.getInt8(0));
  case DType::F16:
    return B.CreateFPExt(L, B.getFloatTy());
  case DType::BF16:
    return bf16BitsToFloat(L);
  default:
    return L;
  }
}

void KernelLowering::storeElem(DType T, Value *Ptr, Value *V) {
  switch (T) {
  case DType::Bool:
    V = B.CreateZExt(V, B.getInt8Ty());
    break;
  case DType::F16:
    V = B.CreateFPTrunc(V, B.getHalfTy());
    break;
  case DType::BF16: // Already rounded: take the high half.
    V = B.CreateTrunc(B.CreateLShr(B.CreateBitCast(V, B.getInt32Ty()), 16),
                      B.getInt16Ty());
    break;
  default:
    break;
  }
  B.CreateAlignedStore(V, Ptr, Align(dtypeSize(T)));
}

Value *KernelLowering::cmp(CmpOp Op, Value *X, Value *Y, DType T) {
  if (isFloat(T)) {
    switch (Op) {
    case CmpOp::EQ:
      return B.CreateFCmpOEQ(X, Y);
    case CmpOp::NE:
      return B.CreateFCmpUNE(X, Y);
    case CmpOp::LT:
      return B.CreateFCmpOLT(X, Y);
    case CmpOp::LE:
      return B.CreateFCmpOLE(X, Y);
    case CmpOp::GT:
      return B.CreateFCmpOGT(X, Y);
    case CmpOp::GE:
      return B.CreateFCmpOGE(X, Y);
    }
  }
  bool S = isSigned(T);
  switch (Op) {
  case CmpOp::EQ:
    return B.CreateICmpEQ(X, Y);
  case CmpOp::NE:
    return B.CreateICmpNE(X, Y);
  case CmpOp::LT:
    return S ? B.CreateICmpSLT(X, Y) : B.CreateICmpULT(X, Y);
  case CmpOp::LE:
    return S ? B.CreateICmpSLE(X, Y) : B.CreateICmpULE(X, Y);
  case CmpOp::GT:
    return S ? B.CreateICmpSGT(X, Y) : B.CreateICmpUGT(X, Y);
  case CmpOp::GE:
    return S ? B.CreateICmpSGE(X, Y) : B.CreateICmpUGE(X, Y);
  }
  return nullptr;
}

Value *KernelLowering::lower(const Expr &E) {
  switch (E->Kind) {
  case ExprKind::IntImm:
    return ConstantInt::get(regType(E->Type), cast<IntImm>(E)->Value, true);
  case ExprKind::FloatImm:
    return ConstantFP::get(regType(E->Type), cast<FloatImm>(E)->Value);
  case ExprKind::Var:
    return lookupVar(cast<Var>(E)->Name);
  case ExprKind::Load: {
    auto *L = cast<Load>(E);
    if (auto It = AccLoads.find(L); It != AccLoads.end())
      return B.CreateLoad(It->second->getAllocatedType(), It->second);
    return loadElem(L->Type, address(L, L->Buf, L->Indices, L->Loc));
  }
  case ExprKind::Binary:
    return lowerBinary(cast<Binary>(E));
  case ExprKind::Neg: {
    auto *N = cast<Neg>(E);
    Value *A = lower(N->A);
    return isFloat(N->Type) ? B.CreateFNeg(A) : B.CreateNeg(A);
  }
  case ExprKind::CompareSelect: {
    auto *C = cast<CompareSelect>(E);
    Value *X = lower(C->A), *Y = lower(C->B);
    Value *T = lower(C->T), *F = lower(C->F);
    return B.CreateSelect(cmp(C->Op, X, Y, C->A->Type), T, F);
  }
  case ExprKind::IfThenElse: {
    auto *I = cast<IfThenElse>(E);
    Value *C = toCond(lower(I->C), I->C->Type);
    Speculatable ST(SafeAccesses), SF(SafeAccesses);
    ST.visit(I->T);
    SF.visit(I->F);
    if (ST.Ok && SF.Ok)
      return B.CreateSelect(C, lower(I->T), lower(I->F));
    return branch(
        C, [&] { return lower(I->T); }, [&] { return lower(I->F); }, "ite");
  }
  case ExprKind::Cast: {
    auto *C = cast<Cast>(E);
    return lowerCast(C->A->Type, C->Type, lower(C->A));
  }
  case ExprKind::BitCast: {
    auto *C = cast<BitCast>(E);
    Value *V = lower(C->A);
    DType From = C->A->Type, To = C->Type;
    // Through the memory representation, where f16/bf16 have their bits.
    if (From == DType::F16)
      V = B.CreateBitCast(B.CreateFPTrunc(V, B.getHalfTy()), B.getInt16Ty());
    else if (From == DType::BF16)
      V = floatToBF16Bits(V);
    if (To == DType::F16)
      return B.CreateFPExt(B.CreateBitCast(V, B.getHalfTy()), B.getFloatTy());
    if (To == DType::BF16)
      return bf16BitsToFloat(B.CreateBitCast(V, B.getInt16Ty()));
    return B.CreateBitCast(V, regType(To));
  }
  case ExprKind::Intrinsic:
    return lowerIntrinsic(cast<Intrinsic>(E));
  }
  return nullptr;
}

Value *KernelLowering::lowerBinary(const Binary *Op) {
  DType T = Op->Type;
  if (isFloat(T)) {
    // Contraction: a*b+c, c+a*b, a*b-c, c-a*b on f32/f64 become one fma.
    if (Opts.FPContract && (T == DType::F32 || T == DType::F64) &&
        (Op->Op == BinOp::Add || Op->Op == BinOp::Sub)) {
      auto *MA = dyn_cast<Binary>(Op->A);
      auto *MB = dyn_cast<Binary>(Op->B);
      bool LeftMul = MA && MA->Op == BinOp::Mul;
      bool RightMul = MB && MB->Op == BinOp::Mul;
      if (LeftMul || RightMul) {
        const Binary *Mul = LeftMul ? MA : MB;
        Value *X = lower(Mul->A), *Y = lower(Mul->B);
        Value *C = lower(LeftMul ? Op->B : Op->A);
        if (Op->Op == BinOp::Sub) {
          if (LeftMul)
            C = B.CreateFNeg(C);
          else
            X = B.CreateFNeg(X);
        }
        return B.CreateIntrinsic(llvm::Intrinsic::fma, {X->getType()},
                                 {X, Y, C});
      }
    }
    Value *X = lower(Op->A), *Y = lower(Op->B);
    Value *R = nullptr;
    switch (Op->Op) {
    case BinOp::Add:
      R = B.CreateFAdd(X, Y);
      break;
    case BinOp::Sub:
      R = B.CreateFSub(X, Y);
      break;
    case BinOp::Mul:
      R = B.CreateFMul(X, Y);
      break;
    case BinOp::Div:
      R = B.CreateFDiv(X, Y);
      break;
    case BinOp::Mod:
      R = B.CreateFRem(X, Y);
      break;
    case BinOp::Max:
    case BinOp::Min: {
      Value *Pick =
          Op->Op == BinOp::Max ? B.CreateFCmpOGT(X, Y) : B.CreateFCmpOLT(X, Y);
      R = B.CreateSelect(Pick, X, Y);
      R = B.CreateSelect(B.CreateFCmpUNO(Y, Y), Y, R);
      R = B.CreateSelect(B.CreateFCmpUNO(X, X), X, R);
      break;
    }
    default:
      assert(false && "bitwise operator on floats");
    }
    return roundTo(T, R);
  }
  Value *X = lower(Op->A), *Y = lower(Op->B);
  if (T == DType::Bool && Op->Op != BinOp::And && Op->Op != BinOp::Or &&
      Op->Op != BinOp::Xor) {
    // Compute in i32 and normalize: bool arithmetic is `!= 0` of the result.
    X = B.CreateZExt(X, B.getInt32Ty());
    Y = B.CreateZExt(Y, B.getInt32Ty());
    Value *R;
    switch (Op->Op) {
    case BinOp::Add:
      R = B.CreateAdd(X, Y);
      break;
    case BinOp::Sub:
      R = B.CreateSub(X, Y);
      break;
    case BinOp::Mul:
      R = B.CreateMul(X, Y);
      break;
    case BinOp::Div:
    case BinOp::Mod:
      R = lowerIntDivMod(Op, X, Y);
      break;
    case BinOp::Max:
      R = B.CreateSelect(B.CreateICmpUGT(X, Y), X, Y);
      break;
    case BinOp::Min:
      R = B.CreateSelect(B.CreateICmpULT(X, Y), X, Y);
      break;
    default: // Shifts by an amount modulo 1, i.e. 0.
      R = X;
      break;
    }
    return B.CreateICmpNE(R, B.getInt32(0));
  }
  bool S = isSigned(T);
  unsigned Bits = intBits(T);
  switch (Op->Op) {
  case BinOp::Add:
    return B.CreateAdd(X, Y);
  case BinOp::Sub:
    return B.CreateSub(X, Y);
  case BinOp::Mul:
    return B.CreateMul(X, Y);
  case BinOp::Div:
  case BinOp::Mod:
    return lowerIntDivMod(Op, X, Y);
  case BinOp::And:
    return B.CreateAnd(X, Y);
  case BinOp::Or:
    return B.CreateOr(X, Y);
  case BinOp::Xor:
    return B.CreateXor(X, Y);
  case BinOp::Shl:
  case BinOp::Shr: {
    Value *Amt = B.CreateAnd(Y, ConstantInt::get(Y->getType(), Bits - 1));
    if (Op->Op == BinOp::Shl)
      return B.CreateShl(X, Amt);
    return S ? B.CreateAShr(X, Amt) : B.CreateLShr(X, Amt);
  }
  case BinOp::Max:
    return B.CreateSelect(S ? B.CreateICmpSGT(X, Y) : B.CreateICmpUGT(X, Y), X,
                          Y);
  case BinOp::Min:
    return B.CreateSelect(S ? B.CreateICmpSLT(X, Y) : B.CreateICmpULT(X, Y), X,
                          Y);
  }
  return nullptr;
}

Value *KernelLowering::lowerIntDivMod(const Binary *Op, Value *X, Value *Y) {
  bool IsDiv = Op->Op == BinOp::Div;
  bool S = isSigned(Op->Type);
  Type *Ty = X->getType();
  if (auto C = getConstInt(Op->B); C && *C != 0 && *C != -1) {
    if (IsDiv)
      return S ? B.CreateSDiv(X, Y) : B.CreateUDiv(X, Y);
    return S ? B.CreateSRem(X, Y) : B.CreateURem(X, Y);
  }
  if (!getConstInt(Op->B))
    checkError(B.CreateICmpEQ(Y, ConstantInt::get(Ty, 0)),
               ErrorKind::DivisionByZero, Op->Loc);
  if (!S)
    return IsDiv ? B.CreateUDiv(X, Y) : B.CreateURem(X, Y);
  // x / -1 is -x (wrapping) and x % -1 is 0, without the overflow trap.
  Value *IsM1 = B.CreateICmpEQ(Y, ConstantInt::getSigned(Ty, -1));
  Value *SafeY = B.CreateSelect(IsM1, ConstantInt::get(Ty, 1), Y);
  if (IsDiv)
    return B.CreateSelect(IsM1, B.CreateNeg(X), B.CreateSDiv(X, SafeY));
  return B.CreateSelect(IsM1, ConstantInt::get(Ty, 0), B.CreateSRem(X, SafeY));
}

Value *KernelLowering::lowerCast(DType From, DType To, Value *V) {
  if (From == To)
    return V;
  Type *RT = regType(To);
  if (To == DType::Bool)
    return isFloat(From) ? B.CreateFCmpUNE(V, ConstantFP::get(V->getType(), 0))
                         : B.CreateICmpNE(V, ConstantInt::get(V->getType(), 0));
  if (isFloat(To)) {
    if (isFloat(From)) {
      // Narrowing to f16/bf16 goes through f32, as the interpreter does.
      if (From == DType::F64 && To != DType::F64)
        V = B.CreateFPTrunc(V, B.getFloatTy());
      else if (To == DType::F64)
        V = B.CreateFPExt(V, B.getDoubleTy());
      return roundTo(To, V);
    }
    Type *Via = To == DType::F64 ? B.getDoubleTy() : B.getFloatTy();
    V = isSigned(From) ? B.CreateSIToFP(V, Via) : B.CreateUIToFP(V, Via);
    return roundTo(To, V);
  }
  if (isFloat(From)) {
    llvm::Intrinsic::ID Id = isSigned(To) ? llvm::Intrinsic::fptosi_sat
                                          : llvm::Intrinsic::fptoui_sat;
    return B.CreateIntrinsic(Id, {RT, V->getType()}, {V});
  }
  unsigned FB = intBits(From), TB = intBits(To);
  if (TB < FB)
    return B.CreateTrunc(V, RT);
  if (TB == FB)
    return V;
  return isSigned(From) ? B.CreateSExt(V, RT) : B.CreateZExt(V, RT);
}

Value *KernelLowering::callMath(const std::string &Name, ArrayRef<Value *> Args,
                                Type *Ty) {
  std::vector<Type *> Tys(Args.size(), Ty);
  FunctionCallee F =
      M.getOrInsertFunction(Name, FunctionType::get(Ty, Tys, false));
  if (auto *Fn = llvm::dyn_cast<Function>(F.getCallee())) {
    Fn->setDoesNotAccessMemory();
    Fn->setDoesNotThrow();
    Fn->setWillReturn();
  }
  CallInst *C = B.CreateCall(F, Args);
  C->setDoesNotAccessMemory();
  C->setDoesNotThrow();
  return C;
}

Value *KernelLowering::lowerIntrinsic(const Intrinsic *Op) {
  DType T = Op->Args[0]->Type;
  std::vector<Value *> A;
  for (const Expr &E : Op->Args)
    A.push_back(lower(E));
  if (!isFloat(T)) { // abs on an integer; wraps for the minimum value.
    Value *X = A[0];
    Value *Neg = B.CreateICmpSLT(X, ConstantInt::get(X->getType(), 0));
    return isSigned(T) ? B.CreateSelect(Neg, B.CreateNeg(X), X) : X;
  }
  Type *Ty = A[0]->getType();
  bool Single = Ty->isFloatTy();
  auto Unary = [&](llvm::Intrinsic::ID Id) {
    return B.CreateUnaryIntrinsic(Id, A[0]);
  };
  Value *R = nullptr;
  switch (Op->Op) {
  case IntrinsicOp::Abs:
  case IntrinsicOp::Fabs:
    R = Unary(llvm::Intrinsic::fabs);
    break;
  case IntrinsicOp::Floor:
    R = Unary(llvm::Intrinsic::floor);
    break;
  case IntrinsicOp::Ceil:
    R = Unary(llvm::Intrinsic::ceil);
    break;
  case IntrinsicOp::Round:
    R = Unary(llvm::Intrinsic::roundeven);
    break;
  case IntrinsicOp::Trunc:
    R = Unary(llvm::Intrinsic::trunc);
    break;
  case IntrinsicOp::Frac:
    R = B.CreateFSub(A[0], Unary(llvm::Intrinsic::trunc));
    break;
  case IntrinsicOp::Sqrt:
    R = Unary(llvm::Intrinsic::sqrt);
    break;
  case IntrinsicOp::Rsqrt:
    R = B.CreateFDiv(ConstantFP::get(Ty, 1.0), Unary(llvm::Intrinsic::sqrt));
    break;
  case IntrinsicOp::IsNan:
    return B.CreateZExt(B.CreateFCmpUNO(A[0], A[0]), B.getInt32Ty());
  case IntrinsicOp::Fmod:
    R = B.CreateFRem(A[0], A[1]);
    break;
  case IntrinsicOp::Sigmoid: {
    if (Opts.Math == VectorMath::Inline &&
        (R = emitInlineMath(B, Op->Op, A[0])))
      break;
    // e = exp(-|x|) never overflows: 1 / (1 + e) for x >= 0, e / (1 + e)
    // below, which keeps the denormal results of x < -87 (f32).
    Value *E = callMath(Single ? "expf" : "exp",
                        {B.CreateFNeg(Unary(llvm::Intrinsic::fabs))}, Ty);
    Value *One = ConstantFP::get(Ty, 1.0);
    Value *Num =
        B.CreateSelect(B.CreateFCmpOLT(A[0], ConstantFP::get(Ty, 0.0)), E, One);
    R = B.CreateFDiv(Num, B.CreateFAdd(One, E));
    break;
  }
  default: {
    if (Opts.Math == VectorMath::Inline &&
        (R = emitInlineMath(B, Op->Op, A[0])))
      break;
    std::string Name = intrinsicName(Op->Op);
    R = callMath(Single ? Name + "f" : Name, A, Ty);
    break;
  }
  }
  return roundTo(T, R);
}

} // namespace nnc::codegen
