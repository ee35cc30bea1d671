//===- DeviceConstants.cpp - --device-constants ---------------------------===//
//
// Weights read by kernels become device buffers that the runtime uploads
// once (gatec_cuda_constant), instead of initialisers of the kernels' PTX.
//
//===----------------------------------------------------------------------===//
#include "passes/gpu/Passes.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"

namespace gatec::gpu {
#define GEN_PASS_DEF_DEVICECONSTANTS
#include "passes/gpu/Passes.h.inc"
} // namespace gatec::gpu

using namespace mlir;

namespace {
constexpr llvm::StringLiteral kUpload = "gatec_cuda_constant";

/// Bytes of a constant global's data, or -1 when its type is not one this
/// pass moves (static shape, identity layout, int or float elements).
int64_t constantBytes(memref::GlobalOp g) {
  MemRefType t = g.getType();
  if (!g.getConstant() || !t.hasStaticShape() || !t.getLayout().isIdentity() ||
      t.getMemorySpace() || !g.getInitialValue() ||
      !isa<IntegerType, FloatType>(t.getElementType()))
    return -1;
  return t.getNumElements() *
         ((t.getElementType().getIntOrFloatBitWidth() + 7) / 8);
}

struct DeviceConstantsPass
    : gatec::gpu::impl::DeviceConstantsBase<DeviceConstantsPass> {
  using Base::Base;

  /// The pointer-sized slot holding `g`'s device address, made once.
  memref::GlobalOp slotFor(memref::GlobalOp g, SymbolTable &symbols) {
    auto name = (g.getSymName() + "__device").str();
    if (auto s = symbols.lookup<memref::GlobalOp>(name))
      return s;
    OpBuilder b(g);
    b.setInsertionPointAfter(g);
    auto type = MemRefType::get({1}, b.getI64Type());
    auto slot = memref::GlobalOp::create(
        b, g.getLoc(), name, b.getStringAttr("private"), type,
        DenseElementsAttr::get(RankedTensorType::get({1}, b.getI64Type()),
                               b.getI64IntegerAttr(0)),
        /*constant=*/false, /*alignment=*/IntegerAttr());
    symbols.insert(slot);
    return slot;
  }

  /// The address of a host buffer as an !llvm.ptr.
  static Value addressOf(OpBuilder &b, Location loc, Value memref) {
    Value i = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), i);
    return LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), i64);
  }

  /// At `b`'s point: the device copy of `g` as a value of its memref type.
  Value deviceCopy(OpBuilder &b, memref::GlobalOp g, memref::GlobalOp slot,
                   int64_t bytes) {
    Location loc = g.getLoc();
    MLIRContext *ctx = b.getContext();
    MemRefType t = g.getType();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    Value host = memref::GetGlobalOp::create(b, loc, t, g.getSymName());
    Value slotBuf =
        memref::GetGlobalOp::create(b, loc, slot.getType(), slot.getSymName());
    Value n = arith::ConstantIntOp::create(b, loc, bytes, 64);
    Value device = func::CallOp::create(b, loc, kUpload, TypeRange{ptr},
                                        ValueRange{addressOf(b, loc, slotBuf),
                                                   addressOf(b, loc, host), n})
                       .getResult(0);
    // The memref descriptor of finalize-memref-to-llvm: allocated and
    // aligned pointers, offset, sizes, strides.
    int64_t rank = t.getRank();
    auto i64 = b.getI64Type();
    SmallVector<Type> fields = {ptr, ptr, i64};
    if (rank) {
      fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
      fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
    }
    auto descType = LLVM::LLVMStructType::getLiteral(ctx, fields);
    Value desc = LLVM::PoisonOp::create(b, loc, descType);
    auto i64Const = [&](int64_t v) {
      return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v));
    };
    desc =
        LLVM::InsertValueOp::create(b, loc, desc, device, ArrayRef<int64_t>{0});
    desc =
        LLVM::InsertValueOp::create(b, loc, desc, device, ArrayRef<int64_t>{1});
    desc = LLVM::InsertValueOp::create(b, loc, desc, i64Const(0),
                                       ArrayRef<int64_t>{2});
    SmallVector<int64_t> strides = t.getStridesAndOffset().first;
    for (int64_t d = 0; d < rank; ++d) {
      desc = LLVM::InsertValueOp::create(
          b, loc, desc, i64Const(t.getDimSize(d)), ArrayRef<int64_t>{3, d});
      desc = LLVM::InsertValueOp::create(b, loc, desc, i64Const(strides[d]),
                                         ArrayRef<int64_t>{4, d});
    }
    return UnrealizedConversionCastOp::create(b, loc, TypeRange{t},
                                              ValueRange{desc})
        .getResult(0);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    bool declared = false;
    for (auto f : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (f.isExternal())
        continue;
      // The kernels' reads of large constants, by global.
      SmallVector<memref::GetGlobalOp> reads;
      f.walk([&](memref::GetGlobalOp get) {
        if (!get->getParentOfType<mlir::gpu::LaunchOp>())
          return;
        auto g = symbols.lookup<memref::GlobalOp>(get.getName());
        if (g && constantBytes(g) >= minBytes)
          reads.push_back(get);
      });
      if (reads.empty())
        continue;
      if (!declared) {
        OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
        auto ptr = LLVM::LLVMPointerType::get(&getContext());
        auto decl = func::FuncOp::create(
            b, module.getLoc(), kUpload,
            b.getFunctionType({ptr, ptr, b.getI64Type()}, {ptr}));
        decl.setPrivate();
        declared = true;
      }
      // Asked for at the function's entry, before any GPU work, so that
      // gpu-async-region needs no wait for these calls.
      OpBuilder b = OpBuilder::atBlockBegin(&f.getBody().front());
      llvm::DenseMap<StringAttr, Value> copies;
      for (memref::GetGlobalOp get : reads) {
        StringAttr name = get.getNameAttr().getAttr();
        Value &copy = copies[name];
        if (!copy) {
          auto g = symbols.lookup<memref::GlobalOp>(name);
          copy = deviceCopy(b, g, slotFor(g, symbols), constantBytes(g));
        }
        get.replaceAllUsesWith(copy);
        get.erase();
      }
    }
  }
};
} // namespace
