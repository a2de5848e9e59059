//===- Parser.cpp - .nnc text to IR ---------------------------------------===//
//
// A recursive-descent parser with precedence climbing for binary operators.
// Errors are reported to the DiagnosticEngine and unwind with ParseAbort,
// which parseModule catches: nothing escapes.
//
// Typing: literals have their written type (bare integer i32, `ll` i64, `.f`
// f32, plain decimal f64), and an immediate operand takes the type of the
// other operand of its operator, select, store, let or loop bound when that
// differs (docs/ir-format.md, Details 4). Nothing else is converted implicitly;
// mismatches are left for the verifier to report.
//
//===----------------------------------------------------------------------===//
#include "nnc/Parse/Parser.h"
#include "nnc/Parse/Lexer.h"
#include "nnc/Support/Suggest.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <unordered_map>

namespace nnc {

namespace {

bool isImm(const Expr &E) {
  return E->Kind == ExprKind::IntImm || E->Kind == ExprKind::FloatImm;
}

/// Converts an immediate to T if that keeps its meaning; otherwise returns E.
Expr convertImm(const Expr &E, DType T) {
  if (E->Type == T)
    return E;
  if (auto *I = dyn_cast<IntImm>(E)) {
    ScalarValue V;
    V.I = I->Value;
    ScalarValue R = convertScalar(I->Type, T, V);
    return isFloat(T) ? FloatImm::make(T, R.F, E->Loc)
                      : IntImm::make(T, R.I, E->Loc);
  }
  if (auto *F = dyn_cast<FloatImm>(E)) {
    if (isFloat(T)) // NAN, infinities and literals of another float type.
      return FloatImm::make(T, F->Value, E->Loc);
  }
  return E; // A float immediate in an integer context stays a type error.
}

int typeRank(DType T) { return static_cast<int>(T); }

/// Makes two operands agree when one of them is an immediate.
void unify(Expr &A, Expr &B) {
  if (A->Type == B->Type)
    return;
  bool IA = isImm(A), IB = isImm(B);
  if (IA && !IB)
    A = convertImm(A, B->Type);
  else if (IB && !IA)
    B = convertImm(B, A->Type);
  else if (IA && IB) {
    if (typeRank(A->Type) < typeRank(B->Type))
      A = convertImm(A, B->Type);
    else
      B = convertImm(B, A->Type);
  }
}

Expr adaptTo(const Expr &E, DType T) { return isImm(E) ? convertImm(E, T) : E; }

struct ScalarDecl {
  std::string Name;
  DType Type;
};

class Parser {
public:
  /// With Undeclared set, reads NNC's codegen statement (parseNNCStatement)
  /// and records its undeclared buffers there.
  Parser(const SourceFile &File, DiagnosticEngine &Diags,
         UndeclaredBuffers *Undeclared = nullptr)
      : File(File), Diags(Diags), Lex(File, Diags, 0, File.text().size()),
        Undeclared(Undeclared) {}

  Module parseModule() {
    Module M;
    while (!peek().is(TokKind::Eof)) {
      Kernel K = parseKernel();
      for (const Kernel &Prev : M.Kernels)
        if (Prev.Name == K.Name)
          fail(K.Loc, "redefinition of kernel '" + K.Name + "'");
      if (K.IsTask)
        Tasks[K.Name] = std::make_shared<const Kernel>(K);
      M.Kernels.push_back(std::move(K));
    }
    if (M.Kernels.empty())
      fail(locOf(peek()), "expected 'kernel'; the file defines no kernel");
    return M;
  }

private:
  //===--------------------------------------------------------------------===//
  // Token handling
  //===--------------------------------------------------------------------===//

  const Token &peek(size_t N = 0) {
    while (Ahead.size() <= N)
      Ahead.push_back(Lex.next());
    return Ahead[N];
  }
  Token take() {
    peek();
    Token T = std::move(Ahead.front());
    Ahead.pop_front();
    return T;
  }
  SourceLoc locOf(const Token &T) const { return File.locOf(T.Offset); }

  [[noreturn]] void fail(SourceLoc L, const std::string &Msg) {
    Diags.error(L, Msg);
    throw ParseAbort();
  }
  [[noreturn]] void failAt(const Token &T, const std::string &Msg) {
    fail(locOf(T), Msg);
  }

  static std::string describe(const Token &T) {
    if (T.is(TokKind::Eof))
      return "end of file";
    return "'" + std::string(T.Text.substr(0, 40)) + "'";
  }

  Token expect(TokKind K, const char *What) {
    if (!peek().is(K))
      failAt(peek(), std::string("expected ") + What + ", found " +
                         describe(peek()));
    return take();
  }
  bool consumeIf(TokKind K) {
    if (!peek().is(K))
      return false;
    take();
    return true;
  }
  Token expectIdent(const char *What) {
    if (!peek().is(TokKind::Ident))
      failAt(peek(), std::string("expected ") + What + ", found " +
                         describe(peek()));
    return take();
  }
  void expectKeyword(std::string_view Kw) {
    if (!peek().isIdent(Kw))
      failAt(peek(), "expected '" + std::string(Kw) + "', found " +
                         describe(peek()));
    take();
  }

  DType parseDTypeName(const Token &T) {
    auto D = parseDType(T.Text);
    if (!D)
      failAt(T, "unknown dtype '" + std::string(T.Text) + "'");
    return *D;
  }

  /// Guards recursion: statement nesting and syntactic expression nesting.
  struct DepthGuard {
    Parser &P;
    DepthGuard(Parser &P, const Token &At) : P(P) {
      if (++P.Nesting > kMaxNestingDepth)
        P.failAt(At, "nesting is too deep (the limit is " +
                         std::to_string(kMaxNestingDepth) + " levels)");
    }
    ~DepthGuard() { --P.Nesting; }
  };

  Expr checkDepth(Expr E) {
    if (E->Depth > kMaxNestingDepth)
      fail(E->Loc, "expression is nested too deeply (the limit is " +
                       std::to_string(kMaxNestingDepth) + " levels)");
    return E;
  }

  //===--------------------------------------------------------------------===//
  // Kernels and parameters
  //===--------------------------------------------------------------------===//

  /// Finds the scalar parameters of the signature before parsing it, since a
  /// buffer's dims may name a scalar declared after it.
  std::vector<ScalarDecl> prescanScalars() {
    std::vector<ScalarDecl> Out;
    int Depth = 0;
    for (size_t I = 0;; ++I) {
      const Token &T = peek(I);
      if (T.is(TokKind::Eof))
        return Out;
      if (T.is(TokKind::LParen) || T.is(TokKind::LBracket))
        ++Depth;
      if (T.is(TokKind::RBracket))
        --Depth;
      if (T.is(TokKind::RParen)) {
        if (--Depth < 0)
          return Out;
      }
      if (Depth != 0 || !T.is(TokKind::Ident) || !peek(I + 1).is(TokKind::Colon))
        continue;
      if (I > 0 && peek(I - 1).is(TokKind::Ident))
        continue; // `in x: ...` is a buffer.
      const Token &Ty = peek(I + 2);
      const Token &After = peek(I + 3);
      if (Ty.is(TokKind::Ident) &&
          (After.is(TokKind::Comma) || After.is(TokKind::RParen))) {
        if (auto D = parseDType(Ty.Text))
          Out.push_back({std::string(T.Text), *D});
      }
    }
  }

  Kernel parseKernel() {
    const Token &KwTok = peek();
    if (!KwTok.isIdent("kernel") && !KwTok.isIdent("task"))
      failAt(KwTok, "expected 'kernel', found " + describe(KwTok));
    Kernel K;
    K.IsTask = KwTok.isIdent("task");
    K.Loc = locOf(take());
    K.Name = std::string(expectIdent("kernel name").Text);
    expect(TokKind::LParen, "'(' after the kernel name");

    Buffers.clear();
    Scopes.clear();
    Visible.clear();
    Scopes.emplace_back();
    ScalarParams.clear();
    for (const ScalarDecl &S : prescanScalars())
      ScalarParams[S.Name] = S.Type;

    if (!peek().is(TokKind::RParen)) {
      while (true) {
        Param P = parseParam();
        for (const Param &Q : K.Params)
          if (Q.Name == P.Name)
            fail(P.Loc, "duplicate parameter '" + P.Name + "'");
        if (P.isBuffer())
          Buffers[P.Name] = P.Buf;
        else
          declare(P.Name, P.Type);
        K.Params.push_back(std::move(P));
        if (consumeIf(TokKind::Comma)) {
          if (peek().is(TokKind::RParen))
            break; // Trailing comma.
          continue;
        }
        break;
      }
    }
    expect(TokKind::RParen, "',' or ')' in the parameter list");
    K.Body = parseBlock();
    return K;
  }

  Param parseParam() {
    Param P;
    std::optional<BufferRole> Role;
    const Token &First = peek();
    if (First.is(TokKind::Ident) && peek(1).is(TokKind::Ident)) {
      if (First.Text == "in")
        Role = BufferRole::In;
      else if (First.Text == "out")
        Role = BufferRole::Out;
      else if (First.Text == "inout")
        Role = BufferRole::InOut;
      else
        failAt(First, "unknown parameter role '" + std::string(First.Text) +
                          "' (expected in, out or inout)");
      take();
    }
    Token NameTok = expectIdent("parameter name");
    P.Name = std::string(NameTok.Text);
    P.Loc = locOf(NameTok);
    expect(TokKind::Colon, "':' after the parameter name");
    Token TyTok = expectIdent("a dtype");
    P.Type = parseDTypeName(TyTok);
    if (!peek().is(TokKind::LBracket)) {
      if (Role)
        failAt(peek(), "buffer parameter '" + P.Name +
                           "' needs its dims, e.g. " +
                           std::string(TyTok.Text) + "[64]");
      return P;
    }
    if (!Role)
      fail(P.Loc, "buffer parameter '" + P.Name +
                      "' needs a role: in, out or inout");
    take();
    std::vector<Expr> Dims;
    if (!peek().is(TokKind::RBracket))
      Dims = parseIndexList(TokKind::RBracket);
    expect(TokKind::RBracket, "']' after the dims");
    LayoutKind Layout = LayoutKind::Contiguous;
    std::vector<Expr> Strides;
    if (peek().isIdent("channels_last")) {
      Token T = take();
      if (Dims.size() != 4 && Dims.size() != 5)
        failAt(T, "channels_last needs a rank-4 or rank-5 buffer, '" + P.Name +
                      "' has rank " + std::to_string(Dims.size()));
      Layout = LayoutKind::ChannelsLast;
    } else if (peek().isIdent("strides")) {
      Token T = take();
      expect(TokKind::LBracket, "'[' after 'strides'");
      if (!peek().is(TokKind::RBracket))
        Strides = parseIndexList(TokKind::RBracket);
      expect(TokKind::RBracket, "']' after the strides");
      if (Strides.size() != Dims.size())
        failAt(T, "buffer '" + P.Name + "' has " + std::to_string(Dims.size()) +
                      " dims but " + std::to_string(Strides.size()) +
                      " strides");
      Layout = LayoutKind::Explicit;
    }
    P.Buf = BufferNode::make(P.Name, P.Type, std::move(Dims), *Role, Layout,
                             std::move(Strides), P.Loc);
    return P;
  }

  /// Comma-separated i64 expressions (dims, strides, sizes): immediates are
  /// made i64.
  std::vector<Expr> parseIndexList(TokKind Close) {
    std::vector<Expr> Out;
    while (true) {
      Out.push_back(adaptTo(parseExpr(), DType::I64));
      if (!consumeIf(TokKind::Comma))
        break;
      if (peek().is(Close))
        break;
    }
    return Out;
  }

  //===--------------------------------------------------------------------===//
  // Statements
  //===--------------------------------------------------------------------===//

  Stmt parseBlock() {
    Token Open = expect(TokKind::LBrace, "'{'");
    DepthGuard G(*this, Open);
    Scopes.emplace_back();
    AliasFrees.emplace_back();
    std::vector<Stmt> Stmts;
    while (!peek().is(TokKind::RBrace)) {
      if (peek().is(TokKind::Eof)) {
        Diags.error(locOf(peek()),
                    "expected '}' to close the block opened at line " +
                        std::to_string(locOf(Open).Line));
        Diags.note(locOf(Open), "the block opened here");
        throw ParseAbort();
      }
      if (consumeIf(TokKind::Semi))
        continue; // Empty statement.
      if (Stmt S = parseStmt())
        Stmts.push_back(std::move(S));
    }
    take();
    popScope();
    for (Stmt &F : AliasFrees.back())
      Stmts.push_back(std::move(F));
    AliasFrees.pop_back();
    return Block::make(std::move(Stmts), locOf(Open));
  }

  Stmt parseStmt() {
    const Token &T = peek();
    if (T.is(TokKind::LBrace))
      return parseBlock();
    if (!T.is(TokKind::Ident))
      failAt(T, "expected a statement, found " + describe(T));
    if (T.Text == "for")
      return parseFor();
    if (T.Text == "if")
      return parseIf();
    if (peek(1).is(TokKind::LParen)) {
      if (T.Text == "Allocate")
        return parseAllocate();
      if (T.Text == "Free")
        return parseFree();
      if (T.Text == "FreeExt")
        return parseFreeExt();
      if (T.Text == "Alias") {
        if (!Undeclared)
          failAt(T, "Alias is not supported; write the temporary as "
                    "Allocate/Free (docs/ir-format.md, Details 12)");
        return parseAlias();
      }
      if (T.Text == "nnc_parallel_for")
        return parseParallelCall();
      if (!lookupVar(T.Text))
        return parseExternalCall();
    }
    if (peek(1).is(TokKind::Ident) && parseDType(T.Text))
      return parseLet();
    return parseStoreOrShortCall();
  }

  /// Parses `/* opt, opt */` comments attached to Tok.
  LoopOptions parseLoopOptions(const Token &Tok) {
    LoopOptions Opts;
    for (const Comment &C : Tok.Leading) {
      if (!C.IsBlock)
        continue;
      size_t P = C.Begin;
      const std::string &Text = File.text();
      while (P < C.End) {
        char Ch = Text[P];
        if (Ch == ' ' || Ch == '\t' || Ch == ',' || Ch == '\n' || Ch == '\r') {
          ++P;
          continue;
        }
        size_t B = P;
        while (P < C.End && Text[P] != ' ' && Text[P] != '\t' &&
               Text[P] != ',' && Text[P] != '\n' && Text[P] != '\r')
          ++P;
        std::string Word = Text.substr(B, P - B);
        if (Word == "parallel")
          Opts.Parallel = true;
        else if (Word == "vectorize")
          Opts.Vectorize = true;
        else if (Word == "lanes")
          Opts.Lanes = true;
        else
          fail(File.locOf(B), "unknown loop option '" + Word +
                                  "' (known: parallel, vectorize, lanes)");
      }
    }
    return Opts;
  }

  Stmt parseFor() {
    Token ForTok = take();
    SourceLoc Loc = locOf(ForTok);
    expect(TokKind::LParen, "'(' after 'for'");
    Token TyTok = expectIdent("the loop variable's type");
    DType VarType = parseDTypeName(TyTok);
    Token VarTok = expectIdent("the loop variable");
    std::string Var(VarTok.Text);
    expect(TokKind::Assign, "'=' after the loop variable");
    Expr Start = adaptTo(parseExpr(), VarType);
    expect(TokKind::Semi, "';' after the loop start");
    Token V2 = expectIdent("the loop variable in the condition");
    if (V2.Text != Var)
      failAt(V2, "loop condition must test '" + Var + "', found '" +
                     std::string(V2.Text) + "'");
    expect(TokKind::Less, "'<' in the loop condition (loops run while var < "
                          "stop)");
    Expr Stop = adaptTo(parseBitOr(), VarType);
    expect(TokKind::Semi, "';' after the loop condition");
    Token V3 = expectIdent("the loop variable in the increment");
    if (V3.Text != Var)
      failAt(V3, "loop increment must be '" + Var + "++', found '" +
                     std::string(V3.Text) + "'");
    expect(TokKind::PlusPlus, "'++' (loops step by 1)");
    expect(TokKind::RParen, "')' after the loop header");
    if (!peek().is(TokKind::LBrace))
      failAt(peek(), "expected '{' to open the loop body, found " +
                         describe(peek()));
    LoopOptions Opts = parseLoopOptions(peek());
    Scopes.emplace_back();
    declare(Var, VarType);
    Stmt Body = parseBlock();
    popScope();
    return For::make(Var, VarType, Start, Stop, Body, Opts, Loc);
  }

  Stmt parseIf() {
    Token IfTok = take();
    expect(TokKind::LParen, "'(' after 'if'");
    bool Negated = consumeIf(TokKind::Bang);
    Expr C = parseExpr();
    expect(TokKind::RParen, "')' after the condition");
    Stmt Then = parseBlock();
    Stmt Else;
    if (peek().isIdent("else")) {
      take();
      Else = peek().isIdent("if") ? Block::make({parseIf()}) : parseBlock();
    }
    if (Negated) {
      if (Else)
        failAt(IfTok, "'if (!...)' cannot have an else branch; swap the "
                      "branches instead");
      return Cond::make(C, nullptr, Then, locOf(IfTok));
    }
    return Cond::make(C, Then, Else, locOf(IfTok));
  }

  Buffer lookupBuffer(const Token &T) {
    auto It = Buffers.find(std::string(T.Text));
    if (It == Buffers.end())
      failUndeclaredBuffer(T);
    return It->second;
  }

  /// The buffers declared so far.
  std::vector<std::string> bufferNames() const {
    std::vector<std::string> R;
    for (const auto &B : Buffers)
      R.push_back(B.first);
    return R;
  }

  /// Every name an identifier in an expression may mean here: buffers,
  /// visible scalars and scalar parameters.
  std::vector<std::string> valueNames() const {
    std::vector<std::string> R = bufferNames();
    for (const auto &V : Visible)
      if (!V.second.empty())
        R.push_back(V.first);
    for (const auto &P : ScalarParams)
      R.push_back(P.first);
    std::sort(R.begin(), R.end()); // Deterministic suggestions.
    return R;
  }

  /// The functions of the language.
  static const std::vector<std::string> &functionNames() {
    static const std::vector<std::string> Names = [] {
      std::vector<std::string> R = {"Max", "Min", "IfThenElse", "mod",
                                    "BitCast"};
#define NNC_INTRINSIC(Enum, Name, Arity) R.push_back(Name);
#include "nnc/IR/Intrinsics.def"
      for (int T = 0; T < kNumDTypes; ++T)
        R.push_back(std::string(dtypeName(static_cast<DType>(T))));
      return R;
    }();
    return Names;
  }

  [[noreturn]] void failUndeclaredBuffer(const Token &T) {
    std::string N(T.Text);
    failAt(T, "use of undeclared buffer '" + N + "'" +
                  didYouMean(N, bufferNames()));
  }

  void checkNewBufferName(const Token &T) {
    std::string N(T.Text);
    if (Buffers.count(N) || lookupVar(N))
      failAt(T, "redeclaration of '" + N + "'");
  }

  Stmt parseAllocate() {
    Token Kw = take();
    expect(TokKind::LParen, "'(' after 'Allocate'");
    Token NameTok = expectIdent("a buffer name");
    expect(TokKind::RParen, "')'");
    Token Semi = expect(TokKind::Semi, "';' after 'Allocate(...)'");
    // The dtype and dims are in the comment that follows on the same line.
    const Token &Next = peek();
    const Comment *Info = nullptr;
    if (!Next.Leading.empty() && !Next.Leading.front().IsBlock &&
        File.locOf(Next.Leading.front().Begin).Line == locOf(Semi).Line)
      Info = &Next.Leading.front();
    std::string Name(NameTok.Text);
    if (!Info)
      failAt(NameTok, "Allocate of '" + Name +
                          "' needs its '// dtype=..., dims=[...]' comment");
    checkNewBufferName(NameTok);
    // Parse the comment's text with a sub-lexer over its range.
    Lexer Sub(File, Diags, Info->Begin, Info->End);
    std::deque<Token> Saved;
    std::swap(Saved, Ahead);
    std::swap(Lex, Sub);
    expectKeyword("dtype");
    expect(TokKind::Assign, "'=' after 'dtype'");
    DType T = parseDTypeName(expectIdent("a dtype"));
    expect(TokKind::Comma, "',' after the dtype");
    expectKeyword("dims");
    expect(TokKind::Assign, "'=' after 'dims'");
    expect(TokKind::LBracket, "'[' to open the dims");
    std::vector<Expr> Dims;
    if (!peek().is(TokKind::RBracket))
      Dims = parseIndexList(TokKind::RBracket);
    expect(TokKind::RBracket, "']' to close the dims");
    expect(TokKind::Eof, "the end of the Allocate comment");
    std::swap(Lex, Sub);
    std::swap(Saved, Ahead);
    Buffer B = BufferNode::make(Name, T, std::move(Dims), BufferRole::Temp,
                                LayoutKind::Contiguous, {}, locOf(NameTok));
    Buffers[Name] = B;
    return Allocate::make(B, locOf(Kw));
  }

  Stmt parseFree() {
    Token Kw = take();
    expect(TokKind::LParen, "'(' after 'Free'");
    Buffer B = lookupBuffer(expectIdent("a buffer name"));
    expect(TokKind::RParen, "')'");
    expect(TokKind::Semi, "';' after 'Free(...)'");
    return Free::make(B, locOf(Kw));
  }

  /// In an NNC statement, returns null: the statement is dropped (its
  /// buffers are outputs, or aliases freed at the end of their block).
  Stmt parseFreeExt() {
    Token Kw = take();
    expect(TokKind::LParen, "'(' after 'FreeExt'");
    expectKeyword("bufs");
    expect(TokKind::Assign, "'=' after 'bufs'");
    expect(TokKind::LBrace, "'{'");
    std::vector<Buffer> Bufs;
    while (!peek().is(TokKind::RBrace)) {
      Token NameTok = expectIdent("a buffer name");
      if (!Undeclared)
        Bufs.push_back(lookupBuffer(NameTok));
      if (!consumeIf(TokKind::Comma))
        break;
    }
    expect(TokKind::RBrace, "'}'");
    expect(TokKind::RParen, "')'");
    expect(TokKind::Semi, "';' after 'FreeExt(...)'");
    if (Undeclared)
      return nullptr;
    return FreeExt::make(std::move(Bufs), locOf(Kw));
  }

  /// The description a later external call gives buffer Name
  /// (`Name(dtype=..., sizes=[...], ...)`), if one does.
  std::optional<BufferView> laterDescription(std::string_view Name) {
    for (size_t I = 0; !peek(I).is(TokKind::Eof); ++I) {
      if (!peek(I).isIdent(Name) || !peek(I + 1).is(TokKind::LParen) ||
          !peek(I + 2).isIdent("dtype"))
        continue;
      // Parse it with a lexer of its own, as an Allocate's comment.
      Token NameTok = peek(I);
      Lexer Sub(File, Diags, peek(I + 1).Offset, File.text().size());
      std::deque<Token> Saved;
      std::swap(Saved, Ahead);
      std::swap(Lex, Sub);
      BufferView V = parseDescription(NameTok);
      std::swap(Lex, Sub);
      std::swap(Saved, Ahead);
      return V;
    }
    return std::nullopt;
  }

  /// NNC's `Alias(a, b);`: a reuses temporary b's memory. Here a becomes a
  /// temporary of its own, allocated with the dtype and sizes of the
  /// description an external call gives a, or else of b (NNC's memory
  /// planner chose b at least as large; the statement indexes both with
  /// flat offsets), and freed at the end of the block.
  Stmt parseAlias() {
    Token Kw = take();
    expect(TokKind::LParen, "'(' after 'Alias'");
    Token NameTok = expectIdent("a buffer name");
    expect(TokKind::Comma, "',' after the alias's name");
    Token ReusedTok = expectIdent("a buffer name");
    expect(TokKind::RParen, "')'");
    expect(TokKind::Semi, "';' after 'Alias(...)'");
    Buffer Reused = lookupBuffer(ReusedTok);
    if (Reused->Role != BufferRole::Temp ||
        Reused->Layout != LayoutKind::Contiguous)
      failAt(ReusedTok, "Alias(" + std::string(NameTok.Text) + ", " +
                            Reused->Name + "): '" + Reused->Name +
                            "' is not an allocated temporary");
    checkNewBufferName(NameTok);
    std::string Name(NameTok.Text);
    DType T = Reused->Type;
    std::vector<Expr> Dims = Reused->Dims;
    if (std::optional<BufferView> V = laterDescription(Name)) {
      T = V->Type;
      Dims = V->Sizes;
    }
    Buffer B = BufferNode::make(Name, T, std::move(Dims), BufferRole::Temp,
                                LayoutKind::Contiguous, {}, locOf(NameTok));
    Buffers[Name] = B;
    AliasFrees.back().push_back(Free::make(B, locOf(Kw)));
    return Allocate::make(B, locOf(Kw));
  }

  /// In an NNC statement, declares Name, an argument of an external call
  /// that nothing declares (a prepacked convolution's context), as
  /// described or else as bytes (UndeclaredBuffers::Opaque).
  Buffer declareOpaque(const Token &NameTok, DType T, std::vector<Expr> Dims,
                       std::vector<Expr> Strides) {
    std::string Name(NameTok.Text);
    checkNewBufferName(NameTok);
    Buffer B = BufferNode::make(Name, T, std::move(Dims), BufferRole::In,
                                Strides.empty() ? LayoutKind::Contiguous
                                                : LayoutKind::Explicit,
                                std::move(Strides), locOf(NameTok));
    Buffers[Name] = B;
    Undeclared->Opaque.push_back(Name);
    return B;
  }

  /// In an NNC statement, declares Name, which the statement writes first
  /// here, as an output to be declared (UndeclaredBuffers::Written).
  Buffer declareWritten(const Token &NameTok, DType T, std::vector<Expr> Dims,
                        LayoutKind Layout, std::vector<Expr> Strides) {
    std::string Name(NameTok.Text);
    checkNewBufferName(NameTok);
    Buffer B = BufferNode::make(Name, T, std::move(Dims), BufferRole::Out,
                                Layout, std::move(Strides), locOf(NameTok));
    Buffers[Name] = B;
    Undeclared->Written.push_back(Name);
    return B;
  }

  /// `(dtype=T, sizes=[...], strides=[...][, layout=blocked])`, the
  /// description of NameTok's buffer in an external call.
  BufferView parseDescription(const Token &NameTok) {
    std::string Name(NameTok.Text);
    expect(TokKind::LParen, "'('");
    BufferView V;
    V.Explicit = true;
    V.Loc = locOf(NameTok);
    expectKeyword("dtype");
    expect(TokKind::Assign, "'=' after 'dtype'");
    V.Type = parseDTypeName(expectIdent("a dtype"));
    expect(TokKind::Comma, "','");
    expectKeyword("sizes");
    expect(TokKind::Assign, "'=' after 'sizes'");
    expect(TokKind::LBracket, "'['");
    if (!peek().is(TokKind::RBracket))
      V.Sizes = parseIndexList(TokKind::RBracket);
    expect(TokKind::RBracket, "']'");
    expect(TokKind::Comma, "','");
    expectKeyword("strides");
    expect(TokKind::Assign, "'=' after 'strides'");
    expect(TokKind::LBracket, "'['");
    if (!peek().is(TokKind::RBracket))
      V.Strides = parseIndexList(TokKind::RBracket);
    expect(TokKind::RBracket, "']'");
    if (peek().is(TokKind::Comma)) {
      take();
      expectKeyword("layout");
      expect(TokKind::Assign, "'=' after 'layout'");
      Token L = expectIdent("a layout");
      if (L.Text != "blocked")
        failAt(L, "unknown layout '" + std::string(L.Text) +
                      "' (known: blocked)");
      V.Blocked = true;
    }
    expect(TokKind::RParen, "')' to close the buffer description");
    if (V.Sizes.size() != V.Strides.size())
      failAt(NameTok, "buffer description of '" + Name + "' has " +
                          std::to_string(V.Sizes.size()) + " sizes but " +
                          std::to_string(V.Strides.size()) + " strides");
    return V;
  }

  /// `name` or `name(dtype=T, sizes=[...], strides=[...][, layout=blocked])`.
  /// For an output that is not declared yet, returns a view of a new
  /// temporary.
  BufferView parseView(bool IsOutput, bool &Declares) {
    Token NameTok = expectIdent("a buffer name");
    std::string Name(NameTok.Text);
    auto It = Buffers.find(Name);
    Declares = false;
    if (!peek().is(TokKind::LParen)) {
      if (It == Buffers.end() && Undeclared && !IsOutput)
        return BufferView::of(declareOpaque(NameTok, DType::U8, {}, {}),
                              locOf(NameTok));
      if (It == Buffers.end())
        failAt(NameTok, IsOutput ? "output buffer '" + Name +
                                       "' is not declared; describe it in "
                                       "full: " +
                                       Name +
                                       "(dtype=..., sizes=[...], "
                                       "strides=[...])"
                                 : "use of undeclared buffer '" + Name + "'" +
                                       didYouMean(Name, bufferNames()));
      return BufferView::of(It->second, locOf(NameTok));
    }
    BufferView V = parseDescription(NameTok);
    if (It != Buffers.end()) {
      V.Buf = It->second;
    } else if (Undeclared && IsOutput) {
      V.Buf = declareWritten(NameTok, V.Type, V.Sizes, LayoutKind::Explicit,
                             V.Strides);
    } else if (Undeclared) {
      V.Buf = declareOpaque(NameTok, V.Type, V.Sizes, V.Strides);
    } else {
      if (!IsOutput)
        failUndeclaredBuffer(NameTok);
      checkNewBufferName(NameTok);
      V.Buf = BufferNode::make(Name, V.Type, V.Sizes, BufferRole::Temp,
                               LayoutKind::Explicit, V.Strides, V.Loc);
      Buffers[Name] = V.Buf;
      Declares = true;
    }
    return V;
  }

  Stmt parseCallRest(BufferView Out, bool Declares, SourceLoc Loc) {
    Token Fn = expectIdent("an external function name");
    expect(TokKind::LParen, "'(' after the function name");
    expectKeyword("buf_args");
    expect(TokKind::Assign, "'=' after 'buf_args'");
    expect(TokKind::LBrace, "'{'");
    std::vector<BufferView> Args;
    while (!peek().is(TokKind::RBrace)) {
      bool Dummy;
      Args.push_back(parseView(false, Dummy));
      if (!consumeIf(TokKind::Comma))
        break;
    }
    expect(TokKind::RBrace, "'}' to close buf_args");
    std::vector<Expr> Scalars;
    if (consumeIf(TokKind::Comma)) {
      expectKeyword("args");
      expect(TokKind::Assign, "'=' after 'args'");
      expect(TokKind::LBrace, "'{'");
      while (!peek().is(TokKind::RBrace)) {
        Scalars.push_back(parseExpr());
        if (!consumeIf(TokKind::Comma))
          break;
      }
      expect(TokKind::RBrace, "'}' to close args");
    }
    std::vector<PostOp> Posts;
    if (consumeIf(TokKind::Comma))
      Posts = parsePostOps();
    expect(TokKind::RParen, "')' to close the call");
    consumeIf(TokKind::Semi); // NNC prints none; accept both.
    return ExternalCall::make(std::move(Out), std::string(Fn.Text),
                              std::move(Args), std::move(Scalars), Declares,
                              Loc, std::move(Posts));
  }

  /// post_ops={relu, clamp(0.f, 6.f), leaky_relu(0.01f), add(z), ...}
  std::vector<PostOp> parsePostOps() {
    expectKeyword("post_ops");
    expect(TokKind::Assign, "'=' after 'post_ops'");
    expect(TokKind::LBrace, "'{'");
    std::vector<PostOp> Posts;
    while (!peek().is(TokKind::RBrace)) {
      Token Name = expectIdent("a post-op");
      auto K = lookupPostOp(Name.Text);
      if (!K)
        failAt(Name, "unknown post-op '" + std::string(Name.Text) +
                         "' (known: relu, leaky_relu, clamp, sigmoid, tanh, "
                         "gelu_erf, gelu_tanh, silu, hardswish, add)");
      PostOp P;
      P.Kind = *K;
      if (*K == PostOpKind::Add) {
        expect(TokKind::LParen, "'(' after 'add'");
        bool Dummy;
        P.Other = parseView(false, Dummy);
        expect(TokKind::RParen, "')'");
      } else if (unsigned N = postOpParams(*K)) {
        expect(TokKind::LParen, "'(' for the post-op's parameters");
        double Vals[2] = {0, 0};
        for (unsigned I = 0; I < N; ++I) {
          if (I)
            expect(TokKind::Comma, "','");
          Expr E = parseExpr();
          auto *F = dyn_cast<FloatImm>(E);
          if (!F)
            fail(E->Loc, "a post-op parameter must be a float literal");
          Vals[I] = F->Value;
        }
        expect(TokKind::RParen, "')'");
        P.Alpha = Vals[0];
        P.Beta = Vals[1];
      }
      Posts.push_back(std::move(P));
      if (!consumeIf(TokKind::Comma))
        break;
    }
    expect(TokKind::RBrace, "'}' to close post_ops");
    return Posts;
  }

  Stmt parseExternalCall() {
    SourceLoc Loc = locOf(peek());
    bool Declares;
    BufferView Out = parseView(true, Declares);
    expect(TokKind::Assign, "'=' after the call's output");
    return parseCallRest(std::move(Out), Declares, Loc);
  }

  /// nnc_parallel_for(task=T, start=E, stop=E, grain=E, args={...});
  Stmt parseParallelCall() {
    Token Kw = take();
    expect(TokKind::LParen, "'(' after 'nnc_parallel_for'");
    expectKeyword("task");
    expect(TokKind::Assign, "'=' after 'task'");
    Token Name = expectIdent("a task name");
    auto It = Tasks.find(std::string(Name.Text));
    if (It == Tasks.end())
      failAt(Name, "unknown task '" + std::string(Name.Text) +
                       "' (a task must be defined before it is called)");
    Expr Bounds[3];
    const char *Keys[3] = {"start", "stop", "grain"};
    for (int I = 0; I < 3; ++I) {
      expect(TokKind::Comma, "','");
      expectKeyword(Keys[I]);
      expect(TokKind::Assign, "'='");
      Bounds[I] = adaptTo(parseExpr(), DType::I64);
    }
    expect(TokKind::Comma, "','");
    expectKeyword("args");
    expect(TokKind::Assign, "'=' after 'args'");
    expect(TokKind::LBrace, "'{'");
    std::vector<TaskArg> Args;
    while (!peek().is(TokKind::RBrace)) {
      TaskArg A;
      const Token &T = peek();
      if (T.is(TokKind::Ident) && Buffers.count(std::string(T.Text)) &&
          !lookupVar(T.Text) &&
          (peek(1).is(TokKind::Comma) || peek(1).is(TokKind::RBrace))) {
        A.Buf = Buffers[std::string(take().Text)];
      } else {
        A.Scalar = parseExpr();
      }
      Args.push_back(std::move(A));
      if (!consumeIf(TokKind::Comma))
        break;
    }
    expect(TokKind::RBrace, "'}' to close args");
    expect(TokKind::RParen, "')'");
    expect(TokKind::Semi, "';' after nnc_parallel_for(...)");
    // Literal scalar arguments take the type of the task's parameter.
    const Kernel &Task = *It->second;
    for (size_t I = 0; I < Args.size() && I + 2 < Task.Params.size(); ++I)
      if (Args[I].Scalar && !Task.Params[I + 2].isBuffer())
        Args[I].Scalar = adaptTo(Args[I].Scalar, Task.Params[I + 2].Type);
    return ParallelCall::make(It->second, Bounds[0], Bounds[1], Bounds[2],
                              std::move(Args), locOf(Kw));
  }

  Stmt parseLet() {
    Token TyTok = take();
    DType T = parseDTypeName(TyTok);
    Token NameTok = expectIdent("a variable name");
    expect(TokKind::Assign, "'=' in the let");
    Expr V = adaptTo(parseExpr(), T);
    expect(TokKind::Semi, "';' after the let");
    declare(std::string(NameTok.Text), T);
    return Let::make(std::string(NameTok.Text), T, V, locOf(TyTok));
  }

  Stmt parseStoreOrShortCall() {
    Token NameTok = take();
    SourceLoc Loc = locOf(NameTok);
    if (peek().is(TokKind::Assign) && peek(1).is(TokKind::Ident) &&
        peek(2).is(TokKind::LParen) && peek(3).isIdent("buf_args")) {
      take();
      auto It = Buffers.find(std::string(NameTok.Text));
      if (It == Buffers.end())
        failAt(NameTok, "output buffer '" + std::string(NameTok.Text) +
                            "' is not declared; describe it in full: " +
                            std::string(NameTok.Text) +
                            "(dtype=..., sizes=[...], strides=[...])");
      return parseCallRest(BufferView::of(It->second, Loc), false, Loc);
    }
    if (lookupVar(NameTok.Text))
      failAt(NameTok, "cannot assign to '" + std::string(NameTok.Text) +
                          "': it is a scalar, not a buffer");
    bool Undecl = Undeclared && !Buffers.count(std::string(NameTok.Text));
    Buffer B = Undecl ? nullptr : lookupBuffer(NameTok);
    std::vector<Expr> Idx;
    if (consumeIf(TokKind::LBracket)) {
      Idx = nncIndices(B, parseIndices());
    }
    expect(TokKind::Assign, "'=' in the store");
    Expr V = parseExpr();
    // An output NNC's statement writes first here: its dtype is the
    // value's; its dims are unknown (one 0 per index) until it is declared.
    if (Undecl)
      B = declareWritten(
          NameTok, V->Type,
          std::vector<Expr>(Idx.size(), IntImm::make(DType::I64, 0)),
          LayoutKind::Contiguous, {});
    V = adaptTo(V, B->Type);
    expect(TokKind::Semi, "';' after the store");
    return Store::make(B, std::move(Idx), V, Loc);
  }

  /// NNC's statement indexes every buffer by one flat element offset, where
  /// .nnc reads the one index of a rank-1 buffer as its dimension's, times
  /// the stride: there, NNC's offset (stride * i) becomes the index (a
  /// column `boxes[:, 0]` of a [N, 4] tensor is read at 4 * i).
  std::vector<Expr> nncIndices(const Buffer &B, std::vector<Expr> Idx) {
    if (!Undeclared || !B || Idx.size() != 1 || B->Dims.size() != 1)
      return Idx;
    std::optional<int64_t> S = getConstInt(B->Strides[0]);
    if (S && *S != 0 && *S != 1)
      Idx[0] = Binary::make(BinOp::Div, Idx[0],
                            IntImm::make(Idx[0]->Type, *S, Idx[0]->Loc),
                            Idx[0]->Loc);
    return Idx;
  }

  std::vector<Expr> parseIndices() {
    std::vector<Expr> Idx;
    while (true) {
      Idx.push_back(parseExpr());
      if (!consumeIf(TokKind::Comma))
        break;
    }
    expect(TokKind::RBracket, "']' after the indices");
    return Idx;
  }

  //===--------------------------------------------------------------------===//
  // Expressions
  //===--------------------------------------------------------------------===//

  /// The innermost declaration of Name in scope (a hash lookup: kernels of
  /// 10^5 lets must not parse in quadratic time).
  const ScalarDecl *lookupVar(std::string_view Name) const {
    auto It = Visible.find(std::string(Name));
    return It == Visible.end() || It->second.empty() ? nullptr
                                                     : &It->second.back();
  }
  void declare(const std::string &Name, DType T) {
    Scopes.back().push_back(Name);
    Visible[Name].push_back({Name, T});
  }
  void popScope() {
    for (const std::string &N : Scopes.back())
      Visible[N].pop_back();
    Scopes.pop_back();
  }

  static std::optional<CmpOp> cmpOpOf(TokKind K) {
    switch (K) {
    case TokKind::EqEq:
      return CmpOp::EQ;
    case TokKind::NotEq:
      return CmpOp::NE;
    case TokKind::Less:
      return CmpOp::LT;
    case TokKind::LessEq:
      return CmpOp::LE;
    case TokKind::Greater:
      return CmpOp::GT;
    case TokKind::GreaterEq:
      return CmpOp::GE;
    default:
      return std::nullopt;
    }
  }

  /// select := bitor [cmp bitor '?' select ':' select]
  Expr parseExpr() {
    DepthGuard G(*this, peek());
    Expr L = parseBitOr();
    auto Op = cmpOpOf(peek().Kind);
    if (!Op)
      return L;
    Token OpTok = take();
    Expr R = parseBitOr();
    if (!peek().is(TokKind::Question))
      failAt(peek(), "expected '?' after the comparison, found " +
                         describe(peek()) +
                         " (a comparison is only allowed in 'a < b ? x : y')");
    take();
    Expr T = parseExpr();
    expect(TokKind::Colon, "':' in the select");
    Expr F = parseExpr();
    unify(L, R);
    unify(T, F);
    return checkDepth(CompareSelect::make(*Op, L, R, T, F, L->Loc));
  }

  static std::optional<std::pair<BinOp, int>> binOpOf(TokKind K) {
    switch (K) {
    case TokKind::Pipe:
      return std::pair(BinOp::Or, 3);
    case TokKind::Caret:
      return std::pair(BinOp::Xor, 4);
    case TokKind::Amp:
      return std::pair(BinOp::And, 5);
    case TokKind::Shl:
      return std::pair(BinOp::Shl, 6);
    case TokKind::Shr:
      return std::pair(BinOp::Shr, 6);
    case TokKind::Plus:
      return std::pair(BinOp::Add, 7);
    case TokKind::Minus:
      return std::pair(BinOp::Sub, 7);
    case TokKind::Star:
      return std::pair(BinOp::Mul, 8);
    case TokKind::Slash:
      return std::pair(BinOp::Div, 8);
    case TokKind::Percent:
      return std::pair(BinOp::Mod, 8);
    default:
      return std::nullopt;
    }
  }

  Expr parseBitOr() { return parseBinary(3); }

  Expr parseBinary(int MinPrec) {
    Expr L = parseUnary();
    while (true) {
      auto Op = binOpOf(peek().Kind);
      if (!Op || Op->second < MinPrec)
        return L;
      take();
      Expr R = parseBinary(Op->second + 1);
      unify(L, R);
      L = checkDepth(Binary::make(Op->first, L, R, L->Loc));
    }
  }

  Expr parseUnary() {
    const Token &T = peek();
    if (T.is(TokKind::Minus)) {
      DepthGuard G(*this, T);
      Token MinusTok = take();
      if (peek().is(TokKind::IntLit) || peek().is(TokKind::FloatLit))
        return parseLiteral(/*Negate=*/true, locOf(MinusTok));
      Expr A = parseUnary();
      return checkDepth(Neg::make(A, locOf(MinusTok)));
    }
    if (T.is(TokKind::Plus)) {
      DepthGuard G(*this, T);
      take();
      return parseUnary();
    }
    return parsePrimary();
  }

  Expr parseLiteral(bool Negate, SourceLoc Loc) {
    Token T = take();
    if (T.is(TokKind::FloatLit)) {
      DType Ty = T.IsF32 ? DType::F32 : DType::F64;
      return FloatImm::make(Ty, Negate ? -T.FloatVal : T.FloatVal, Loc);
    }
    DType Ty = T.Is64 ? DType::I64 : DType::I32;
    uint64_t Max = Ty == DType::I64 ? uint64_t(INT64_MAX) : uint64_t(INT32_MAX);
    if (T.IntVal > Max + (Negate ? 1 : 0))
      failAt(T, "integer literal '" + std::string(T.Text.substr(0, 32)) +
                    "' does not fit in " + std::string(dtypeName(Ty)));
    int64_t V = Negate ? static_cast<int64_t>(0 - T.IntVal)
                       : static_cast<int64_t>(T.IntVal);
    return IntImm::make(Ty, V, Loc);
  }

  std::vector<Expr> parseCallArgs(const Token &Fn) {
    expect(TokKind::LParen, "'('");
    std::vector<Expr> Args;
    if (!peek().is(TokKind::RParen)) {
      while (true) {
        Args.push_back(parseExpr());
        if (!consumeIf(TokKind::Comma))
          break;
      }
    }
    if (!peek().is(TokKind::RParen))
      failAt(peek(), "expected ',' or ')' in the arguments of '" +
                         std::string(Fn.Text) + "', found " + describe(peek()));
    take();
    return Args;
  }

  void checkArity(const Token &Fn, const std::vector<Expr> &Args, size_t N) {
    if (Args.size() != N)
      failAt(Fn, "'" + std::string(Fn.Text) + "' takes " + std::to_string(N) +
                     " argument" + (N == 1 ? "" : "s") + ", " +
                     std::to_string(Args.size()) + " given");
  }

  Expr parsePrimary() {
    const Token &T = peek();
    SourceLoc Loc = locOf(T);
    if (T.is(TokKind::IntLit) || T.is(TokKind::FloatLit))
      return parseLiteral(false, Loc);
    if (T.is(TokKind::LParen)) {
      take();
      Expr E = parseExpr();
      expect(TokKind::RParen, "')'");
      return E;
    }
    if (!T.is(TokKind::Ident))
      failAt(T, "expected an expression, found " + describe(T));
    Token Id = take();
    std::string_view N = Id.Text;
    bool Call = peek().is(TokKind::LParen);

    if (N == "true" || N == "false")
      return IntImm::make(DType::Bool, N == "true", Loc);
    if (N == "NAN")
      return FloatImm::make(DType::F32, std::numeric_limits<double>::quiet_NaN(),
                            Loc);
    if (N == "POS_INFINITY" || N == "NEG_INFINITY")
      return FloatImm::make(DType::F32,
                            N == "POS_INFINITY"
                                ? std::numeric_limits<double>::infinity()
                                : -std::numeric_limits<double>::infinity(),
                            Loc);
    if (N == "BitCast") {
      expect(TokKind::Less, "'<' after BitCast");
      DType To = parseDTypeName(expectIdent("a dtype"));
      expect(TokKind::Greater, "'>'");
      auto Args = parseCallArgs(Id);
      checkArity(Id, Args, 1);
      return checkDepth(BitCast::make(To, Args[0], Loc));
    }
    if (Call && !lookupVar(N) && !Buffers.count(std::string(N)))
      return parseCall(Id, Loc);

    if (const ScalarDecl *D = lookupVar(N)) {
      if (peek().is(TokKind::LBracket))
        failAt(peek(), "'" + std::string(N) + "' is a scalar, not a buffer");
      return Var::make(D->Type, std::string(N), Loc);
    }
    auto It = ScalarParams.find(std::string(N));
    if (It != ScalarParams.end() && Scopes.size() == 1)
      return Var::make(It->second, std::string(N), Loc); // In the signature.
    auto B = Buffers.find(std::string(N));
    if (B == Buffers.end())
      failAt(Id, "use of undeclared identifier '" + std::string(N) + "'" +
                     didYouMean(N, valueNames()));
    std::vector<Expr> Idx;
    if (consumeIf(TokKind::LBracket))
      Idx = nncIndices(B->second, parseIndices());
    return checkDepth(Load::make(B->second, std::move(Idx), Loc));
  }

  Expr parseCall(const Token &Id, SourceLoc Loc) {
    std::string_view N = Id.Text;
    if (N == "Ramp" || N == "Broadcast")
      failAt(Id, "vector expression '" + std::string(N) +
                     "' is not supported; give the scalar loop instead");
    auto Args = parseCallArgs(Id);
    if (N == "IfThenElse") {
      checkArity(Id, Args, 3);
      unify(Args[1], Args[2]);
      return checkDepth(IfThenElse::make(Args[0], Args[1], Args[2], Loc));
    }
    if (N == "Max" || N == "Min") {
      if (Args.size() != 2 && Args.size() != 3)
        failAt(Id, "'" + std::string(N) +
                       "' takes 2 or 3 arguments (a, b, propagate_nans)");
      bool Prop = true;
      if (Args.size() == 3) {
        auto C = getConstInt(Args[2]);
        if (!C)
          fail(Args[2]->Loc, "the propagate_nans flag of '" + std::string(N) +
                                 "' must be an integer constant");
        Prop = *C != 0;
      }
      unify(Args[0], Args[1]);
      return checkDepth(Binary::make(N == "Max" ? BinOp::Max : BinOp::Min,
                                     Args[0], Args[1], Loc, Prop));
    }
    if (N == "mod") {
      checkArity(Id, Args, 2);
      unify(Args[0], Args[1]);
      return checkDepth(Binary::make(BinOp::Mod, Args[0], Args[1], Loc));
    }
    if (auto Op = lookupIntrinsic(N)) {
      checkArity(Id, Args, intrinsicArity(*Op));
      if (Args.size() == 2)
        unify(Args[0], Args[1]);
      return checkDepth(Intrinsic::make(*Op, std::move(Args), Loc));
    }
    if (auto To = parseDType(N)) {
      checkArity(Id, Args, 1);
      if (isImm(Args[0])) {
        // Fold casts of literals: `float(5)` is the literal 5.f, and the
        // printer writes f16, bf16 and narrow integer literals this way.
        ScalarValue V;
        if (auto *I = dyn_cast<IntImm>(Args[0]))
          V.I = I->Value;
        else
          V.F = cast<FloatImm>(Args[0])->Value;
        ScalarValue R = convertScalar(Args[0]->Type, *To, V);
        return isFloat(*To) ? FloatImm::make(*To, R.F, Loc)
                            : IntImm::make(*To, R.I, Loc);
      }
      return checkDepth(Cast::make(*To, Args[0], Loc));
    }
    failAt(Id, "unknown function '" + std::string(N) + "'" +
                   didYouMean(N, functionNames()));
  }

  const SourceFile &File;
  DiagnosticEngine &Diags;
  Lexer Lex;
  std::deque<Token> Ahead;
  unsigned Nesting = 0;

  std::map<std::string, Buffer> Buffers;
  /// The names each open scope declares, innermost last, and every visible
  /// declaration of each name, innermost last.
  std::vector<std::vector<std::string>> Scopes;
  std::unordered_map<std::string, std::vector<ScalarDecl>> Visible;
  std::unordered_map<std::string, DType> ScalarParams;
  std::map<std::string, std::shared_ptr<const Kernel>> Tasks;
  /// The Free of each Alias, per open block, appended when it closes.
  std::vector<std::vector<Stmt>> AliasFrees;
  /// Set when reading an NNC statement.
  UndeclaredBuffers *Undeclared;
};

} // namespace

std::optional<Module> parseModule(const SourceFile &File,
                                  DiagnosticEngine &Diags) {
  try {
    Parser P(File, Diags);
    return P.parseModule();
  } catch (const ParseAbort &) {
    return std::nullopt;
  }
}

std::optional<Kernel> parseNNCStatement(const SourceFile &File,
                                        DiagnosticEngine &Diags,
                                        UndeclaredBuffers &Undeclared) {
  Undeclared = {};
  try {
    Parser P(File, Diags, &Undeclared);
    Module M = P.parseModule();
    if (M.Kernels.size() != 1 || M.Kernels[0].IsTask) {
      Diags.error(M.Kernels.back().Loc,
                  "expected one kernel holding NNC's statement");
      return std::nullopt;
    }
    return std::move(M.Kernels[0]);
  } catch (const ParseAbort &) {
    return std::nullopt;
  }
}

} // namespace nnc
