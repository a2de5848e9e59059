//===- Verifier.cpp - IR invariants ---------------------------------------===//
#include "nnc/IR/Verifier.h"
#include "nnc/IR/Equality.h"
#include "nnc/IR/ExternalFunctions.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/IR/Printer.h"

#include <map>
#include <unordered_map>
#include <unordered_set>

namespace nnc {

std::optional<int64_t> constantStorageSize(const std::vector<Expr> &Dims,
                                           const std::vector<Expr> &Strides) {
  __int128 Size = 1;
  bool Empty = false;
  for (size_t I = 0; I < Dims.size(); ++I) {
    auto D = evaluateConstant(Dims[I]);
    auto S = I < Strides.size() ? evaluateConstant(Strides[I]) : std::nullopt;
    if (!D || !S)
      return std::nullopt;
    if (*D <= 0) {
      Empty = true;
      continue;
    }
    Size += static_cast<__int128>(*D - 1) * (*S < 0 ? -*S : *S);
    if (Size > INT64_MAX)
      return INT64_MAX;
  }
  return Empty ? 0 : static_cast<int64_t>(Size);
}

std::optional<int64_t> constantStorageBytes(const BufferNode &B) {
  auto Elems = constantStorageSize(B.Dims, B.Strides);
  int64_t Bytes;
  if (!Elems ||
      __builtin_mul_overflow(*Elems, int64_t(dtypeSize(B.Type)), &Bytes))
    return std::nullopt;
  return Bytes;
}

bool isDenseConstantStorage(const std::vector<Expr> &Dims,
                            const std::vector<Expr> &Strides) {
  auto Spanned = constantStorageSize(Dims, Strides);
  __int128 Elements = 1;
  for (const Expr &D : Dims) {
    auto C = evaluateConstant(D);
    if (!C)
      return false;
    Elements = std::min<__int128>(Elements * std::max<int64_t>(*C, 0),
                                  __int128(INT64_MAX) + 1);
  }
  return Spanned && Elements == *Spanned;
}

namespace {

/// Stops the walk once this many errors are reported.
constexpr unsigned kMaxErrors = 20;

class Verifier : public IRVisitor {
public:
  Verifier(const Kernel &K, DiagnosticEngine &D) : K(K), Diags(D) {}

  bool run() {
    unsigned Before = Diags.numErrors();
    Scopes.emplace_back();
    checkParams();
    if (K.Body)
      visit(K.Body);
    else
      error(K.Loc, "kernel '" + K.Name + "' has no body");
    checkBlockedBuffers();
    return Diags.numErrors() == Before;
  }

private:
  void error(SourceLoc L, std::string Msg) {
    if (NumErrors++ < kMaxErrors)
      Diags.error(L, std::move(Msg));
  }

  static std::string typeStr(DType T) { return std::string(dtypeName(T)); }

  //===--------------------------------------------------------------------===//
  // Names and scopes
  //===--------------------------------------------------------------------===//

  const DType *lookupVar(const std::string &N) const {
    for (auto S = Scopes.rbegin(); S != Scopes.rend(); ++S) {
      auto It = S->find(N);
      if (It != S->end())
        return &It->second;
    }
    return nullptr;
  }

  /// Reports a name the language gives a meaning of its own (see
  /// reservedNameMeaning).
  bool checkNotReserved(const std::string &N, SourceLoc L, const char *What,
                        bool InExpressions = true) {
    if (const char *Meaning = reservedNameMeaning(N, InExpressions)) {
      error(L, std::string(What) + " '" + N + "' is reserved (" + Meaning +
                   ")");
      return false;
    }
    return true;
  }

  /// Reports a name that would shadow a variable or buffer in scope.
  bool checkFreshName(const std::string &N, SourceLoc L, const char *What) {
    if (!checkNotReserved(N, L, What))
      return false;
    if (lookupVar(N) || Declared.count(N)) {
      error(L, std::string(What) + " '" + N +
                   "' reuses a name already in scope");
      return false;
    }
    return true;
  }

  void checkParams() {
    if (K.IsTask &&
        (K.Params.size() < 2 || K.Params[0].isBuffer() ||
         K.Params[1].isBuffer() || K.Params[0].Type != DType::I64 ||
         K.Params[1].Type != DType::I64))
      error(K.Loc, "task '" + K.Name +
                       "' must start with two i64 parameters (begin, end)");
    checkNotReserved(K.Name, K.Loc, K.IsTask ? "task name" : "kernel name",
                     /*InExpressions=*/false);
    std::unordered_set<std::string> Seen;
    for (const Param &P : K.Params) {
      if (!Seen.insert(P.Name).second)
        error(P.Loc, "duplicate parameter '" + P.Name + "'");
      checkNotReserved(P.Name, P.Loc, "parameter");
      if (!P.isBuffer())
        Scopes.back()[P.Name] = P.Type;
    }
    for (const Param &P : K.Params) {
      if (!P.isBuffer())
        continue;
      if (P.Buf->Name != P.Name)
        error(P.Loc, "parameter '" + P.Name + "' names buffer '" +
                         P.Buf->Name + "'");
      if (P.Buf->Role == BufferRole::Temp && !K.IsTask)
        error(P.Loc, "parameter '" + P.Name + "' cannot be a temporary");
      Declared[P.Name] = P.Buf;
      if (P.Buf->isTemp()) // A caller's temporary, passed to a task.
        Live.insert(P.Name);
      checkShape(*P.Buf, "buffer '" + P.Name + "'");
      // A task's buffers are the caller's, whichever chunk it runs.
      if (K.IsTask && K.Params.size() >= 2)
        for (const auto *Es : {&P.Buf->Dims, &P.Buf->Strides})
          for (const Expr &E : *Es)
            for (size_t R = 0; R < 2; ++R)
              if (varsOf(E).count(K.Params[R].Name))
                error(E->Loc, "the sizes of task parameter '" + P.Name +
                                  "' may not use '" + K.Params[R].Name +
                                  "', which differs between chunks");
    }
  }

  /// Dims and strides are integer expressions over constants and scalars.
  void checkShape(const BufferNode &B, const std::string &What) {
    if (B.Strides.size() != B.Dims.size())
      error(B.Loc, What + " has " + std::to_string(B.Dims.size()) +
                       " dims but " + std::to_string(B.Strides.size()) +
                       " strides");
    for (const Expr &D : B.Dims)
      checkShapeExpr(D, What, "dim");
    for (const Expr &S : B.Strides)
      checkShapeExpr(S, What, "stride");
    for (const Expr &D : B.Dims)
      if (auto C = getConstInt(D); C && *C < 0)
        error(D->Loc, What + " has a negative dim (" + std::to_string(*C) +
                          ")");
    for (const Expr &S : B.Strides)
      if (auto C = getConstInt(S); C && *C < 0)
        error(S->Loc, What + " has a negative stride (" + std::to_string(*C) +
                          ")");
  }

  void checkShapeExpr(const Expr &E, const std::string &What,
                      const char *Part) {
    visit(E);
    if (!isIntegral(E->Type))
      error(E->Loc, std::string("a ") + Part + " of " + What +
                        " must be an integer, not " + typeStr(E->Type));
    struct NoLoads : IRVisitor {
      bool HasLoad = false;
      void visitLoad(const Load *) override { HasLoad = true; }
    } V;
    V.visit(E);
    if (V.HasLoad)
      error(E->Loc, std::string("a ") + Part + " of " + What +
                        " cannot read a buffer");
  }

  //===--------------------------------------------------------------------===//
  // Buffers and accesses
  //===--------------------------------------------------------------------===//

  /// Checks that B is declared (as this very buffer) and alive here.
  bool checkLive(const Buffer &B, SourceLoc L) {
    auto It = Declared.find(B->Name);
    if (It == Declared.end()) {
      error(L, "use of undeclared buffer '" + B->Name + "'");
      return false;
    }
    if (It->second != B) {
      error(L, "buffer '" + B->Name + "' does not match its declaration");
      return false;
    }
    if (B->isTemp() && !Live.count(B->Name)) {
      auto Scope = ScopedTo.find(B->Name);
      error(L, Scope != ScopedTo.end()
                   ? "temporary '" + B->Name + "' is used outside " +
                         Scope->second + " that allocates it"
               : Freed.count(B->Name)
                   ? "temporary '" + B->Name + "' is used after its Free"
                   : "temporary '" + B->Name + "' is used before it is "
                                               "allocated");
      return false;
    }
    return true;
  }

  void checkAccess(const Buffer &B, const std::vector<Expr> &Idx, SourceLoc L,
                   bool IsWrite) {
    for (const Expr &I : Idx)
      visit(I);
    if (!checkLive(B, L))
      return;
    if (IsWrite && !B->isWritable())
      error(L, "cannot write to input buffer '" + B->Name + "'");
    unsigned R = B->rank();
    size_t N = Idx.size();
    bool Flat = N == 1 && R != 1;
    if (!(N == R || Flat)) {
      error(L, "buffer '" + B->Name + "' has rank " + std::to_string(R) +
                   " but is indexed with " + std::to_string(N) + " indices");
      return;
    }
    for (const Expr &I : Idx)
      if (!isIntegral(I->Type))
        error(I->Loc, "index into '" + B->Name + "' must be an integer, not " +
                          typeStr(I->Type));
    if (Flat) {
      auto C = getConstInt(Idx[0]);
      auto S = constantStorageSize(B->Dims, B->Strides);
      if (C && S && (*C < 0 || *C >= *S))
        error(Idx[0]->Loc, "index " + std::to_string(*C) +
                               " is out of bounds for '" + B->Name + "' (" +
                               std::to_string(*S) + " elements)");
      return;
    }
    for (size_t D = 0; D < N; ++D) {
      auto C = getConstInt(Idx[D]);
      auto Size = getConstInt(B->Dims[D]);
      if (C && Size && (*C < 0 || *C >= *Size))
        error(Idx[D]->Loc, "index " + std::to_string(*C) +
                               " is out of bounds for dimension " +
                               std::to_string(D) + " of '" + B->Name +
                               "' (size " + std::to_string(*Size) + ")");
    }
  }

  void sameType(const Expr &A, const Expr &B, SourceLoc L, const char *Op) {
    if (A->Type != B->Type)
      error(L, std::string("operands of '") + Op + "' have different types: " +
                   typeStr(A->Type) + " and " + typeStr(B->Type));
  }

  //===--------------------------------------------------------------------===//
  // Expressions
  //===--------------------------------------------------------------------===//

  void visitVar(const Var *Op) override {
    const DType *T = lookupVar(Op->Name);
    if (!T) {
      error(Op->Loc, "use of undeclared variable '" + Op->Name + "'");
      return;
    }
    if (*T != Op->Type)
      error(Op->Loc, "variable '" + Op->Name + "' has type " + typeStr(*T) +
                         ", not " + typeStr(Op->Type));
  }

  void visitLoad(const Load *Op) override {
    PlainUse.emplace(Op->Buf.get(), Op->Loc);
    checkAccess(Op->Buf, Op->Indices, Op->Loc, false);
    if (Op->Type != Op->Buf->Type)
      error(Op->Loc, "load from '" + Op->Buf->Name + "' has the wrong type");
  }

  void visitBinary(const Binary *Op) override {
    IRVisitor::visitBinary(Op);
    const char *S = binOpSpelling(Op->Op);
    sameType(Op->A, Op->B, Op->Loc, S);
    bool Bitwise = Op->Op == BinOp::And || Op->Op == BinOp::Or ||
                   Op->Op == BinOp::Xor || Op->Op == BinOp::Shl ||
                   Op->Op == BinOp::Shr;
    if (Bitwise && isFloat(Op->A->Type))
      error(Op->Loc, std::string("operator '") + S +
                         "' needs integer operands, not " +
                         typeStr(Op->A->Type));
    if (Op->Type != Op->A->Type)
      error(Op->Loc, "binary operation has the wrong result type");
    if ((Op->Op == BinOp::Div || Op->Op == BinOp::Mod) &&
        isIntegral(Op->Type)) {
      if (auto C = getConstInt(Op->B); C && *C == 0)
        error(Op->B->Loc, "integer division by zero");
    }
  }

  void visitNeg(const Neg *Op) override {
    IRVisitor::visitNeg(Op);
    if (Op->A->Type == DType::Bool)
      error(Op->Loc, "cannot negate a bool");
  }

  void visitCompareSelect(const CompareSelect *Op) override {
    IRVisitor::visitCompareSelect(Op);
    sameType(Op->A, Op->B, Op->Loc, cmpOpSpelling(Op->Op));
    if (Op->T->Type != Op->F->Type)
      error(Op->Loc, "the arms of the select have different types: " +
                         typeStr(Op->T->Type) + " and " + typeStr(Op->F->Type));
  }

  void visitIfThenElse(const IfThenElse *Op) override {
    IRVisitor::visitIfThenElse(Op);
    if (!isIntegral(Op->C->Type))
      error(Op->C->Loc, "condition of IfThenElse must be an integer or bool, "
                        "not " +
                            typeStr(Op->C->Type));
    if (Op->T->Type != Op->F->Type)
      error(Op->Loc, "the arms of IfThenElse have different types: " +
                         typeStr(Op->T->Type) + " and " + typeStr(Op->F->Type));
  }

  void visitBitCast(const BitCast *Op) override {
    IRVisitor::visitBitCast(Op);
    if (dtypeSize(Op->Type) != dtypeSize(Op->A->Type) ||
        Op->Type == DType::Bool || Op->A->Type == DType::Bool)
      error(Op->Loc, "BitCast from " + typeStr(Op->A->Type) + " to " +
                         typeStr(Op->Type) + " changes the size");
  }

  void visitIntrinsic(const Intrinsic *Op) override {
    IRVisitor::visitIntrinsic(Op);
    const char *N = intrinsicName(Op->Op);
    if (Op->Args.size() != intrinsicArity(Op->Op)) {
      error(Op->Loc, std::string("'") + N + "' takes " +
                         std::to_string(intrinsicArity(Op->Op)) +
                         " arguments");
      return;
    }
    bool IntOk = Op->Op == IntrinsicOp::Abs;
    for (const Expr &A : Op->Args)
      if (!isFloat(A->Type) && !IntOk)
        error(A->Loc, std::string("'") + N +
                          "' needs a floating-point operand, not " +
                          typeStr(A->Type));
    if (Op->Args.size() == 2)
      sameType(Op->Args[0], Op->Args[1], Op->Loc, N);
  }

  //===--------------------------------------------------------------------===//
  // Statements
  //===--------------------------------------------------------------------===//

  void visitBlock(const Block *Op) override {
    Scopes.emplace_back();
    for (const Stmt &S : Op->Stmts) {
      if (!S) {
        error(Op->Loc, "block holds a null statement");
        continue;
      }
      visit(S);
    }
    Scopes.pop_back();
  }

  void visitFor(const For *Op) override {
    visit(Op->Start);
    visit(Op->Stop);
    if (!isIntegral(Op->VarType) || Op->VarType == DType::Bool)
      error(Op->Loc, "loop variable '" + Op->Var +
                         "' must have an integer type, not " +
                         typeStr(Op->VarType));
    for (const Expr *B : {&Op->Start, &Op->Stop})
      if ((*B)->Type != Op->VarType)
        error((*B)->Loc, "loop bound has type " + typeStr((*B)->Type) +
                             " but '" + Op->Var + "' is " +
                             typeStr(Op->VarType));
    checkFreshName(Op->Var, Op->Loc, "loop variable");
    if (Op->Options.Lanes)
      checkLanes(*Op);
    Scopes.emplace_back();
    Scopes.back()[Op->Var] = Op->VarType;
    ++Loops;
    scoped(Op->Body, "the loop");
    --Loops;
    Scopes.pop_back();
  }

  /// A `lanes` loop is one vector: innermost, serial, and as many
  /// iterations as a vector register file can hold lanes of.
  void checkLanes(const For &Op) {
    std::string Name = "'lanes' loop '" + Op.Var + "'";
    auto Lo = getConstInt(Op.Start), Hi = getConstInt(Op.Stop);
    int64_t Trip = Lo && Hi ? *Hi - *Lo : 0;
    if (!Lo || !Hi || Trip < 2 || Trip > 64 || (Trip & (Trip - 1)))
      error(Op.Loc, Name + " must run a constant power of two from 2 to 64 "
                           "iterations");
    if (Op.Options.Parallel)
      error(Op.Loc, Name + " cannot also be parallel");
    struct LoopFinder : IRVisitor {
      bool Found = false;
      void visitFor(const For *) override { Found = true; }
    } Inner;
    Inner.visit(Op.Body);
    if (Inner.Found)
      error(Op.Loc, Name + " must be innermost");
  }

  /// Packed weights (nnc_conv_pack_weights) are the runtime's copy, shared
  /// by every call: nothing may write them.
  void checkNotPacked(const Buffer &B, SourceLoc Loc) {
    if (Packed.count(B.get()))
      error(Loc, "'" + B->Name + "' holds packed weights "
                 "(nnc_conv_pack_weights), which nothing may write");
  }

  void visitStore(const Store *Op) override {
    checkNotPacked(Op->Buf, Op->Loc);
    PlainUse.emplace(Op->Buf.get(), Op->Loc);
    visit(Op->Value);
    checkAccess(Op->Buf, Op->Indices, Op->Loc, true);
    if (Op->Value->Type != Op->Buf->Type)
      error(Op->Value->Loc, "cannot store a value of type " +
                                typeStr(Op->Value->Type) + " into '" +
                                Op->Buf->Name + "' of type " +
                                typeStr(Op->Buf->Type));
  }

  void visitLet(const Let *Op) override {
    visit(Op->Value);
    if (Op->Value->Type != Op->Type)
      error(Op->Value->Loc, "let '" + Op->Name + "' of type " +
                                typeStr(Op->Type) + " is given a value of type " +
                                typeStr(Op->Value->Type));
    checkFreshName(Op->Name, Op->Loc, "variable");
    Scopes.back()[Op->Name] = Op->Type;
  }

  void visitCond(const Cond *Op) override {
    visit(Op->C);
    if (!isIntegral(Op->C->Type))
      error(Op->C->Loc, "condition must be an integer or bool, not " +
                            typeStr(Op->C->Type));
    scoped(Op->Then, "the branch of the if");
    scoped(Op->Else, "the branch of the if");
  }

  /// Checks S, a loop body or a branch: the temporaries it allocates live
  /// only inside it (compiled code has their storage there alone).
  void scoped(const Stmt &S, const char *Where) {
    if (!S)
      return;
    TempScopes.emplace_back();
    visit(S);
    for (const std::string &Name : TempScopes.back())
      if (Live.erase(Name))
        ScopedTo[Name] = Where;
    TempScopes.pop_back();
  }

  void declareTemp(const Buffer &B, SourceLoc L) {
    if (!checkNotReserved(B->Name, L, "temporary"))
      return;
    if (!B->isTemp()) {
      error(L, "'" + B->Name + "' must be a temporary to be allocated");
      return;
    }
    if (Declared.count(B->Name) || lookupVar(B->Name)) {
      error(L, "redeclaration of '" + B->Name + "'");
      return;
    }
    checkShape(*B, "temporary '" + B->Name + "'");
    Declared[B->Name] = B;
    Live.insert(B->Name);
    if (!TempScopes.empty())
      TempScopes.back().push_back(B->Name);
  }

  void visitAllocate(const Allocate *Op) override {
    declareTemp(Op->Buf, Op->Loc);
    // The plan-memory pass's placement: one arena per call of the kernel
    // body, so never in a loop (one per iteration) or a task (per thread).
    if (!Op->planned())
      return;
    std::string T = "temporary '" + Op->Buf->Name + "' is placed in the arena";
    if (!constantStorageBytes(*Op->Buf))
      error(Op->Loc, T + " but its size is not a constant");
    if (Op->ArenaOffset % kArenaAlignment)
      error(Op->Loc, T + " at an offset not a multiple of " +
                         std::to_string(kArenaAlignment));
    if (Loops || K.IsTask)
      error(Op->Loc, T + " but allocated inside a " +
                         (K.IsTask ? "task" : "loop"));
  }

  void release(const Buffer &B, SourceLoc L) {
    if (!checkLive(B, L))
      return;
    if (!B->isTemp()) {
      error(L, "cannot free '" + B->Name + "': it is not a temporary");
      return;
    }
    Live.erase(B->Name);
    Freed.insert(B->Name);
  }

  void visitFree(const Free *Op) override { release(Op->Buf, Op->Loc); }
  void visitFreeExt(const FreeExt *Op) override {
    for (const Buffer &B : Op->Bufs)
      release(B, Op->Loc);
  }

  //===--------------------------------------------------------------------===//
  // Blocked layouts (conv-layouts)
  //===--------------------------------------------------------------------===//

  /// Where each buffer is first seen through a `layout=blocked` view, and
  /// first used as plain memory (a load, a store, a plain view, a task).
  std::map<const BufferNode *, SourceLoc> BlockedUse, PlainUse;
  /// Buffers declared by nnc_conv_pack_weights (checkNotPacked).
  std::set<const BufferNode *> Packed;
  /// The sizes and strides of each buffer's first blocked view: the others
  /// must be the same (the blocked layout keeps the elements' logical order,
  /// not their strides).
  std::map<const BufferNode *, const BufferView *> FirstBlocked;

  /// The views of a call that may be blocked (a convolution's output, input
  /// and add operands) hold a whole temporary whose blocked form takes the
  /// same storage: f32 [N, C, H, W] with constant sizes, C a multiple of 16
  /// (oneDNN's largest channel block), over dense storage.
  void checkBlockedViews(const ExternalCall &Op) {
    auto Check = [&](const BufferView &V, bool MayBeBlocked) {
      if (!V.Blocked) {
        PlainUse.emplace(V.Buf.get(), Op.Loc);
        return;
      }
      BlockedUse.emplace(V.Buf.get(), Op.Loc);
      std::string What = "'" + V.Buf->Name + "' (layout=blocked)";
      const BufferView *&First = FirstBlocked[V.Buf.get()];
      if (!First)
        First = &V;
      else if (!sameValues(V.Sizes, First->Sizes) ||
               !sameValues(V.Strides, First->Strides))
        error(Op.Loc, What + " has other sizes or strides than its blocked "
                             "view before");
      if (!MayBeBlocked) {
        error(Op.Loc, What + ": only the output, input and add operands of "
                             "nnc_aten_conv2d may be in the blocked layout");
        return;
      }
      if (!V.Buf->isTemp())
        error(Op.Loc, What + " must be a temporary, not a parameter");
      auto Sizes = constantStorageSize(V.Sizes, V.Strides);
      auto Storage = constantStorageSize(V.Buf->Dims, V.Buf->Strides);
      int64_t Elems = 1;
      bool Const = V.Sizes.size() == 4;
      for (const Expr &E : V.Sizes) {
        auto C = evaluateConstant(E);
        Const = Const && C && *C > 0;
        Elems *= Const ? *C : 1;
      }
      if (V.Type != DType::F32 || !Const || !Sizes || !Storage ||
          *Sizes != Elems || *Storage != Elems)
        error(Op.Loc, What + " must be a whole f32 [N, C, H, W] buffer with "
                             "constant sizes over dense storage");
      else if (*evaluateConstant(V.Sizes[1]) % 16 != 0)
        error(Op.Loc, What + " has " +
                          std::to_string(*evaluateConstant(V.Sizes[1])) +
                          " channels, not a multiple of 16");
    };
    bool Conv = Op.Func == "nnc_aten_conv2d";
    Check(Op.Out, Conv);
    for (size_t I = 0; I < Op.Args.size(); ++I)
      Check(Op.Args[I], Conv && I == 0);
    for (const PostOp &P : Op.PostOps)
      if (P.Other)
        Check(*P.Other, Conv);
  }

  /// A buffer in the blocked layout anywhere is in it everywhere: compiled
  /// code would read oneDNN's blocks where the interpreter reads elements.
  void checkBlockedBuffers() {
    for (const auto &[B, At] : BlockedUse) {
      auto Plain = PlainUse.find(B);
      if (Plain != PlainUse.end())
        error(Plain->second, "'" + B->Name +
                                 "' is in oneDNN's blocked layout at line " +
                                 std::to_string(At.Line) +
                                 " (layout=blocked), so only convolutions "
                                 "may use it, each through a blocked view");
    }
  }

  /// A view's dtype and sizes agree with its buffer and it stays inside it.
  void checkView(const BufferView &V, SourceLoc L) {
    if (!V.Explicit)
      return;
    const BufferNode &B = *V.Buf;
    for (const Expr &E : V.Sizes)
      checkShapeExpr(E, "the description of '" + B.Name + "'", "size");
    for (const Expr &E : V.Strides)
      checkShapeExpr(E, "the description of '" + B.Name + "'", "stride");
    if (V.Type != B.Type)
      error(V.Loc, "description of '" + B.Name + "' has dtype " +
                       typeStr(V.Type) + " but the buffer is " +
                       typeStr(B.Type));
    if (V.Sizes.size() != V.Strides.size()) {
      error(V.Loc, "description of '" + B.Name +
                       "' needs one stride per size");
      return;
    }
    if (V.Sizes.size() != B.rank()) {
      error(V.Loc, "description of '" + B.Name + "' has rank " +
                       std::to_string(V.Sizes.size()) +
                       " but the buffer has rank " + std::to_string(B.rank()));
      return;
    }
    for (size_t I = 0; I < V.Sizes.size(); ++I) {
      auto A = getConstInt(V.Sizes[I]), D = getConstInt(B.Dims[I]);
      bool Mismatch = (A && D) ? *A != *D
                               : !equal(V.Sizes[I], B.Dims[I]);
      if (Mismatch)
        error(V.Loc, "description of '" + B.Name + "' has size " +
                         toString(V.Sizes[I]) + " in dimension " +
                         std::to_string(I) + " but the buffer has " +
                         toString(B.Dims[I]));
    }
    auto Need = constantStorageSize(V.Sizes, V.Strides);
    auto Have = constantStorageSize(B.Dims, B.Strides);
    if (Need && Have && *Need > *Have)
      error(L, "description of '" + B.Name + "' spans " +
                   std::to_string(*Need) + " elements but its storage has " +
                   std::to_string(*Have));
  }

  void visitExternalCall(const ExternalCall *Op) override {
    for (const Expr &E : Op->ScalarArgs)
      visit(E);
    for (const BufferView &V : Op->Args) {
      checkLive(V.Buf, V.Loc.isValid() ? V.Loc : Op->Loc);
      checkView(V, Op->Loc);
    }
    for (const BufferView &V : Op->Args)
      if (V.Buf == Op->Out.Buf)
        error(V.Loc.isValid() ? V.Loc : Op->Loc,
              Op->Func + " reads '" + V.Buf->Name +
                  "', which it writes: its output must be another buffer");
    checkNotPacked(Op->Out.Buf, Op->Loc);
    if (Op->Func == "nnc_conv_pack_weights")
      Packed.insert(Op->Out.Buf.get());
    if (Op->DeclaresOut) {
      declareTemp(Op->Out.Buf, Op->Out.Loc.isValid() ? Op->Out.Loc : Op->Loc);
    } else if (checkLive(Op->Out.Buf, Op->Loc) && !Op->Out.Buf->isWritable()) {
      error(Op->Loc, "cannot write to input buffer '" + Op->Out.Buf->Name +
                         "'");
    }
    checkView(Op->Out, Op->Loc);
    if (!Op->PostOps.empty() && Op->Func != "nnc_aten_conv2d")
      error(Op->Loc, "post-ops apply to nnc_aten_conv2d only, not " +
                         Op->Func);
    for (const PostOp &P : Op->PostOps) {
      if (!P.Other)
        continue;
      checkLive(P.Other->Buf, Op->Loc);
      checkView(*P.Other, Op->Loc);
      bool Same = P.Other->Type == DType::F32 &&
                  P.Other->Sizes.size() == Op->Out.Sizes.size();
      for (size_t I = 0; Same && I < P.Other->Sizes.size(); ++I)
        Same = equal(P.Other->Sizes[I], Op->Out.Sizes[I]);
      if (!Same)
        error(Op->Loc, "the operand of add, '" + P.Other->Buf->Name +
                           "', must be f32 with the output's shape");
    }
    checkBlockedViews(*Op);
    const ExternalFunctionInfo *Info = lookupExternalFunction(Op->Func);
    if (!Info) {
      error(Op->Loc, "unknown external function '" + Op->Func +
                         "' (known: " + knownExternalFunctionNames() + ")");
      return;
    }
    unsigned Before = Diags.numErrors();
    if (!Info->Verify(*Op, Diags))
      NumErrors += Diags.numErrors() - Before;
  }

  void visitParallelCall(const ParallelCall *Op) override {
    IRVisitor::visitParallelCall(Op);
    for (const Expr *E : {&Op->Start, &Op->Stop, &Op->Grain})
      if ((*E)->Type != DType::I64)
        error((*E)->Loc, "bounds and grain of nnc_parallel_for must be i64, "
                         "not " + typeStr((*E)->Type));
    const Kernel &T = *Op->Task;
    if (!T.IsTask) {
      error(Op->Loc, "'" + T.Name + "' is not a task");
      return;
    }
    if (T.Params.size() != Op->Args.size() + 2) {
      error(Op->Loc, "task '" + T.Name + "' takes " +
                         std::to_string(T.Params.size() - 2) +
                         " arguments, " + std::to_string(Op->Args.size()) +
                         " given");
      return;
    }
    for (size_t I = 0; I < Op->Args.size(); ++I) {
      const Param &P = T.Params[I + 2];
      const TaskArg &A = Op->Args[I];
      if (A.Buf)
        PlainUse.emplace(A.Buf.get(), Op->Loc);
      std::string What = "argument " + std::to_string(I + 1) + " of task '" +
                         T.Name + "'";
      if (P.isBuffer() != (A.Buf != nullptr)) {
        error(Op->Loc, What + " must be " +
                           (P.isBuffer() ? "a buffer" : "a scalar"));
        continue;
      }
      if (A.Buf) {
        if (!checkLive(A.Buf, Op->Loc))
          continue;
        if (A.Buf->Type != P.Buf->Type || A.Buf->rank() != P.Buf->rank())
          error(Op->Loc, What + " '" + A.Buf->Name + "' does not match '" +
                             P.Name + "'");
        else if (P.Buf->isWritable() && !A.Buf->isWritable())
          error(Op->Loc, What + ": the task writes '" + P.Name +
                             "' but '" + A.Buf->Name + "' is an input");
      } else if (A.Scalar->Type != P.Type) {
        error(A.Scalar->Loc, What + " has type " + typeStr(A.Scalar->Type) +
                                 ", the task expects " + typeStr(P.Type));
      }
    }
    // The task's parameters are noalias: one buffer may not be two of
    // them where the task writes either.
    for (size_t I = 0; I < Op->Args.size(); ++I)
      for (size_t J = I + 1; J < Op->Args.size(); ++J) {
        const Param &P = T.Params[I + 2], &Q = T.Params[J + 2];
        if (Op->Args[I].Buf && Op->Args[I].Buf == Op->Args[J].Buf &&
            P.isBuffer() && Q.isBuffer() &&
            (P.Buf->isWritable() || Q.Buf->isWritable()))
          error(Op->Loc, "task '" + T.Name + "' gets buffer '" +
                             Op->Args[I].Buf->Name + "' twice (as '" + P.Name +
                             "' and '" + Q.Name +
                             "') and writes one of them; pass distinct "
                             "buffers");
      }
    // Sizes known now must be the task's; the others are compared when the
    // call runs (taskSizeChecks).
    for (const TaskSizeCheck &C : taskSizeChecks(*Op)) {
      auto D = evaluateConstant(C.Declared), P = evaluateConstant(C.Passed);
      if (D && P && *D != *P)
        error(Op->Loc, C.message(*Op, D, P));
    }
  }

  const Kernel &K;
  DiagnosticEngine &Diags;
  unsigned NumErrors = 0;
  std::vector<std::unordered_map<std::string, DType>> Scopes;
  std::unordered_map<std::string, Buffer> Declared;
  std::unordered_set<std::string> Live, Freed;
  /// Loops around the statement being checked.
  unsigned Loops = 0;
  /// Temporaries allocated in a loop body or a branch, which has ended.
  std::unordered_map<std::string, const char *> ScopedTo;
  /// The temporaries declared in each loop body or branch being checked.
  std::vector<std::vector<std::string>> TempScopes;
};

} // namespace

bool verifyKernel(const Kernel &K, DiagnosticEngine &Diags) {
  return Verifier(K, Diags).run();
}

bool verifyModule(const Module &M, DiagnosticEngine &Diags) {
  bool Ok = true;
  for (const Kernel &K : M.Kernels)
    Ok &= verifyKernel(K, Diags);
  return Ok;
}

} // namespace nnc
