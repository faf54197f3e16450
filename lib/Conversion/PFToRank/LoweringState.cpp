//===- LoweringState.cpp - what convert-pf-to-cpu's patterns share --------===//
//
// The type converter, the lowering state's helpers (planned buffers,
// parameter addresses, the seed), action markers and trace events, and the
// list of every pattern family.
//
//===----------------------------------------------------------------------===//

#include "pf/Conversion/PFToRank/RankLowering.h"

#include "pf/Conversion/Kernels/Elementwise.h"

using namespace mlir;
using namespace mlir::pf;

RankTypeConverter::RankTypeConverter(MLIRContext *ctx) {
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

std::optional<RankDType> mlir::pf::rankDType(Type elem) {
  // The runtime's PFRT_DTYPE_* codes (pfrt.h); a bool is one byte.
  if (elem.isF32())
    return RankDType{0, 4, "f32"};
  if (elem.isSignlessInteger(64))
    return RankDType{1, 8, "i64"};
  if (elem.isSignlessInteger(32))
    return RankDType{2, 4, "i32"};
  if (elem.isSignlessInteger(1))
    return RankDType{3, 1, "bool"};
  // Storage types (pf-widen-low-precision leaves them to pf.cast and to ops
  // that move bytes): a bf16 payload is its 16 bits ('<u2' in .npy files).
  if (elem.isBF16())
    return RankDType{4, 2, "bf16"};
  if (elem.isF16())
    return RankDType{5, 2, "f16"};
  return std::nullopt;
}

FailureOr<int64_t> mlir::pf::elementBytes(Operation *op, Type t) {
  Type elem = cast<GlobalType>(t).getElementType();
  if (std::optional<RankDType> d = rankDType(elem))
    return d->bytes;
  return op->emitOpError() << "convert-pf-to-cpu supports f32, i64, i32, i1 "
                              "(bool), bf16 and f16 tensors, got "
                           << elem;
}

ArrayRef<int64_t> mlir::pf::localShape(Value v) {
  return cast<GlobalType>(v.getType()).getShape();
}

int64_t mlir::pf::localCount(Value v) {
  return cast<GlobalType>(v.getType()).getNumElements();
}

int32_t mlir::pf::dtypeCode(Value v) {
  std::optional<RankDType> d =
      rankDType(cast<GlobalType>(v.getType()).getElementType());
  assert(d && "dtypeCode of an element type the rank lowering rejects");
  return d->code;
}

int64_t mlir::pf::dtypeBytes(Value v) {
  return rankDType(cast<GlobalType>(v.getType()).getElementType())->bytes;
}

int64_t mlir::pf::localWords(Value v) {
  return (localCount(v) * dtypeBytes(v) + 3) / 4;
}

Value RankLoweringState::paramPtr(OpBuilder &b, Location loc, StringRef name) {
  return LLVM::LoadOp::create(
      b, loc, ptrType(),
      LLVM::AddressOfOp::create(b, loc, paramGlobals.lookup(name)));
}

Value RankLoweringState::seed(OpBuilder &b, Location loc) {
  return LLVM::LoadOp::create(b, loc, b.getI64Type(),
                              LLVM::AddressOfOp::create(b, loc, seedGlobal));
}

FailureOr<Value> RankLoweringState::alloc(OpBuilder &b, Location loc, Value v) {
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

Value RankLoweringState::sendCopy(OpBuilder &b, Operation *send,
                                  int64_t bytes) {
  return rt.pfrt_arena_at(b, send->getLoc(), plan->sendCopyOffset(send), bytes);
}

FailureOr<Value> RankLoweringState::result(OpBuilder &b, Operation *op,
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

void RankLoweringState::markAction(Operation *op, OpBuilder &b) {
  auto [stage, phase, microbatch] = actionTags(op);
  if (!stage && !phase && !microbatch)
    return;
  std::tuple<int64_t, StringRef, int64_t> key = {
      stage ? stage.getInt() : -1, phase ? phase.getValue() : "",
      microbatch ? microbatch.getInt() : -1};
  if (action == key)
    return;
  action = key;
  if (!marker)
    marker = module.lookupSymbol<LLVM::LLVMFuncOp>(kActionMarker);
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

void mlir::pf::emitTraceBegin(RankLoweringState &state, Operation *op,
                              OpBuilder &b, bool comm, StringRef label) {
  Location loc = op->getLoc();
  auto [stage, phase, microbatch] = actionTags(op);
  StringRef category = comm    ? StringRef("comm")
                       : phase ? phase.getValue()
                               : StringRef("forward");
  state.rt.pfrt_trace_begin(
      b, loc,
      state.rt.str(b, loc,
                   label.empty() ? op->getName().getStringRef() : label),
      state.rt.str(b, loc, category),
      static_cast<int32_t>(microbatch ? microbatch.getInt() : -1),
      static_cast<int32_t>(stage ? stage.getInt() : -1));
}

void mlir::pf::populateRankLoweringPatterns(const TypeConverter &converter,
                                            RewritePatternSet &patterns,
                                            RankLoweringState &state) {
  populatePFToCPUComputePatterns(converter, patterns, state);
  populatePFToCPUConvPoolPatterns(converter, patterns, state);
  populatePFToCPUTensorPatterns(converter, patterns, state);
  populateRankLogicalPatterns(converter, patterns, state);
  populateRankAttentionPatterns(converter, patterns, state);
  populatePFToCPUCommPatterns(converter, patterns, state);
  populatePFToCPUOptimizerPatterns(converter, patterns, state);
  populatePFToCPUControlPatterns(converter, patterns, state);
}

LogicalResult RankLoweringState::lowerGrouped(Operation *op,
                                              const ElementwiseGroup &group,
                                              ConversionPatternRewriter &b) {
  Location loc = op->getLoc();
  Value result = op->getResult(0);
  if (op != group.last()) {
    // The kernel runs at the group's last op; until then this op's value is
    // a buffer the kernel will fill, or nothing (registers only).
    if (buffers.isGroupInternal(result)) {
      b.replaceOp(op, LLVM::ZeroOp::create(b, loc, ptrType()).getResult());
      return success();
    }
    FailureOr<Value> out = this->result(b, op);
    if (failed(out))
      return failure();
    b.replaceOp(op, *out);
    return success();
  }

  // The kernel: one of the op's own when it is alone, else the group's.
  // Its buffers from the ops' operands now (the step's arguments were
  // replaced after the analysis).
  SmallVector<Value, 4> inputs;
  SmallVector<Value, 2> outputs;
  groupBuffers(group.ops, inputs, outputs);
  kernels::ElementwiseKernel kernel;
  std::string label;
  if (group.ops.size() == 1) {
    kernel = *kernels::elementwiseKernelFor(op);
  } else {
    std::string key = kernels::fusionKey(group.ops, inputs, outputs);
    auto [it, fresh] = kernelNames.try_emplace(key, "");
    if (fresh)
      it->second = "pf_ew_fused_" + std::to_string(kernelNames.size() - 1);
    kernel = kernels::fuseElementwise(it->second, group.ops, inputs, outputs);
    label = "pf.fused";
    for (Operation *member : group.ops)
      label += (member == group.ops.front() ? ":" : "+") +
               member->getName().getStringRef().drop_front(3).str();
  }
  emitTraceBegin(*this, op, b, /*comm=*/false, label);
  SmallVector<Value> pointers;
  Value out;
  for (Value v : outputs) {
    if (v == result) {
      FailureOr<Value> buffer = this->result(b, op);
      if (failed(buffer))
        return failure();
      out = *buffer;
      pointers.push_back(out);
      continue;
    }
    pointers.push_back(b.getRemappedValue(v)); // its op's buffer
  }
  for (Value v : inputs)
    pointers.push_back(b.getRemappedValue(v));
  if (llvm::is_contained(pointers, Value()))
    return op->emitOpError("could not find the buffers of its element-wise "
                           "group");
  int64_t n = localCount(result);
  if (callsKernelsOnHost()) {
    LLVM::LLVMFuncOp fn = kernels::getOrCreateHostKernel(module, kernel);
    pointers.push_back(LLVM::ConstantOp::create(b, loc, b.getI64Type(), n));
    LLVM::CallOp::create(b, loc, fn, pointers);
  } else {
    // A GPU rank: the kernel's index in this rank's table.
    auto found = llvm::find_if(
        deviceKernels, [&](const auto &k) { return k.name == kernel.name; });
    int64_t index = found - deviceKernels.begin();
    if (found == deviceKernels.end()) {
      kernels::getOrCreateDeviceKernel(kernels::getOrCreateKernelModule(module),
                                       kernel);
      kernels::getOrCreatePackedHostKernel(module, kernel);
      deviceKernels.push_back(kernel);
    }
    int64_t count = pointers.size();
    Value null = LLVM::ZeroOp::create(b, loc, ptrType());
    pointers.resize(kernels::kMaxLaunchPointers, null);
    rt.pfrt_launch_generated(b, loc, index, n, count, pointers[0], pointers[1],
                             pointers[2], pointers[3], pointers[4], pointers[5],
                             pointers[6], pointers[7]);
  }
  rt.pfrt_trace_end(b, loc);
  b.replaceOp(op, out);
  return success();
}

void RankLoweringState::emitKernelTable(OpBuilder &b, Location loc) {
  if (deviceKernels.empty())
    return;
  MLIRContext *ctx = module.getContext();
  OpBuilder::InsertionGuard guard(b);
  Type ptr = ptrType(), i64 = b.getI64Type(), i8 = b.getI8Type();
  int64_t count = deviceKernels.size();
  auto table = LLVM::LLVMArrayType::get(ptr, count);
  b.setInsertionPointToEnd(module.getBody());
  // Each kernel's name as a C string.
  SmallVector<LLVM::GlobalOp> names;
  for (const kernels::ElementwiseKernel &k : deviceKernels) {
    std::string text = k.name + '\0';
    names.push_back(LLVM::GlobalOp::create(
        b, loc, LLVM::LLVMArrayType::get(i8, text.size()), /*isConstant=*/true,
        LLVM::Linkage::Internal, "__pf_kernel_name_" + k.name,
        b.getStringAttr(text)));
  }
  // A table of addresses: names, or the packed host twins.
  auto addressTable = [&](StringRef symbol, auto &&address) {
    auto global =
        LLVM::GlobalOp::create(b, loc, table, /*isConstant=*/true,
                               LLVM::Linkage::Internal, symbol, Attribute());
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(b.createBlock(&global.getInitializerRegion()));
    Value array = LLVM::UndefOp::create(b, loc, table);
    for (int64_t i = 0; i < count; ++i)
      array = LLVM::InsertValueOp::create(b, loc, array, address(i), i);
    LLVM::ReturnOp::create(b, loc, array);
    return global;
  };
  auto nameTable = addressTable("__pf_kernel_names", [&](int64_t i) {
    return LLVM::AddressOfOp::create(b, loc, names[i]).getResult();
  });
  auto twinTable = addressTable("__pf_kernel_host_twins", [&](int64_t i) {
    auto twin = kernels::getOrCreatePackedHostKernel(module, deviceKernels[i]);
    return LLVM::AddressOfOp::create(b, loc, twin).getResult();
  });
  SmallVector<int64_t> pointerCounts;
  for (const kernels::ElementwiseKernel &k : deviceKernels)
    pointerCounts.push_back(k.numPointers());
  auto countsType = LLVM::LLVMArrayType::get(i64, count);
  auto counts = LLVM::GlobalOp::create(
      b, loc, countsType, /*isConstant=*/true, LLVM::Linkage::Internal,
      "__pf_kernel_pointers",
      DenseElementsAttr::get(RankedTensorType::get({count}, i64),
                             ArrayRef<int64_t>(pointerCounts)));
  // The image: empty until pf-embed-gpu-kernels puts the device build in.
  auto image = LLVM::GlobalOp::create(
      b, loc, LLVM::LLVMArrayType::get(i8, 1), /*isConstant=*/true,
      LLVM::Linkage::Internal, kernels::kImageSymbol,
      b.getStringAttr(StringRef("\0", 1)));
  auto imageBytes = LLVM::GlobalOp::create(
      b, loc, i64, /*isConstant=*/true, LLVM::Linkage::Internal,
      kernels::kImageBytesSymbol, b.getI64IntegerAttr(0));

  auto init = module.lookupSymbol<LLVM::LLVMFuncOp>("pf_init_params");
  assert(init && "the kernel table is registered by pf_init_params");
  b.setInsertionPointToStart(&init.getBody().front());
  auto address = [&](LLVM::GlobalOp g) -> Value {
    return LLVM::AddressOfOp::create(b, loc, g);
  };
  Value bytes = LLVM::LoadOp::create(b, loc, i64, address(imageBytes));
  rt.pfrt_generated_kernels(b, loc, address(image), bytes, count,
                            address(nameTable), address(twinTable),
                            address(counts));
  (void)ctx;
}
