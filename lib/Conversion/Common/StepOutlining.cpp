//===- StepOutlining.cpp - the step as a loop over its actions ------------===//

#include "pf/Conversion/Common/StepOutlining.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringSet.h"

#include <map>
#include <vector>

using namespace mlir;
using namespace mlir::pf;

namespace {

/// Runtime calls without an effect another call could observe: recomputing
/// them in another function gives the same value.
bool isPureRuntimeCall(StringRef callee) {
  return callee == "pfrt_arena_at" || callee == "pfrt_stream_id" ||
         callee == "pfrt_scalar";
}

/// Bits of an integer or float constant, as one table entry.
int64_t constantBits(LLVM::ConstantOp c) {
  if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
    return i.getValue().getSExtValue();
  auto f = cast<FloatAttr>(c.getValue());
  return static_cast<int64_t>(f.getValue().bitcastToAPInt().getZExtValue());
}

class Outliner {
public:
  Outliner(ModuleOp module, LLVM::LLVMFuncOp step, StringRef marker)
      : module(module), step(step), marker(marker) {}

  bool run(OutlineStats &stats);

private:
  bool isMarker(Operation &op) {
    auto call = dyn_cast<LLVM::CallOp>(op);
    return call && call.getCallee() == marker;
  }
  bool recomputable(Value v);
  Value recompute(Value v, OpBuilder &b, IRMapping &map);
  LLVM::LLVMFuncOp outline(ArrayRef<Operation *> ops, unsigned index);
  using Signature = std::vector<const void *>;
  /// What outlining `ops` would give, without building it.
  struct Shape {
    Signature signature;
    SmallVector<int64_t> constants; // integer and float constants' bits
    // The ops signed, in order: their properties enter the signature as a
    // hash, compared exactly within a group (samePropertiesAs).
    SmallVector<Operation *> ops;
    bool samePropertiesAs(const Shape &other) const;
  };
  Shape shapeOf(ArrayRef<Operation *> ops);
  void merge(LLVM::LLVMFuncOp f, ArrayRef<const Shape *> group, unsigned index);
  void emitLoop(ArrayRef<std::pair<LLVM::LLVMFuncOp, int64_t>> actions,
                Operation *terminator);

  ModuleOp module;
  LLVM::LLVMFuncOp step;
  StringRef marker;
  llvm::DenseMap<Value, bool> canRecompute;
};

bool Outliner::recomputable(Value v) {
  if (auto it = canRecompute.find(v); it != canRecompute.end())
    return it->second;
  bool ok = false;
  if (Operation *def = v.getDefiningOp()) {
    auto all = [&] {
      return llvm::all_of(def->getOperands(),
                          [&](Value o) { return recomputable(o); });
    };
    if (isa<LLVM::ConstantOp, LLVM::AddressOfOp, LLVM::ZeroOp>(def))
      ok = true;
    else if (auto load = dyn_cast<LLVM::LoadOp>(def))
      // The parameters' and the seed's globals: written by pf_init_params
      // only.
      ok = static_cast<bool>(load.getAddr().getDefiningOp<LLVM::AddressOfOp>());
    else if (isa<LLVM::GEPOp>(def))
      ok = all();
    else if (auto call = dyn_cast<LLVM::CallOp>(def))
      ok = call.getCallee() && isPureRuntimeCall(*call.getCallee()) && all();
  }
  return canRecompute[v] = ok;
}

Value Outliner::recompute(Value v, OpBuilder &b, IRMapping &map) {
  if (Value known = map.lookupOrNull(v))
    return known;
  Operation *def = v.getDefiningOp();
  for (Value operand : def->getOperands())
    recompute(operand, b, map);
  b.clone(*def, map);
  return map.lookup(v);
}

/// A function of the instance number doing what `ops` did.
LLVM::LLVMFuncOp Outliner::outline(ArrayRef<Operation *> ops, unsigned index) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  b.setInsertionPoint(step);
  auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                          {IntegerType::get(ctx, 64)});
  auto fn = LLVM::LLVMFuncOp::create(b, step.getLoc(),
                                     ("pf_action" + Twine(index)).str(), type,
                                     LLVM::Linkage::Internal);
  Block *entry = fn.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  llvm::SmallPtrSet<Operation *, 32> inside(ops.begin(), ops.end());
  IRMapping map;
  for (Operation *op : ops) {
    for (Value operand : op->getOperands())
      if (!inside.contains(operand.getDefiningOp()))
        recompute(operand, b, map);
    b.clone(*op, map);
  }
  LLVM::ReturnOp::create(b, step.getLoc(), ValueRange{});
  return fn;
}

/// The structure of the function `outline(ops)` would build, op by op in
/// the order it would clone them (each outside value's recomputation just
/// before its first user), with integer and float constants' values left
/// out and collected apart, as uniqued pointers (names, attributes and
/// types are uniqued in the context): equal signatures mean the functions
/// differ in those constants only. Nothing is cloned, so signing every
/// micro-batch's action costs one walk of the step.
Outliner::Shape Outliner::shapeOf(ArrayRef<Operation *> ops) {
  Shape shape;
  Signature &sig = shape.signature;
  llvm::SmallPtrSet<Operation *, 32> inside(ops.begin(), ops.end());
  llvm::DenseMap<Value, uintptr_t> number;
  auto sign = [&](Operation &op) {
    sig.push_back(op.getName().getAsOpaquePointer());
    sig.push_back(reinterpret_cast<const void *>(
        static_cast<uintptr_t>(op.getNumOperands())));
    for (Value operand : op.getOperands())
      sig.push_back(reinterpret_cast<const void *>(number.lookup(operand)));
    auto c = dyn_cast<LLVM::ConstantOp>(op);
    if (c && isa<IntegerAttr, FloatAttr>(c.getValue())) {
      sig.push_back(nullptr);
      shape.constants.push_back(constantBits(c));
    } else {
      sig.push_back(reinterpret_cast<const void *>(
          static_cast<uintptr_t>(static_cast<size_t>(op.hashProperties()))));
    }
    shape.ops.push_back(&op);
    sig.push_back(op.getDiscardableAttrDictionary().getAsOpaquePointer());
    for (Value r : op.getResults()) {
      sig.push_back(r.getType().getAsOpaquePointer());
      number[r] = number.size() + 1;
    }
  };
  // As recompute(): an outside value's defining chain, operands first.
  auto signOutside = [&](auto &self, Value v) -> void {
    if (number.count(v))
      return;
    Operation *def = v.getDefiningOp();
    for (Value operand : def->getOperands())
      self(self, operand);
    sign(*def);
  };
  for (Operation *op : ops) {
    for (Value operand : op->getOperands())
      if (!inside.contains(operand.getDefiningOp()))
        signOutside(signOutside, operand);
    sign(*op);
  }
  return shape;
}

/// Whether the ops of two shapes with equal signatures have equal properties
/// (the signatures hold their hashes): constants aside, whose values are
/// the table's.
bool Outliner::Shape::samePropertiesAs(const Shape &other) const {
  for (auto [a, b] : llvm::zip_equal(ops, other.ops)) {
    auto c = dyn_cast<LLVM::ConstantOp>(a);
    if (c && isa<IntegerAttr, FloatAttr>(c.getValue()))
      continue;
    if (!a->getName().compareOpProperties(a->getPropertiesStorage(),
                                          b->getPropertiesStorage()))
      return false;
  }
  return true;
}

/// The actions of `group` differ in constants only, and `f` outlines the
/// first: it reads the constants that differ from a table indexed by its
/// instance argument (row k: the k-th action's).
void Outliner::merge(LLVM::LLVMFuncOp f, ArrayRef<const Shape *> group,
                     unsigned index) {
  SmallVector<LLVM::ConstantOp> mine;
  f.walk([&](LLVM::ConstantOp c) {
    if (isa<IntegerAttr, FloatAttr>(c.getValue()))
      mine.push_back(c);
  });
  assert(mine.size() == group.front()->constants.size() &&
         "the function and its shape disagree");
  SmallVector<unsigned> varying;
  for (unsigned j = 0, e = mine.size(); j < e; ++j)
    for (const Shape *other : group)
      if (other->constants[j] != group.front()->constants[j]) {
        varying.push_back(j);
        break;
      }
  if (varying.empty())
    return;
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  Type i64 = IntegerType::get(ctx, 64);
  SmallVector<int64_t> table;
  for (const Shape *other : group)
    for (unsigned j : varying)
      table.push_back(other->constants[j]);
  b.setInsertionPointToStart(module.getBody());
  auto tableType = LLVM::LLVMArrayType::get(i64, table.size());
  auto global = LLVM::GlobalOp::create(
      b, step.getLoc(), tableType, /*isConstant=*/true, LLVM::Linkage::Private,
      ("pf_action" + Twine(index) + "_constants").str(),
      DenseIntElementsAttr::get(
          RankedTensorType::get({static_cast<int64_t>(table.size())}, i64),
          table));
  Value instance = f.getArgument(0);
  Location loc = step.getLoc();
  for (auto [k, j] : llvm::enumerate(varying)) {
    LLVM::ConstantOp c = mine[j];
    b.setInsertionPoint(c);
    Value row = LLVM::MulOp::create(
        b, loc, instance,
        LLVM::ConstantOp::create(b, loc, i64,
                                 b.getI64IntegerAttr(varying.size())));
    Value at = LLVM::AddOp::create(
        b, loc, row,
        LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(k)));
    Value ptr = LLVM::GEPOp::create(
        b, loc, LLVM::LLVMPointerType::get(ctx), i64,
        LLVM::AddressOfOp::create(b, loc, global), ValueRange{at});
    Value bits = LLVM::LoadOp::create(b, loc, i64, ptr);
    Type type = c.getType();
    Value value = bits;
    if (type.isF64()) {
      value = LLVM::BitcastOp::create(b, loc, type, bits);
    } else if (type.isF32() || type.isBF16() || type.isF16()) {
      unsigned width = type.getIntOrFloatBitWidth();
      value = LLVM::BitcastOp::create(
          b, loc, type,
          LLVM::TruncOp::create(b, loc, IntegerType::get(ctx, width), bits));
    } else if (type.getIntOrFloatBitWidth() < 64) {
      value = LLVM::TruncOp::create(b, loc, type, bits);
    }
    c.getResult().replaceAllUsesWith(value);
    c.erase();
  }
}

/// The step: for i in actions, call function[i](instance[i]).
void Outliner::emitLoop(ArrayRef<std::pair<LLVM::LLVMFuncOp, int64_t>> actions,
                        Operation *terminator) {
  MLIRContext *ctx = module.getContext();
  Location loc = step.getLoc();
  OpBuilder b(ctx);
  Type i64 = IntegerType::get(ctx, 64), i32 = IntegerType::get(ctx, 32);
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  SmallVector<LLVM::LLVMFuncOp> functions;
  llvm::DenseMap<Operation *, int32_t> slot;
  SmallVector<int32_t> which;
  SmallVector<int64_t> instances;
  for (auto [f, instance] : actions) {
    auto [it, inserted] = slot.try_emplace(f, functions.size());
    if (inserted)
      functions.push_back(f);
    which.push_back(it->second);
    instances.push_back(instance);
  }
  b.setInsertionPointToStart(module.getBody());
  auto dense = [&](auto values, Type elem) {
    return DenseIntElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(values.size())}, elem),
        values);
  };
  auto whichTable = LLVM::GlobalOp::create(
      b, loc, LLVM::LLVMArrayType::get(i32, which.size()), true,
      LLVM::Linkage::Private, "pf_step_action_function",
      dense(ArrayRef<int32_t>(which), i32));
  auto instanceTable = LLVM::GlobalOp::create(
      b, loc, LLVM::LLVMArrayType::get(i64, instances.size()), true,
      LLVM::Linkage::Private, "pf_step_action_instance",
      dense(ArrayRef<int64_t>(instances), i64));
  auto fnArray = LLVM::LLVMArrayType::get(ptr, functions.size());
  auto fnTable =
      LLVM::GlobalOp::create(b, loc, fnArray, true, LLVM::Linkage::Private,
                             "pf_step_action_functions", Attribute());
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(b.createBlock(&fnTable.getInitializerRegion()));
    Value array = LLVM::UndefOp::create(b, loc, fnArray);
    for (auto [k, f] : llvm::enumerate(functions))
      array = LLVM::InsertValueOp::create(
          b, loc, array, LLVM::AddressOfOp::create(b, loc, f),
          ArrayRef<int64_t>{static_cast<int64_t>(k)});
    LLVM::ReturnOp::create(b, loc, array);
  }

  Block *entry = &step.getBody().front();
  Region &body = step.getBody();
  Block *header = b.createBlock(&body, body.end(), {i64}, {loc});
  Block *loop = b.createBlock(&body, body.end());
  Block *exit = b.createBlock(&body, body.end());
  b.setInsertionPointToEnd(entry);
  LLVM::BrOp::create(
      b, loc, ValueRange{LLVM::ConstantOp::create(b, loc, i64, 0)}, header);
  b.setInsertionPointToEnd(header);
  Value i = header->getArgument(0);
  Value more = LLVM::ICmpOp::create(
      b, loc, LLVM::ICmpPredicate::slt, i,
      LLVM::ConstantOp::create(b, loc, i64,
                               static_cast<int64_t>(actions.size())));
  LLVM::CondBrOp::create(b, loc, more, loop, exit);
  b.setInsertionPointToEnd(loop);
  Value fIndex = LLVM::LoadOp::create(
      b, loc, i32,
      LLVM::GEPOp::create(b, loc, ptr, i32,
                          LLVM::AddressOfOp::create(b, loc, whichTable),
                          ValueRange{i}));
  Value fn = LLVM::LoadOp::create(
      b, loc, ptr,
      LLVM::GEPOp::create(
          b, loc, ptr, ptr, LLVM::AddressOfOp::create(b, loc, fnTable),
          ValueRange{LLVM::ZExtOp::create(b, loc, i64, fIndex)}));
  Value instance = LLVM::LoadOp::create(
      b, loc, i64,
      LLVM::GEPOp::create(b, loc, ptr, i64,
                          LLVM::AddressOfOp::create(b, loc, instanceTable),
                          ValueRange{i}));
  auto fnType =
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {i64});
  LLVM::CallOp::create(b, loc, fnType, ValueRange{fn, instance});
  Value next =
      LLVM::AddOp::create(b, loc, i, LLVM::ConstantOp::create(b, loc, i64, 1));
  LLVM::BrOp::create(b, loc, ValueRange{next}, header);
  terminator->moveBefore(exit, exit->end());
}

bool Outliner::run(OutlineStats &stats) {
  if (!step.getBody().hasOneBlock())
    return false;
  Block &body = step.getBody().front();
  SmallVector<SmallVector<Operation *>> segments(1);
  SmallVector<Operation *> markers;
  llvm::DenseMap<Operation *, unsigned> segmentOf;
  Operation *terminator = body.getTerminator();
  size_t numOps = 0;
  for (Operation &op : body) {
    if (isMarker(op)) {
      markers.push_back(&op);
      if (!segments.back().empty())
        segments.emplace_back();
      continue;
    }
    if (&op == terminator)
      continue;
    ++numOps;
    segments.back().push_back(&op);
  }
  if (segments.back().empty())
    segments.pop_back();
  // A segment of recomputable values only (addresses, constants) has no
  // effect of its own: its users recompute what they need.
  llvm::erase_if(segments, [&](ArrayRef<Operation *> ops) {
    return llvm::all_of(ops, [&](Operation *op) {
      return op->getNumResults() == 1 && recomputable(op->getResult(0));
    });
  });
  segmentOf.reserve(numOps);
  for (auto [k, ops] : llvm::enumerate(segments))
    for (Operation *op : ops)
      segmentOf[op] = k;
  auto dropMarkers = [&] {
    for (Operation *m : markers)
      m->erase();
  };
  // Only recomputable values may cross actions.
  for (auto [k, ops] : llvm::enumerate(segments))
    for (Operation *op : ops) {
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if ((!def || segmentOf.lookup(def) != k) && !recomputable(operand)) {
          dropMarkers();
          return false;
        }
      }
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers())
          if (segmentOf.lookup(user) != k && !recomputable(result)) {
            dropMarkers();
            return false;
          }
    }
  // One shape per action, then one function per shape.
  SmallVector<Shape> shapes;
  shapes.reserve(segments.size());
  for (ArrayRef<Operation *> ops : segments)
    shapes.push_back(shapeOf(ops));
  // Groups in order of first appearance, so names and tables do not
  // depend on pointer values.
  // Equal signatures whose properties differ (a hash collision) are
  // groups of their own.
  std::map<Signature, SmallVector<unsigned, 1>> groupsOf;
  SmallVector<SmallVector<unsigned>> groups;
  SmallVector<std::pair<unsigned, int64_t>> member; // (group, instance)
  for (Shape &shape : shapes) {
    // The signature is only a key from here on: moved, not copied.
    SmallVector<unsigned, 1> &candidates = groupsOf[std::move(shape.signature)];
    unsigned group = groups.size();
    for (unsigned g : candidates)
      if (shape.samePropertiesAs(shapes[groups[g].front()])) {
        group = g;
        break;
      }
    if (group == groups.size()) {
      candidates.push_back(group);
      groups.emplace_back();
    }
    member.push_back({group, static_cast<int64_t>(groups[group].size())});
    groups[group].push_back(member.size() - 1);
  }
  SmallVector<LLVM::LLVMFuncOp> functions;
  for (auto [index, group] : llvm::enumerate(groups)) {
    LLVM::LLVMFuncOp f = outline(segments[group.front()], index);
    SmallVector<const Shape *> groupShapes;
    for (unsigned k : group)
      groupShapes.push_back(&shapes[k]);
    merge(f, groupShapes, index);
    functions.push_back(f);
  }
  SmallVector<std::pair<LLVM::LLVMFuncOp, int64_t>> actions;
  for (auto [group, instance] : member)
    actions.push_back({functions[group], instance});
  // The step keeps only its terminator, then becomes the loop.
  dropMarkers();
  for (Operation &op :
       llvm::make_early_inc_range(llvm::reverse(body.getOperations())))
    if (&op != terminator) {
      op.dropAllUses();
      op.erase();
    }
  emitLoop(actions, terminator);
  stats.actions = actions.size();
  stats.functions = groups.size();
  return true;
}

} // namespace

bool mlir::pf::outlineStepActions(ModuleOp module, LLVM::LLVMFuncOp step,
                                  StringRef marker, OutlineStats &stats) {
  return Outliner(module, step, marker).run(stats);
}
