//===- Lexer.cpp - Tokens of the .nnc language ----------------------------===//
#include "nnc/Parse/Lexer.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace nnc {

namespace {
bool isIdentStart(char C) {
  return (C >= 'a' && C <= 'z') || (C >= 'A' && C <= 'Z') || C == '_';
}
bool isDigit(char C) { return C >= '0' && C <= '9'; }
bool isIdentChar(char C) { return isIdentStart(C) || isDigit(C); }
/// True if only blanks precede Pos on its line.
bool atLineStart(std::string_view Src, size_t Pos) {
  for (size_t I = Pos; I > 0; --I) {
    char P = Src[I - 1];
    if (P == '\n' || P == '\r')
      return true;
    if (P != ' ' && P != '\t')
      return false;
  }
  return true;
}
/// A literal's text for a message, shortened if long.
std::string shown(const std::string &Digits) {
  return Digits.size() <= 32 ? Digits : Digits.substr(0, 32) + "...";
}
} // namespace

Lexer::Lexer(const SourceFile &F, DiagnosticEngine &D, size_t Begin,
             size_t E)
    : File(&F), Diags(&D), Src(F.text()), Pos(Begin), End(E) {
  // A UTF-8 byte-order mark at the start of the file is not text.
  if (Pos == 0 && Src.substr(0, 3) == "\xEF\xBB\xBF")
    Pos = std::min<size_t>(3, End);
}

void Lexer::fail(size_t Offset, const std::string &Msg) {
  Diags->error(File->locOf(Offset), Msg);
  throw ParseAbort();
}

void Lexer::skipSpaceAndComments(Token &T) {
  while (Pos < End) {
    char C = Src[Pos];
    if (C == ' ' || C == '\t' || C == '\n' || C == '\r' || C == '\f' ||
        C == '\v') {
      ++Pos;
      continue;
    }
    if (C == '#' && atLineStart(Src, Pos)) {
      size_t Begin = Pos + 1;
      while (Pos < End && Src[Pos] != '\n' && Src[Pos] != '\r')
        ++Pos;
      T.Leading.push_back({false, Begin, Pos});
      continue;
    }
    if (C == '/' && Pos + 1 < End && Src[Pos + 1] == '/') {
      size_t Begin = Pos + 2;
      while (Pos < End && Src[Pos] != '\n' && Src[Pos] != '\r')
        ++Pos;
      T.Leading.push_back({false, Begin, Pos});
      continue;
    }
    if (C == '/' && Pos + 1 < End && Src[Pos + 1] == '*') {
      size_t Start = Pos;
      size_t Close = Src.find("*/", Pos + 2);
      if (Close == std::string_view::npos || Close + 2 > End)
        fail(Start, "unterminated block comment");
      T.Leading.push_back({true, Pos + 2, Close});
      Pos = Close + 2;
      continue;
    }
    return;
  }
}

void Lexer::lexNumber(Token &T) {
  size_t Start = Pos;
  bool IsFloat = false;
  while (Pos < End && isDigit(Src[Pos]))
    ++Pos;
  if (Pos < End && Src[Pos] == '.') {
    IsFloat = true;
    ++Pos;
    while (Pos < End && isDigit(Src[Pos]))
      ++Pos;
  }
  if (Pos < End && (Src[Pos] == 'e' || Src[Pos] == 'E')) {
    size_t P = Pos + 1;
    if (P < End && (Src[P] == '+' || Src[P] == '-'))
      ++P;
    if (P < End && isDigit(Src[P])) {
      IsFloat = true;
      Pos = P;
      while (Pos < End && isDigit(Src[Pos]))
        ++Pos;
    } else {
      fail(Pos, "exponent has no digits");
    }
  }
  std::string Digits(Src.substr(Start, Pos - Start));
  bool HasExponent = Digits.find_first_of("eE") != std::string::npos;
  // NNC writes large integral floats as `1e+20.f` or `1e+20.0`.
  if (HasExponent && Pos + 1 < End && Src[Pos] == '.' &&
      (Src[Pos + 1] == 'f' || Src[Pos + 1] == 'F' || Src[Pos + 1] == '0')) {
    ++Pos;
    if (Src[Pos] == '0') {
      while (Pos < End && Src[Pos] == '0')
        ++Pos;
    }
  }
  if (Pos < End && (Src[Pos] == 'f' || Src[Pos] == 'F')) {
    if (!IsFloat)
      fail(Start, "integer literal with an 'f' suffix; write '" + shown(Digits) +
                      ".f'");
    T.IsF32 = true;
    ++Pos;
  } else if (!IsFloat && Pos < End && (Src[Pos] == 'l' || Src[Pos] == 'L')) {
    ++Pos;
    if (Pos < End && (Src[Pos] == 'l' || Src[Pos] == 'L'))
      ++Pos;
    T.Is64 = true;
  }
  if (Pos < End && (isIdentChar(Src[Pos]) || Src[Pos] == '.'))
    fail(Pos, "invalid character '" + std::string(1, Src[Pos]) +
                  "' in numeric literal");
  if (IsFloat) {
    T.Kind = TokKind::FloatLit;
    errno = 0;
    const char *B = Digits.c_str();
    char *E = nullptr;
    double V = T.IsF32 ? static_cast<double>(std::strtof(B, &E))
                       : std::strtod(B, &E);
    if (E != B + Digits.size())
      fail(Start, "malformed floating literal '" + shown(Digits) + "'");
    if (std::isinf(V))
      fail(Start, "floating literal '" + shown(Digits) + "' is out of range for " +
                      (T.IsF32 ? "f32" : "f64"));
    T.FloatVal = V;
    return;
  }
  T.Kind = TokKind::IntLit;
  if (Digits.size() > 1 && Digits[0] == '0')
    Diags->warning(File->locOf(Start),
                   "integer literal '" + shown(Digits) +
                       "' has a leading zero: it is decimal here, not octal "
                       "as in C");
  auto R = std::from_chars(Digits.data(), Digits.data() + Digits.size(),
                           T.IntVal);
  if (R.ec != std::errc())
    fail(Start, "integer literal '" + shown(Digits) + "' is too large");
}

Token Lexer::next() {
  Token T;
  skipSpaceAndComments(T);
  T.Offset = Pos;
  if (Pos >= End) {
    T.Kind = TokKind::Eof;
    T.Text = {};
    return T;
  }
  char C = Src[Pos];
  auto Single = [&](TokKind K, size_t Len = 1) {
    T.Kind = K;
    Pos += Len;
  };
  auto NextIs = [&](char N) { return Pos + 1 < End && Src[Pos + 1] == N; };
  if (isIdentStart(C)) {
    // Identifiers may be qualified (`c10::Half`).
    while (true) {
      while (Pos < End && isIdentChar(Src[Pos]))
        ++Pos;
      if (Pos + 2 < End && Src[Pos] == ':' && Src[Pos + 1] == ':' &&
          isIdentStart(Src[Pos + 2])) {
        Pos += 2;
        continue;
      }
      break;
    }
    T.Kind = TokKind::Ident;
  } else if (isDigit(C) || (C == '.' && Pos + 1 < End && isDigit(Src[Pos + 1]))) {
    lexNumber(T);
  } else {
    switch (C) {
    case '(':
      Single(TokKind::LParen);
      break;
    case ')':
      Single(TokKind::RParen);
      break;
    case '[':
      Single(TokKind::LBracket);
      break;
    case ']':
      Single(TokKind::RBracket);
      break;
    case '{':
      Single(TokKind::LBrace);
      break;
    case '}':
      Single(TokKind::RBrace);
      break;
    case ',':
      Single(TokKind::Comma);
      break;
    case ';':
      Single(TokKind::Semi);
      break;
    case ':':
      Single(TokKind::Colon);
      break;
    case '?':
      Single(TokKind::Question);
      break;
    case '=':
      NextIs('=') ? Single(TokKind::EqEq, 2) : Single(TokKind::Assign);
      break;
    case '!':
      NextIs('=') ? Single(TokKind::NotEq, 2) : Single(TokKind::Bang);
      break;
    case '<':
      if (NextIs('<'))
        Single(TokKind::Shl, 2);
      else if (NextIs('='))
        Single(TokKind::LessEq, 2);
      else
        Single(TokKind::Less);
      break;
    case '>':
      if (NextIs('>'))
        Single(TokKind::Shr, 2);
      else if (NextIs('='))
        Single(TokKind::GreaterEq, 2);
      else
        Single(TokKind::Greater);
      break;
    case '+':
      NextIs('+') ? Single(TokKind::PlusPlus, 2) : Single(TokKind::Plus);
      break;
    case '-':
      Single(TokKind::Minus);
      break;
    case '*':
      Single(TokKind::Star);
      break;
    case '/':
      Single(TokKind::Slash);
      break;
    case '%':
      Single(TokKind::Percent);
      break;
    case '&':
      Single(TokKind::Amp);
      break;
    case '|':
      Single(TokKind::Pipe);
      break;
    case '^':
      Single(TokKind::Caret);
      break;
    default: {
      unsigned char U = static_cast<unsigned char>(C);
      if (U >= 32 && U < 127)
        fail(Pos, std::string("unexpected character '") + C + "'");
      char Hex[8];
      std::snprintf(Hex, sizeof(Hex), "0x%02x", U);
      fail(Pos, std::string("unexpected byte ") + Hex);
    }
    }
  }
  T.Length = Pos - T.Offset;
  T.Text = Src.substr(T.Offset, T.Length);
  return T;
}

} // namespace nnc
