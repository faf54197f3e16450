//===- RuntimeABI.cpp - typed calls into libpfrt --------------------------===//

#include "pf/Conversion/Common/RuntimeABI.h"

using namespace mlir;
using namespace mlir::pf;
using namespace mlir::pf::rt;

namespace {
/// The LLVM type of a row's tag.
enum class Tag { VOID, PTR, I32, I64, U64, F32, F64 };

Type typeOf(MLIRContext *ctx, Tag tag) {
  switch (tag) {
  case Tag::VOID:
    return LLVM::LLVMVoidType::get(ctx);
  case Tag::PTR:
    return LLVM::LLVMPointerType::get(ctx);
  case Tag::I32:
    return IntegerType::get(ctx, 32);
  case Tag::I64:
  case Tag::U64:
    return IntegerType::get(ctx, 64);
  case Tag::F32:
    return Float32Type::get(ctx);
  case Tag::F64:
    return Float64Type::get(ctx);
  }
  llvm_unreachable("unknown tag");
}

struct RowInfo {
  const char *name;
  Tag result;
  SmallVector<Tag, 16> args;
};

const SmallVector<RowInfo> &rows() {
  static const SmallVector<RowInfo> table = {
#define PFRT_FN(NAME, RET, ...) {#NAME, RET, {__VA_ARGS__}},
#define VOID Tag::VOID
#define PTR Tag::PTR
#define I32 Tag::I32
#define I64 Tag::I64
#define U64 Tag::U64
#define F32 Tag::F32
#define F64 Tag::F64
#include "pfrt/pfrt_abi.def"
#undef VOID
#undef PTR
#undef I32
#undef I64
#undef U64
#undef F32
#undef F64
  };
  return table;
}
} // namespace

StringRef rt::getName(Fn fn) { return rows()[static_cast<unsigned>(fn)].name; }

std::optional<Fn> rt::deviceRow(Fn fn) {
  switch (fn) {
#define PFRT_DEVICE_TWIN(HOST, DEVICE)                                         \
  case Fn::HOST:                                                               \
    return Fn::DEVICE;
#define PFRT_DEVICE_HOST(HOST)                                                 \
  case Fn::HOST:                                                               \
    return Fn::HOST;
#include "pfrt/pfrt_device.def"
  default:
    break;
  }
  // The device rows themselves (pfrt_cuda.h).
  if (getName(fn).starts_with("pfrt_cuda_"))
    return fn;
  return std::nullopt;
}

LLVM::LLVMFunctionType rt::getFunctionType(MLIRContext *ctx, Fn fn) {
  const RowInfo &row = rows()[static_cast<unsigned>(fn)];
  SmallVector<Type> args;
  for (Tag t : row.args)
    args.push_back(typeOf(ctx, t));
  return LLVM::LLVMFunctionType::get(typeOf(ctx, row.result), args);
}

template <unsigned Bits>
Value arg::Int<Bits>::materialize(OpBuilder &b, Location loc) const {
  if (value)
    return value;
  Type t = b.getIntegerType(Bits);
  return LLVM::ConstantOp::create(b, loc, t, b.getIntegerAttr(t, *constant));
}
template struct mlir::pf::rt::arg::Int<32>;
template struct mlir::pf::rt::arg::Int<64>;

template <unsigned Bits>
Value arg::Float<Bits>::materialize(OpBuilder &b, Location loc) const {
  if (value)
    return value;
  if constexpr (Bits == 32)
    return LLVM::ConstantOp::create(b, loc, b.getF32Type(),
                                    b.getF32FloatAttr(*constant));
  else
    return LLVM::ConstantOp::create(b, loc, b.getF64Type(),
                                    b.getF64FloatAttr(*constant));
}
template struct mlir::pf::rt::arg::Float<32>;
template struct mlir::pf::rt::arg::Float<64>;

LLVM::LLVMFuncOp RuntimeABI::declare(OpBuilder &b, Fn fn) {
  auto key = static_cast<unsigned>(fn);
  if (auto it = decls.find(key); it != decls.end())
    return it->second;
  // A declaration made elsewhere (another conversion) must agree.
  auto type = getFunctionType(module.getContext(), fn);
  if (auto existing = module.lookupSymbol<LLVM::LLVMFuncOp>(getName(fn))) {
    if (existing.getFunctionType() != type) {
      existing.emitOpError("declares ")
          << getName(fn) << " as " << existing.getFunctionType()
          << " but pfrt_abi.def says " << type;
      error = true;
    }
    return decls[key] = existing;
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto decl = LLVM::LLVMFuncOp::create(b, module.getLoc(), getName(fn), type);
  return decls[key] = decl;
}

Value RuntimeABI::call(OpBuilder &b, Location loc, Fn fn,
                       ArrayRef<Value> args) {
  if (target == Target::Device) {
    std::optional<Fn> device = deviceRow(fn);
    if (!device) {
      InFlightDiagnostic diag = emitError(loc);
      if (!caller.empty())
        diag << "'" << caller << "' ";
      diag << "has no GPU lowering yet: libpfrt's " << getName(fn)
           << " has no device twin (runtime/include/pfrt/"
              "pfrt_device.def); place this op on \"cpu\"";
      error = true;
      Type result = getFunctionType(module.getContext(), fn).getReturnType();
      if (isa<LLVM::LLVMVoidType>(result))
        return Value();
      return LLVM::PoisonOp::create(b, loc, result);
    }
    fn = *device;
  }
  LLVM::LLVMFuncOp decl = declare(b, fn);
  LLVM::LLVMFunctionType type = decl.getFunctionType();
  bool ok = type.getNumParams() == args.size();
  for (auto [i, a] : llvm::enumerate(args))
    if (ok && a.getType() != type.getParamType(i)) {
      emitError(loc) << "call of " << getName(fn) << ": argument " << i
                     << " has type " << a.getType() << ", pfrt_abi.def says "
                     << type.getParamType(i);
      ok = false;
    }
  if (!ok) {
    if (type.getNumParams() != args.size())
      emitError(loc) << "call of " << getName(fn) << " with " << args.size()
                     << " arguments, pfrt_abi.def says " << type.getNumParams();
    error = true;
    Type result = type.getReturnType();
    if (isa<LLVM::LLVMVoidType>(result))
      return Value();
    return LLVM::PoisonOp::create(b, loc, result);
  }
  auto op = LLVM::CallOp::create(b, loc, decl, args);
  return isa<LLVM::LLVMVoidType>(type.getReturnType()) ? Value()
                                                       : op.getResult();
}

Value RuntimeABI::addressOf(OpBuilder &b, Location loc, LLVM::GlobalOp global) {
  Block *block = b.getInsertionBlock();
  auto fn = block ? dyn_cast<LLVM::LLVMFuncOp>(block->getParentOp())
                  : LLVM::LLVMFuncOp();
  if (!fn || fn.getBody().empty())
    return LLVM::AddressOfOp::create(b, loc, global);
  // One address a function, at its entry (a conversion's thousands of uses
  // share it; the step outliner recomputes it where an action needs it).
  Value &address = addresses[{fn, global}];
  if (!address) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&fn.getBody().front());
    address = LLVM::AddressOfOp::create(b, fn.getLoc(), global);
  }
  return address;
}

Value RuntimeABI::str(OpBuilder &b, Location loc, StringRef s) {
  LLVM::GlobalOp global = strings.lookup(s);
  if (!global) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    std::string data = s.str();
    data.push_back('\0');
    auto type = LLVM::LLVMArrayType::get(b.getI8Type(), data.size());
    global = LLVM::GlobalOp::create(
        b, loc, type, /*isConstant=*/true, LLVM::Linkage::Private,
        ("__pf_str" + Twine(strings.size())).str(), b.getStringAttr(data));
    strings[s] = global;
  }
  return addressOf(b, loc, global);
}

namespace {
template <typename T>
LLVM::GlobalOp constArray(OpBuilder &b, ModuleOp module, Location loc,
                          ArrayRef<T> values, StringRef prefix,
                          unsigned &counter) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  Type elem = b.getIntegerType(sizeof(T) * 8);
  auto type = LLVM::LLVMArrayType::get(elem, values.size());
  return LLVM::GlobalOp::create(
      b, loc, type, /*isConstant=*/true, LLVM::Linkage::Private,
      (prefix + Twine(counter++)).str(),
      DenseIntElementsAttr::get(
          RankedTensorType::get({static_cast<int64_t>(values.size())}, elem),
          values));
}
} // namespace

Value RuntimeABI::i64Array(OpBuilder &b, Location loc,
                           ArrayRef<int64_t> values) {
  if (values.empty())
    return nullPtr(b, loc);
  LLVM::GlobalOp &global =
      arrays[{64, std::vector<int64_t>(values.begin(), values.end())}];
  if (!global)
    global = constArray(b, module, loc, values, "__pf_dims", constants);
  return addressOf(b, loc, global);
}

Value RuntimeABI::i8Array(OpBuilder &b, Location loc, ArrayRef<int8_t> values) {
  LLVM::GlobalOp &global =
      arrays[{8, std::vector<int64_t>(values.begin(), values.end())}];
  if (!global)
    global = constArray(b, module, loc, values, "__pf_mask", constants);
  return addressOf(b, loc, global);
}

Value RuntimeABI::nullPtr(OpBuilder &b, Location loc) {
  return LLVM::ZeroOp::create(b, loc,
                              LLVM::LLVMPointerType::get(b.getContext()));
}
