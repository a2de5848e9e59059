//===- Npy.cpp - NumPy .npy files -----------------------------------------===//
//
// See nnc/Check/Npy.h.
//
//===----------------------------------------------------------------------===//
#include "nnc/Check/Npy.h"

#include <algorithm>

#include <cstring>

namespace nnc {

namespace {

/// The value of key Key in a .npy header dictionary, as text.
std::string npyField(const std::string &Header, const std::string &Key) {
  size_t P = Header.find("'" + Key + "'");
  if (P == std::string::npos)
    return "";
  P = Header.find(':', P);
  if (P == std::string::npos)
    return "";
  ++P;
  while (P < Header.size() && Header[P] == ' ')
    ++P;
  size_t End = P;
  if (P < Header.size() && (Header[P] == '(' || Header[P] == '\'')) {
    char Close = Header[P] == '(' ? ')' : '\'';
    End = Header.find(Close, P + 1);
    return End == std::string::npos ? "" : Header.substr(P, End - P + 1);
  }
  while (End < Header.size() && Header[End] != ',' && Header[End] != '}')
    ++End;
  return Header.substr(P, End - P);
}

} // namespace

std::string npyDescr(DType T) {
  switch (T) {
  case DType::Bool:
    return "|b1";
  case DType::I8:
    return "|i1";
  case DType::U8:
    return "|u1";
  case DType::I16:
    return "<i2";
  case DType::I32:
    return "<i4";
  case DType::I64:
    return "<i8";
  case DType::F16:
    return "<f2";
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  case DType::BF16:
    return "";
  }
  return "";
}

bool parseNpy(const std::string &Data, std::string &Descr,
              std::vector<int64_t> &Shape, size_t &DataStart,
              std::string &Why) {
  if (Data.size() < 10 || Data.compare(0, 6, "\x93NUMPY") != 0) {
    Why = "is not a .npy file (no NUMPY magic)";
    return false;
  }
  unsigned Major = static_cast<unsigned char>(Data[6]),
           Minor = static_cast<unsigned char>(Data[7]);
  size_t HeaderLen, Start;
  // Versions 1.0, 2.0 and 3.0, as NumPy reads them; any other minor
  // version is a format of which nothing is known.
  if (Minor != 0) {
    Why = "has an unknown .npy format version " + std::to_string(Major) + "." +
          std::to_string(Minor);
    return false;
  }
  if (Major == 1) {
    HeaderLen = static_cast<unsigned char>(Data[8]) |
                static_cast<size_t>(static_cast<unsigned char>(Data[9])) << 8;
    Start = 10;
  } else if ((Major == 2 || Major == 3) && Data.size() >= 12) {
    HeaderLen = 0;
    for (int I = 3; I >= 0; --I)
      HeaderLen = HeaderLen << 8 | static_cast<unsigned char>(Data[8 + I]);
    Start = 12;
  } else {
    Why = "has an unknown .npy format version " + std::to_string(Major);
    return false;
  }
  if (HeaderLen > Data.size() - Start) {
    Why = "has a truncated .npy header";
    return false;
  }
  std::string Header = Data.substr(Start, HeaderLen);
  DataStart = Start + HeaderLen;
  // A dict's text, padded with spaces and a newline, as NumPy writes and
  // reads it: anything else (data bytes a longer length field takes in)
  // is no header.
  size_t First = Header.find_first_not_of(" "),
         Last = Header.find_last_not_of(" \n");
  bool Text = std::all_of(Header.begin(), Header.end(), [](char C) {
    return C == '\n' || (C >= 32 && C <= 126);
  });
  if (!Text || First == std::string::npos || Header[First] != '{' ||
      Header[Last] != '}') {
    Why = "has a .npy header that is not a dict's text";
    return false;
  }
  std::string D = npyField(Header, "descr");
  if (D.size() < 2) {
    Why = "has no dtype in its .npy header";
    return false;
  }
  Descr = D.substr(1, D.size() - 2);
  if (npyField(Header, "fortran_order") != "False") {
    Why = "is in Fortran order; save it with np.ascontiguousarray";
    return false;
  }
  std::string S = npyField(Header, "shape");
  if (S.size() < 2 || S.front() != '(' || S.back() != ')') {
    Why = "has no shape in its .npy header";
    return false;
  }
  Shape.clear();
  for (size_t P = 1; P + 1 < S.size();) {
    while (P + 1 < S.size() && (S[P] == ' ' || S[P] == ','))
      ++P;
    if (P + 1 >= S.size())
      break;
    char *End = nullptr;
    errno = 0;
    long long V = std::strtoll(S.c_str() + P, &End, 10);
    if (End == S.c_str() + P || errno == ERANGE || V < 0) {
      Why = "has a bad shape " + S + " in its .npy header";
      return false;
    }
    Shape.push_back(V);
    P = static_cast<size_t>(End - S.c_str());
  }
  return true;
}

std::string npyHeader(DType T, const std::vector<int64_t> &Shape) {
  std::string ShapeText = "(";
  for (size_t I = 0; I < Shape.size(); ++I)
    ShapeText += (I ? ", " : "") + std::to_string(Shape[I]);
  ShapeText += Shape.size() == 1 ? ",)" : ")";
  std::string H = "{'descr': '" + npyDescr(T) +
                  "', 'fortran_order': False, 'shape': " + ShapeText + ", }";
  size_t Total = 10 + H.size() + 1;
  H.append((64 - Total % 64) % 64, ' ');
  H += '\n';
  std::string R = "\x93NUMPY";
  R += '\x01';
  R += '\x00';
  R += static_cast<char>(H.size() & 0xff);
  R += static_cast<char>(H.size() >> 8);
  return R + H;
}

} // namespace nnc
