//===- Printer.cpp - Canonical .nnc text ----------------------------------===//
#include "nnc/IR/Printer.h"
#include "nnc/IR/Verifier.h"

#include <charconv>
#include <cmath>
#include <set>
#include <sstream>

namespace nnc {

namespace {

// Binding strengths, loosest first. Comparisons only occur inside a select,
// and `& | ^` bind tighter than comparisons (docs/ir-format.md, Details 2).
enum Prec : int {
  PrecSelect = 1,
  PrecOr = 3,
  PrecXor = 4,
  PrecAnd = 5,
  PrecShift = 6,
  PrecAdd = 7,
  PrecMul = 8,
  PrecUnary = 9,
  PrecPrimary = 10,
};

int binOpPrec(BinOp Op) {
  switch (Op) {
  case BinOp::Add:
  case BinOp::Sub:
    return PrecAdd;
  case BinOp::Mul:
  case BinOp::Div:
  case BinOp::Mod:
    return PrecMul;
  case BinOp::And:
    return PrecAnd;
  case BinOp::Or:
    return PrecOr;
  case BinOp::Xor:
    return PrecXor;
  case BinOp::Shl:
  case BinOp::Shr:
    return PrecShift;
  case BinOp::Max:
  case BinOp::Min:
    return PrecPrimary;
  }
  return PrecPrimary;
}

bool isNegativeImm(const Expr &E) {
  if (auto *I = dyn_cast<IntImm>(E))
    return I->Value < 0;
  if (auto *F = dyn_cast<FloatImm>(E))
    return std::signbit(F->Value) && !std::isnan(F->Value);
  return false;
}

int precOf(const Expr &E) {
  switch (E->Kind) {
  case ExprKind::Binary:
    return binOpPrec(cast<Binary>(E)->Op);
  case ExprKind::CompareSelect:
    return PrecSelect;
  case ExprKind::Neg:
    return PrecUnary;
  case ExprKind::IntImm:
  case ExprKind::FloatImm:
    return isNegativeImm(E) ? PrecUnary : PrecPrimary;
  default:
    return PrecPrimary;
  }
}

std::string floatLiteral(double V, DType T) {
  if (std::isnan(V))
    return "NAN";
  // A value beyond T's range is T's infinity (1e39 as f32), never "inf.f".
  if (T != DType::F64)
    V = static_cast<float>(V);
  if (std::isinf(V))
    return V > 0 ? "POS_INFINITY" : "NEG_INFINITY";
  char Buf[64];
  std::to_chars_result R =
      T == DType::F64 ? std::to_chars(Buf, Buf + sizeof(Buf), V)
                      : std::to_chars(Buf, Buf + sizeof(Buf),
                                      static_cast<float>(V));
  std::string S(Buf, R.ptr);
  bool HasDot = S.find('.') != std::string::npos;
  if (T == DType::F64)
    return HasDot ? S : S + ".0";
  return HasDot ? S + "f" : S + ".f";
}

class ExprPrinter {
public:
  explicit ExprPrinter(std::ostream &OS) : OS(OS) {}

  void print(const Expr &E) {
    switch (E->Kind) {
    case ExprKind::IntImm:
      return printIntImm(cast<IntImm>(E));
    case ExprKind::FloatImm: {
      auto *F = cast<FloatImm>(E);
      // f32 and f64 literals carry their type; f16/bf16 are written as a
      // cast of an f32 literal, which the parser folds back.
      if (F->Type == DType::F32 || F->Type == DType::F64) {
        OS << floatLiteral(F->Value, F->Type);
      } else {
        OS << dtypeCName(F->Type) << '(' << floatLiteral(F->Value, DType::F32)
           << ')';
      }
      return;
    }
    case ExprKind::Var:
      OS << cast<Var>(E)->Name;
      return;
    case ExprKind::Load: {
      auto *L = cast<Load>(E);
      OS << L->Buf->Name;
      printIndices(L->Indices);
      return;
    }
    case ExprKind::Binary:
      return printBinary(cast<Binary>(E));
    case ExprKind::Neg: {
      auto *N = cast<Neg>(E);
      OS << '-';
      // "-" before a literal would parse as a negative literal ("-(0)" is
      // not "-0", which is 0), and "--" is not negation twice.
      printOperand(N->A, precOf(N->A) < PrecUnary || isa<IntImm>(N->A) ||
                             isa<FloatImm>(N->A) ||
                             N->A->Kind == ExprKind::Neg);
      return;
    }
    case ExprKind::CompareSelect: {
      auto *C = cast<CompareSelect>(E);
      printOperand(C->A, precOf(C->A) <= PrecSelect);
      OS << cmpOpSpelling(C->Op);
      printOperand(C->B, precOf(C->B) <= PrecSelect);
      OS << " ? ";
      printOperand(C->T, precOf(C->T) <= PrecSelect);
      OS << " : ";
      printOperand(C->F, precOf(C->F) <= PrecSelect);
      return;
    }
    case ExprKind::IfThenElse: {
      auto *I = cast<IfThenElse>(E);
      OS << "IfThenElse(";
      print(I->C);
      OS << ", ";
      print(I->T);
      OS << ", ";
      print(I->F);
      OS << ')';
      return;
    }
    case ExprKind::Cast: {
      auto *C = cast<Cast>(E);
      OS << dtypeCName(C->Type) << '(';
      print(C->A);
      OS << ')';
      return;
    }
    case ExprKind::BitCast: {
      auto *C = cast<BitCast>(E);
      OS << "BitCast<" << dtypeCName(C->Type) << ">(";
      print(C->A);
      OS << ')';
      return;
    }
    case ExprKind::Intrinsic: {
      auto *I = cast<Intrinsic>(E);
      OS << intrinsicName(I->Op) << '(';
      for (size_t K = 0; K < I->Args.size(); ++K) {
        if (K)
          OS << ", ";
        print(I->Args[K]);
      }
      OS << ')';
      return;
    }
    }
  }

  void printIndices(const std::vector<Expr> &Idx) {
    if (Idx.empty())
      return;
    OS << '[';
    for (size_t K = 0; K < Idx.size(); ++K) {
      if (K)
        OS << ", ";
      print(Idx[K]);
    }
    OS << ']';
  }

private:
  void printOperand(const Expr &E, bool Paren) {
    if (Paren)
      OS << '(';
    print(E);
    if (Paren)
      OS << ')';
  }

  void printIntImm(const IntImm *I) {
    switch (I->Type) {
    case DType::Bool:
      OS << (I->Value ? "true" : "false");
      return;
    case DType::I64:
      OS << I->Value << "ll";
      return;
    case DType::I32:
      OS << I->Value;
      return;
    default:
      // Narrow integer literals are written as a cast the parser folds.
      OS << dtypeCName(I->Type) << '(' << I->Value << ')';
      return;
    }
  }

  void printBinary(const Binary *B) {
    if (B->Op == BinOp::Max || B->Op == BinOp::Min) {
      OS << binOpSpelling(B->Op) << '(';
      print(B->A);
      OS << ", ";
      print(B->B);
      OS << ", " << (B->PropagateNaN ? 1 : 0) << ')';
      return;
    }
    int P = binOpPrec(B->Op);
    printOperand(B->A, precOf(B->A) < P);
    OS << ' ' << binOpSpelling(B->Op) << ' ';
    printOperand(B->B, precOf(B->B) <= P);
  }

  std::ostream &OS;
};

void printExprList(std::ostream &OS, const std::vector<Expr> &Es) {
  for (size_t K = 0; K < Es.size(); ++K) {
    if (K)
      OS << ", ";
    ExprPrinter(OS).print(Es[K]);
  }
}

void printView(std::ostream &OS, const BufferView &V) {
  OS << V.Buf->Name;
  if (!V.Explicit && !V.Blocked)
    return;
  OS << "(dtype=" << dtypeCName(V.Type) << ", sizes=[";
  printExprList(OS, V.Sizes);
  OS << "], strides=[";
  printExprList(OS, V.Strides);
  OS << (V.Blocked ? "], layout=blocked)" : "])");
}

class StmtPrinter {
public:
  explicit StmtPrinter(std::ostream &OS) : OS(OS) {}

  void print(const Stmt &S, unsigned Ind) {
    switch (S->Kind) {
    case StmtKind::Block:
      indent(Ind);
      OS << "{\n";
      printBody(S, Ind + 1);
      indent(Ind);
      OS << "}\n";
      return;
    case StmtKind::For: {
      auto *F = cast<For>(S);
      indent(Ind);
      OS << "for (" << dtypeCName(F->VarType) << ' ' << F->Var << " = ";
      expr(F->Start);
      OS << "; " << F->Var << " < ";
      expr(F->Stop);
      OS << "; " << F->Var << "++) ";
      if (F->Options.Parallel || F->Options.Vectorize || F->Options.Lanes) {
        const char *Sep = "/* ";
        for (auto [On, Word] : {std::pair{F->Options.Parallel, "parallel"},
                                {F->Options.Vectorize, "vectorize"},
                                {F->Options.Lanes, "lanes"}})
          if (On) {
            OS << Sep << Word;
            Sep = ", ";
          }
        OS << " */ ";
      }
      OS << "{\n";
      printBody(F->Body, Ind + 1);
      indent(Ind);
      OS << "}\n";
      return;
    }
    case StmtKind::Store: {
      auto *St = cast<Store>(S);
      indent(Ind);
      // Set by passes; the parser ignores the comment.
      if (St->nonTemporal())
        OS << "/* nontemporal */ ";
      else if (St->reduction())
        OS << "/* reduction */ ";
      OS << St->Buf->Name;
      ExprPrinter(OS).printIndices(St->Indices);
      OS << " = ";
      expr(St->Value);
      OS << ";\n";
      return;
    }
    case StmtKind::Let: {
      auto *L = cast<Let>(S);
      indent(Ind);
      OS << dtypeCName(L->Type) << ' ' << L->Name << " = ";
      expr(L->Value);
      OS << ";\n";
      return;
    }
    case StmtKind::Cond: {
      auto *C = cast<Cond>(S);
      indent(Ind);
      if (!C->Then && C->Else) {
        OS << "if (!";
        expr(C->C);
        OS << ") {\n";
        printBody(C->Else, Ind + 1);
        indent(Ind);
        OS << "}\n";
        return;
      }
      OS << "if (";
      expr(C->C);
      OS << ") {\n";
      if (C->Then)
        printBody(C->Then, Ind + 1);
      indent(Ind);
      OS << "}";
      if (C->Else) {
        OS << " else {\n";
        printBody(C->Else, Ind + 1);
        indent(Ind);
        OS << "}";
      }
      OS << "\n";
      return;
    }
    case StmtKind::Allocate: {
      auto *A = cast<Allocate>(S);
      indent(Ind);
      // Set by the elide-zero-fill pass; the parser ignores the comment.
      if (!A->ZeroFill)
        OS << "/* uninitialized */ ";
      // Set by the plan-memory pass: the bytes the temporary takes in the
      // kernel's arena.
      if (A->planned())
        if (auto Bytes = constantStorageBytes(*A->Buf))
          OS << "/* arena [" << A->ArenaOffset << ", "
             << A->ArenaOffset + *Bytes << ") */ ";
      OS << "Allocate(" << A->Buf->Name << "); // dtype="
         << dtypeCName(A->Buf->Type) << ", dims=[";
      printExprList(OS, A->Buf->Dims);
      OS << "]\n";
      return;
    }
    case StmtKind::Free:
      indent(Ind);
      OS << "Free(" << cast<Free>(S)->Buf->Name << ");\n";
      return;
    case StmtKind::FreeExt: {
      auto *F = cast<FreeExt>(S);
      indent(Ind);
      OS << "FreeExt(bufs={";
      for (size_t K = 0; K < F->Bufs.size(); ++K)
        OS << (K ? ", " : "") << F->Bufs[K]->Name;
      OS << "});\n";
      return;
    }
    case StmtKind::ParallelCall: {
      auto *P = cast<ParallelCall>(S);
      indent(Ind);
      OS << "nnc_parallel_for(task=" << P->Task->Name << ", start=";
      expr(P->Start);
      OS << ", stop=";
      expr(P->Stop);
      OS << ", grain=";
      expr(P->Grain);
      OS << ", args={";
      for (size_t K = 0; K < P->Args.size(); ++K) {
        if (K)
          OS << ", ";
        if (P->Args[K].Buf)
          OS << P->Args[K].Buf->Name;
        else
          expr(P->Args[K].Scalar);
      }
      OS << "});\n";
      return;
    }
    case StmtKind::ExternalCall: {
      auto *E = cast<ExternalCall>(S);
      indent(Ind);
      printView(OS, E->Out);
      OS << " = " << E->Func << "(buf_args={";
      for (size_t K = 0; K < E->Args.size(); ++K) {
        if (K)
          OS << ", ";
        printView(OS, E->Args[K]);
      }
      OS << "}, args={";
      printExprList(OS, E->ScalarArgs);
      OS << "}";
      if (!E->PostOps.empty()) {
        OS << ", post_ops={";
        for (size_t K = 0; K < E->PostOps.size(); ++K) {
          const PostOp &P = E->PostOps[K];
          OS << (K ? ", " : "") << postOpName(P.Kind);
          if (P.Other) {
            OS << '(';
            printView(OS, *P.Other);
            OS << ')';
          } else if (unsigned N = postOpParams(P.Kind)) {
            OS << '(' << floatLiteral(P.Alpha, DType::F32);
            if (N == 2)
              OS << ", " << floatLiteral(P.Beta, DType::F32);
            OS << ')';
          }
        }
        OS << "}";
      }
      OS << ")\n";
      return;
    }
    }
  }

  /// Prints the statements of a Block (or a single statement) at Ind.
  void printBody(const Stmt &S, unsigned Ind) {
    if (auto *B = dyn_cast<Block>(S)) {
      for (const Stmt &C : B->Stmts)
        print(C, Ind);
      return;
    }
    print(S, Ind);
  }

private:
  void indent(unsigned Ind) {
    for (unsigned I = 0; I < Ind; ++I)
      OS << "  ";
  }
  void expr(const Expr &E) { ExprPrinter(OS).print(E); }

  std::ostream &OS;
};

/// Signature dims and strides: constants without the `ll` suffix (the
/// parser reads them as i64 anyway), as in the workloads.
void printShapeList(std::ostream &OS, const std::vector<Expr> &Es) {
  for (size_t K = 0; K < Es.size(); ++K) {
    if (K)
      OS << ", ";
    if (auto *I = dyn_cast<IntImm>(Es[K]); I && I->Type == DType::I64)
      OS << I->Value;
    else
      ExprPrinter(OS).print(Es[K]);
  }
}

void printParam(std::ostream &OS, const Param &P) {
  if (!P.isBuffer()) {
    OS << P.Name << ": " << dtypeName(P.Type);
    return;
  }
  const BufferNode &B = *P.Buf;
  // A task receives its caller's temporaries as inout buffers.
  OS << (B.Role == BufferRole::Temp ? "inout" : roleSpelling(B.Role)) << ' '
     << P.Name << ": " << dtypeName(B.Type)
     << '[';
  printShapeList(OS, B.Dims);
  OS << ']';
  if (B.Layout == LayoutKind::ChannelsLast) {
    OS << " channels_last";
  } else if (B.Layout == LayoutKind::Explicit) {
    OS << " strides [";
    printShapeList(OS, B.Strides);
    OS << ']';
  }
}

} // namespace

std::string toString(const Expr &E) {
  std::ostringstream OS;
  ExprPrinter(OS).print(E);
  return OS.str();
}

std::string toString(const Stmt &S, unsigned Indent) {
  std::ostringstream OS;
  StmtPrinter(OS).print(S, Indent);
  return OS.str();
}

std::string toString(const BufferView &V) {
  std::ostringstream OS;
  printView(OS, V);
  return OS.str();
}

void printKernel(std::ostream &OS, const Kernel &K) {
  OS << (K.IsTask ? "task " : "kernel ") << K.Name << '(';
  for (size_t I = 0; I < K.Params.size(); ++I) {
    OS << (I ? ",\n    " : "\n    ");
    printParam(OS, K.Params[I]);
  }
  OS << ") {\n";
  StmtPrinter(OS).printBody(K.Body, 1);
  OS << "}\n";
}

void printKernelWithTasks(std::ostream &OS, const Kernel &K) {
  for (const auto &T : tasksOf(K)) {
    printKernel(OS, *T);
    OS << '\n';
  }
  printKernel(OS, K);
}

void printModule(std::ostream &OS, const Module &M) {
  // Tasks come before their callers, each once.
  std::set<std::string> Printed;
  bool First = true;
  auto Print = [&](const Kernel &K) {
    if (!Printed.insert(K.Name).second)
      return;
    if (!First)
      OS << '\n';
    First = false;
    printKernel(OS, K);
  };
  for (const Kernel &K : M.Kernels) {
    for (const auto &T : tasksOf(K))
      Print(*T);
    Print(K);
  }
}

} // namespace nnc
