//===- LoweringState.cpp - what convert-pf-to-cpu's patterns share --------===//
//
// The type converter, the lowering state's helpers (planned buffers,
// parameter addresses, the seed), action markers and trace events, and the
// list of every pattern family.
//
//===----------------------------------------------------------------------===//

#include "pf/Conversion/PFToCPU/PFToCPU.h"

#include "pf/Conversion/Kernels/Elementwise.h"

using namespace mlir;
using namespace mlir::pf;

CPUTypeConverter::CPUTypeConverter(MLIRContext *ctx) {
  addConversion([](Type t) { return t; });
  addConversion(
      [ctx](GlobalType) -> Type { return LLVM::LLVMPointerType::get(ctx); });
  // Values not converted yet (block arguments replaced before the
  // conversion) meet their users through casts that reconcile away.
  auto cast = [](OpBuilder &b, Type type, ValueRange inputs,
                 Location loc) -> Value {
    return UnrealizedConversionCastOp::create(b, loc, type, inputs)
        .getResult(0);
  };
  addSourceMaterialization(cast);
  addTargetMaterialization(cast);
}

FailureOr<int64_t> mlir::pf::elementBytes(Operation *op, Type t) {
  Type elem = cast<GlobalType>(t).getElementType();
  if (elem.isF32())
    return 4;
  if (elem.isInteger(64))
    return 8;
  return op->emitOpError() << "convert-pf-to-cpu supports f32 tensors and "
                              "i64 labels, got "
                           << elem;
}

ArrayRef<int64_t> mlir::pf::localShape(Value v) {
  return cast<GlobalType>(v.getType()).getShape();
}

int64_t mlir::pf::localCount(Value v) {
  return cast<GlobalType>(v.getType()).getNumElements();
}

int32_t mlir::pf::dtypeCode(Value v) {
  return cast<GlobalType>(v.getType()).getElementType().isF32() ? 0 : 1;
}

Value CPULoweringState::paramPtr(OpBuilder &b, Location loc, StringRef name) {
  return LLVM::LoadOp::create(
      b, loc, ptrType(),
      LLVM::AddressOfOp::create(b, loc, paramGlobals.lookup(name)));
}

Value CPULoweringState::seed(OpBuilder &b, Location loc) {
  return LLVM::LoadOp::create(b, loc, b.getI64Type(),
                              LLVM::AddressOfOp::create(b, loc, seedGlobal));
}

FailureOr<Value> CPULoweringState::alloc(OpBuilder &b, Location loc, Value v) {
  Operation *owner =
      v.getDefiningOp() ? v.getDefiningOp() : module.getOperation();
  if (failed(elementBytes(owner, v.getType())))
    return failure();
  int64_t offset = plan->offsetOf(v);
  if (offset < 0)
    return owner->emitOpError("convert-pf-to-cpu: the memory plan gave this "
                              "value no buffer");
  return rt.pfrt_arena_at(b, loc, offset, plan->bytesOf(v));
}

Value CPULoweringState::sendCopy(OpBuilder &b, Operation *send, int64_t bytes) {
  return rt.pfrt_arena_at(b, send->getLoc(), plan->sendCopyOffset(send), bytes);
}

FailureOr<Value> CPULoweringState::result(OpBuilder &b, Operation *op,
                                          unsigned i) {
  Value r = op->getResult(i);
  StringRef target = buffers.inPlaceTarget(r);
  if (!target.empty())
    return paramPtr(b, op->getLoc(), target);
  return alloc(b, op->getLoc(), r);
}

namespace {
/// The stage, phase and micro-batch an op is tagged with (null when not).
struct ActionTags {
  IntegerAttr stage;
  StringAttr phase;
  IntegerAttr microbatch;
};

ActionTags actionTags(Operation *op) {
  return {
      op->getAttrOfType<IntegerAttr>(PFDialect::StageAttrHelper::getNameStr()),
      op->getAttrOfType<StringAttr>(PFDialect::PhaseAttrHelper::getNameStr()),
      op->getAttrOfType<IntegerAttr>(
          PFDialect::MicrobatchAttrHelper::getNameStr())};
}
} // namespace

void CPULoweringState::markAction(Operation *op, OpBuilder &b) {
  auto [stage, phase, microbatch] = actionTags(op);
  if (!stage && !phase && !microbatch)
    return;
  std::tuple<int64_t, StringRef, int64_t> key = {
      stage ? stage.getInt() : -1, phase ? phase.getValue() : "",
      microbatch ? microbatch.getInt() : -1};
  if (action == key)
    return;
  action = key;
  auto marker = module.lookupSymbol<LLVM::LLVMFuncOp>(kActionMarker);
  if (!marker) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    marker = LLVM::LLVMFuncOp::create(
        b, module.getLoc(), kActionMarker,
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(b.getContext()),
                                    {}));
  }
  LLVM::CallOp::create(b, op->getLoc(), marker, ValueRange{});
}

void mlir::pf::emitTraceBegin(CPULoweringState &state, Operation *op,
                              OpBuilder &b, bool comm) {
  Location loc = op->getLoc();
  auto [stage, phase, microbatch] = actionTags(op);
  StringRef category = comm    ? StringRef("comm")
                       : phase ? phase.getValue()
                               : StringRef("forward");
  state.rt.pfrt_trace_begin(
      b, loc, state.rt.str(b, loc, op->getName().getStringRef()),
      state.rt.str(b, loc, category),
      static_cast<int32_t>(microbatch ? microbatch.getInt() : -1),
      static_cast<int32_t>(stage ? stage.getInt() : -1));
}

void mlir::pf::populatePFToCPUPatterns(const TypeConverter &converter,
                                       RewritePatternSet &patterns,
                                       CPULoweringState &state) {
  populatePFToCPUComputePatterns(converter, patterns, state);
  populatePFToCPUConvPoolPatterns(converter, patterns, state);
  populatePFToCPUTensorPatterns(converter, patterns, state);
  populatePFToCPUCommPatterns(converter, patterns, state);
  populatePFToCPUOptimizerPatterns(converter, patterns, state);
  populatePFToCPUControlPatterns(converter, patterns, state);
}

bool CPULoweringState::callGeneratedKernel(OpBuilder &b, Operation *op,
                                           ValueRange inputs, Value out,
                                           int64_t n) {
  if (!generatedKernels)
    return false;
  std::optional<kernels::ElementwiseKernel> kernel =
      kernels::elementwiseKernelFor(op);
  if (!kernel)
    return false;
  assert(inputs.size() == kernel->numInputs && "wrong number of inputs");
  LLVM::LLVMFuncOp fn = kernels::getOrCreateHostKernel(module, *kernel);
  SmallVector<Value> args{out};
  llvm::append_range(args, inputs);
  args.push_back(LLVM::ConstantOp::create(b, op->getLoc(), b.getI64Type(), n));
  LLVM::CallOp::create(b, op->getLoc(), fn, args);
  return true;
}
