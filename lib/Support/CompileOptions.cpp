//===- CompileOptions.cpp - The options table -----------------------------===//
//
// Builds optionTable() from Options.def: for each row, the parser of its
// type, its Check, and the text of its value.
//
//===----------------------------------------------------------------------===//
#include "nnc/Support/CompileOptions.h"

#include <cerrno>
#include <cstdlib>
#include <limits>
#include <type_traits>

namespace nnc {

namespace {

/// The NNC_ENUM_WORD rows.
struct WordRow {
  const char *Enum, *Word, *Help;
  int Value;
};
const WordRow kWords[] = {
#define NNC_ENUM_WORD(Enum, Value, Word, Help)                                 \
  {#Enum, Word, Help, static_cast<int>(Enum::Value)},
#include "nnc/Support/Options.def"
};

/// "a, b or c".
std::string listText(const std::vector<std::string> &Items) {
  std::string S;
  for (size_t I = 0; I < Items.size(); ++I)
    S += (I == 0 ? "" : I + 1 == Items.size() ? " or " : ", ") + Items[I];
  return S;
}

std::vector<std::pair<std::string, std::string>> wordsOf(const char *Enum) {
  std::vector<std::pair<std::string, std::string>> R;
  for (const WordRow &W : kWords)
    if (std::string(W.Enum) == Enum)
      R.push_back({W.Word, W.Help});
  return R;
}

template <class T> constexpr OptionKind kindOf() {
  if constexpr (std::is_same_v<T, bool>)
    return OptionKind::Bool;
  else if constexpr (std::is_same_v<T, std::optional<bool>>)
    return OptionKind::OptionalBool;
  else if constexpr (std::is_integral_v<T>)
    return OptionKind::Integer;
  else if constexpr (std::is_enum_v<T>)
    return OptionKind::Enum;
  else
    return OptionKind::String;
}

std::optional<bool> parseBool(const std::string &T) {
  if (T.empty() || T == "on" || T == "true" || T == "1")
    return true;
  if (T == "off" || T == "false" || T == "0")
    return false;
  return std::nullopt;
}

/// Parses Text as a T (Enum: the name of T, for its words).
template <class T>
bool parseValue(const std::string &Text, T &V, const char *Enum) {
  if constexpr (std::is_same_v<T, bool>) {
    auto B = parseBool(Text);
    if (B)
      V = *B;
    return B.has_value();
  } else if constexpr (std::is_same_v<T, std::optional<bool>>) {
    if (Text == "default") {
      V.reset();
      return true;
    }
    V = parseBool(Text);
    return V.has_value() && !Text.empty();
  } else if constexpr (std::is_integral_v<T>) {
    if (Text.empty() || Text.size() > 20)
      return false;
    char *End = nullptr;
    errno = 0;
    if constexpr (std::is_signed_v<T>) {
      long long X = std::strtoll(Text.c_str(), &End, 10);
      if (errno || *End || X < std::numeric_limits<T>::min() ||
          X > std::numeric_limits<T>::max())
        return false;
      V = static_cast<T>(X);
    } else {
      if (Text[0] == '-' || Text[0] == '+')
        return false;
      unsigned long long X = std::strtoull(Text.c_str(), &End, 10);
      if (errno || *End || X > std::numeric_limits<T>::max())
        return false;
      V = static_cast<T>(X);
    }
    return true;
  } else if constexpr (std::is_enum_v<T>) {
    for (const WordRow &W : kWords)
      if (std::string(W.Enum) == Enum && Text == W.Word) {
        V = static_cast<T>(W.Value);
        return true;
      }
    return false;
  } else {
    V = Text;
    return true;
  }
}

template <class T> std::string valueText(const T &V, const char *Enum) {
  if constexpr (std::is_same_v<T, bool>)
    return V ? "on" : "off";
  else if constexpr (std::is_same_v<T, std::optional<bool>>)
    return V ? (*V ? "on" : "off") : "default";
  else if constexpr (std::is_integral_v<T>)
    return std::to_string(V);
  else if constexpr (std::is_enum_v<T>) {
    for (const WordRow &W : kWords)
      if (std::string(W.Enum) == Enum && W.Value == static_cast<int>(V))
        return W.Word;
    return "";
  } else
    return V;
}

/// What a row accepts, for messages: its Values, or its type's words.
template <class T>
std::string valuesText(const char *Values, const char *Enum) {
  if (*Values)
    return Values;
  if constexpr (std::is_same_v<T, bool>)
    return "on or off";
  else if constexpr (std::is_same_v<T, std::optional<bool>>)
    return "on, off or default";
  else if constexpr (std::is_integral_v<T>)
    return "a non-negative integer";
  else if constexpr (std::is_enum_v<T>) {
    std::vector<std::string> W;
    for (const auto &P : wordsOf(Enum))
      W.push_back(P.first);
    return listText(W);
  } else
    return "a string";
}

} // namespace

const std::vector<OptionInfo> &optionTable() {
  static const std::vector<OptionInfo> Table = {
#define NNC_OPTION(Field, Type, Default, Flag, Python, Check, Values, Key,     \
                   Help)                                                       \
  {#Field,                                                                     \
   Flag,                                                                       \
   Python,                                                                     \
   Help,                                                                       \
   kindOf<Type>(),                                                             \
   Key,                                                                        \
   valuesText<Type>(Values, #Type),                                            \
   kindOf<Type>() == OptionKind::Enum                                          \
       ? wordsOf(#Type)                                                        \
       : std::vector<std::pair<std::string, std::string>>(),                   \
   [](CompileOptions &O, const std::string &Text) -> std::string {             \
     Type V{};                                                                 \
     auto Accepts = []([[maybe_unused]] const Type &V) {                       \
       return static_cast<bool>(Check);                                        \
     };                                                                        \
     if (!parseValue(Text, V, #Type) || !Accepts(V))                           \
       return "expects " + valuesText<Type>(Values, #Type) + ", got '" +       \
              Text + "'";                                                      \
     O.Field = V;                                                              \
     return "";                                                                \
   },                                                                          \
   [](const CompileOptions &O) { return valueText(O.Field, #Type); }},
#include "nnc/Support/Options.def"
  };
  return Table;
}

const OptionInfo *findPythonOption(const std::string &Name) {
  for (const OptionInfo &I : optionTable())
    if (*I.Python && Name == I.Python)
      return &I;
  return nullptr;
}

std::string checkOptions(const CompileOptions &O) {
  for (const OptionInfo &I : optionTable()) {
    CompileOptions Copy;
    std::string Why = I.Set(Copy, I.Get(O));
    if (!Why.empty())
      return "CompileOptions::" + std::string(I.Field) + " " + Why;
  }
  return "";
}

std::string cacheKeyOptions(const CompileOptions &O) {
  std::string S;
  for (const OptionInfo &I : optionTable())
    if (I.CacheKey)
      S += std::string(I.Field) + "=" + I.Get(O) + "\n";
  return S;
}

} // namespace nnc
