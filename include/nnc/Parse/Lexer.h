//===- Lexer.h - Tokens of the .nnc language --------------------*- C++ -*-===//
#ifndef NNC_PARSE_LEXER_H
#define NNC_PARSE_LEXER_H

#include "nnc/Support/Diagnostics.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace nnc {

enum class TokKind : uint8_t {
  Eof,
  Ident,
  IntLit,   ///< Magnitude in IntVal; Is64 for an `ll` suffix.
  FloatLit, ///< Value in FloatVal; IsF32 for an `f` suffix.
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Semi,
  Colon,
  Question,
  Assign,
  EqEq,
  NotEq,
  Less,
  LessEq,
  Greater,
  GreaterEq,
  Shl,
  Shr,
  Plus,
  PlusPlus,
  Minus,
  Star,
  Slash,
  Percent,
  Amp,
  Pipe,
  Caret,
  Bang,
};

/// A comment that precedes a token. Block comments carry loop options
/// (`/* parallel */`) and a line comment after `Allocate(x);` carries its
/// dtype and dims, so the lexer keeps them instead of dropping them.
struct Comment {
  bool IsBlock;
  size_t Begin; ///< Offset of the first character of the comment's content.
  size_t End;   ///< Offset one past the content (before `*/` or newline).
};

struct Token {
  TokKind Kind = TokKind::Eof;
  size_t Offset = 0;
  size_t Length = 0;
  std::string_view Text;
  uint64_t IntVal = 0;
  double FloatVal = 0;
  bool Is64 = false;
  bool IsF32 = false;
  std::vector<Comment> Leading;

  bool is(TokKind K) const { return Kind == K; }
  bool isIdent(std::string_view S) const {
    return Kind == TokKind::Ident && Text == S;
  }
};

/// Thrown (internally only) after a diagnostic has been reported; the parser
/// entry point catches it, so no exception leaves the library.
struct ParseAbort {};

class Lexer {
public:
  /// Lexes File->text() in [Begin, End).
  Lexer(const SourceFile &File, DiagnosticEngine &Diags, size_t Begin,
        size_t End);

  Token next();
  size_t offset() const { return Pos; }

private:
  [[noreturn]] void fail(size_t Offset, const std::string &Msg);
  void skipSpaceAndComments(Token &T);
  void lexNumber(Token &T);

  const SourceFile *File;
  DiagnosticEngine *Diags;
  std::string_view Src;
  size_t Pos;
  size_t End;
};

} // namespace nnc

#endif // NNC_PARSE_LEXER_H
