//===- pfrt/AbiTraits.h - compile-time checks of pfrt.h against the ABI --===//
//
// C++ only. The tag types of pfrt_abi.def and a trait that says whether a C
// function type matches a row: same number of arguments, and each argument
// and the result of a C type the tag allows. Used by src/common/AbiCheck.cpp
// to static_assert every declaration of pfrt.h.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_ABITRAITS_H
#define PFRT_ABITRAITS_H

#include <cstdint>
#include <type_traits>

namespace pfrt_abi {

/// A tag that accepts exactly the C types Ts.
template <class... Ts> struct OneOf {
  template <class T> static constexpr bool accepts() {
    return (std::is_same_v<T, Ts> || ...);
  }
};

struct VOID : OneOf<void> {};
struct I32 : OneOf<int32_t, int> {};
struct I64 : OneOf<int64_t> {};
struct U64 : OneOf<uint64_t> {};
struct F32 : OneOf<float> {};
struct F64 : OneOf<double> {};
/// Any pointer (or array parameter, which decays to one).
struct PTR {
  template <class T> static constexpr bool accepts() {
    return std::is_pointer_v<T>;
  }
};

template <class... T> struct List {};

/// Whether C parameter types `Ps` match the row's argument tags `Tags`
/// (false, not a hard error, when the counts differ).
template <class Ps, class Tags> struct ArgsMatch : std::false_type {};
template <> struct ArgsMatch<List<>, List<>> : std::true_type {};
template <class P, class... Ps, class T, class... Ts>
struct ArgsMatch<List<P, Ps...>, List<T, Ts...>>
    : std::bool_constant<T::template accepts<std::remove_cv_t<P>>() &&
                         ArgsMatch<List<Ps...>, List<Ts...>>::value> {};

/// Whether the C function type `Fn` matches the row (Ret, Tags...).
template <class Fn, class Ret, class... Tags>
struct Matches : std::false_type {};
template <class R, class... Ps, class Ret, class... Tags>
struct Matches<R(Ps...), Ret, Tags...>
    : std::bool_constant<Ret::template accepts<R>() &&
                         ArgsMatch<List<Ps...>, List<Tags...>>::value> {};

} // namespace pfrt_abi

#endif // PFRT_ABITRAITS_H
