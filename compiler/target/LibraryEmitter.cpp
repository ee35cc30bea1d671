//===- LibraryEmitter.cpp - a compiled model as a shared library ----------===//
#include "compiler/target/LibraryEmitter.h"

#include "compiler/target/WeightSection.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace gatec {
namespace {
/// compiler/target/abi/model_support.c and runtime/src/cuda/gatec_cuda.h,
/// embedded by the build.
const char *const kModelSupportSource =
#include "ModelSupport.inc"
    ;
const char *const kCudaSupportHeader =
#include "CudaSupport.inc"
    ;

/// gatec_dtype numbering of runtime/include/gatec/model_abi.h.
int32_t dtypeOf(Type e) {
  if (e.isF32())
    return 1;
  if (e.isF16())
    return 2;
  if (e.isBF16())
    return 3;
  if (e.isF64())
    return 4;
  if (e.isInteger(1))
    return 13;
  if (auto i = dyn_cast<IntegerType>(e)) {
    bool u = i.isUnsigned();
    switch (i.getWidth()) {
    case 8:
      return u ? 9 : 5;
    case 16:
      return u ? 10 : 6;
    case 32:
      return u ? 11 : 7;
    case 64:
      return u ? 12 : 8;
    }
  }
  return 0;
}

size_t byteSize(int32_t dtype) {
  static const size_t sizes[] = {0, 4, 2, 2, 8, 1, 2, 4, 8, 1, 2, 4, 8, 1};
  return dtype > 0 && dtype < 14 ? sizes[dtype] : 0;
}

FailureOr<ValueSignature> valueSig(Operation *op, Type t, DictionaryAttr attrs,
                                   StringRef what, unsigned i) {
  ValueSignature v;
  auto rt = dyn_cast<RankedTensorType>(t);
  if (!rt)
    return op->emitError() << what << " #" << i
                           << " must be a ranked tensor to compile, got " << t,
           failure();
  v.dtype = dtypeOf(rt.getElementType());
  if (!v.dtype)
    return op->emitError() << what << " #" << i << " has element type "
                           << rt.getElementType()
                           << ", which the model ABI has no code for",
           failure();
  v.name = what.str() + std::to_string(i);
  if (attrs) {
    if (auto n = attrs.getAs<StringAttr>("onnx.name"))
      v.name = n.str();
    if (auto p = attrs.getAs<ArrayAttr>("onnx.dim_params"))
      for (Attribute a : p)
        v.dimParams.push_back(cast<StringAttr>(a).str());
  }
  for (int64_t d : rt.getShape())
    v.dims.push_back(ShapedType::isDynamic(d) ? -1 : d);
  v.dimParams.resize(v.dims.size());
  return v;
}

std::string cString(StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if ((unsigned char)c < 32 || (unsigned char)c > 126) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\%03o", (unsigned char)c);
      out += buf;
    } else
      out += c;
  }
  return out + "\"";
}

LogicalResult runTool(ArrayRef<std::string> args, Location loc) {
  auto prog = llvm::sys::findProgramByName(args[0]);
  if (!prog) {
    // Debian's LLVM 22 tools live here when not on PATH.
    prog = llvm::sys::findProgramByName(args[0], {"/usr/lib/llvm-22/bin"});
    if (!prog)
      return emitError(loc)
             << "cannot find '" << args[0] << "' to compile the model library";
  }
  SmallVector<StringRef> refs;
  for (const std::string &a : args)
    refs.push_back(a);
  std::string err;
  int rc = llvm::sys::ExecuteAndWait(*prog, refs, std::nullopt, {}, 0, 0, &err);
  if (rc != 0) {
    std::string cmd;
    for (const std::string &a : args)
      cmd += a + " ";
    return emitError(loc) << "'" << cmd << "' failed (exit " << rc << ") "
                          << err;
  }
  return success();
}
} // namespace

FailureOr<ModelSignature> readSignature(ModuleOp module) {
  auto f = module.lookupSymbol<func::FuncOp>("main_graph");
  if (!f)
    return module.emitError() << "no @main_graph", failure();
  ModelSignature sig;
  for (unsigned i = 0; i < f.getNumArguments(); ++i) {
    auto v =
        valueSig(f, f.getArgumentTypes()[i], f.getArgAttrDict(i), "input", i);
    if (failed(v))
      return failure();
    sig.inputs.push_back(*v);
  }
  for (unsigned i = 0; i < f.getNumResults(); ++i) {
    auto v =
        valueSig(f, f.getResultTypes()[i], f.getResultAttrDict(i), "output", i);
    if (failed(v))
      return failure();
    sig.outputs.push_back(*v);
  }
  return sig;
}

void requestCInterface(ModuleOp module) {
  auto f = module.lookupSymbol<func::FuncOp>("main_graph");
  if (!f)
    return;
  f->setAttr("llvm.emit_c_interface", UnitAttr::get(module.getContext()));
  // The names and dim_params now live in the signature; LLVM has no use
  // for them on the parameters.
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    f.setArgAttrs(i, ArrayRef<NamedAttribute>{});
  for (unsigned i = 0; i < f.getNumResults(); ++i)
    f.setResultAttrs(i, ArrayRef<NamedAttribute>{});
}

std::string abiWrapperSource(const ModelSignature &sig, StringRef cudaArch) {
  bool cuda = !cudaArch.empty();
  std::string s;
  llvm::raw_string_ostream os(s);
  // The fixed part (a real C source, compiled and tested on its own), then
  // for CUDA the functions of libgatec_cuda it calls (the runtime's own
  // header), then the model's types, tables and gatec_run.
  os << "/* Generated by gatec from compiler/target/abi/model_support.c and\n"
        "   the model's signature. */\n";
  os << kModelSupportSource << "\n";
  if (cuda)
    os << kCudaSupportHeader << "\n";
  auto memrefType = [](size_t rank) {
    return "gatec_memref_" + std::to_string(rank);
  };
  std::vector<size_t> ranks;
  for (const auto *list : {&sig.inputs, &sig.outputs})
    for (const ValueSignature &v : *list)
      ranks.push_back(v.dims.size());
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  for (size_t r : ranks) {
    os << "typedef struct { void *allocated, *aligned; int64_t offset;";
    if (r)
      os << " int64_t sizes[" << r << "], strides[" << r << "];";
    os << " } " << memrefType(r) << ";\n";
  }
  os << "struct gatec_results {";
  for (size_t i = 0; i < sig.outputs.size(); ++i)
    os << " " << memrefType(sig.outputs[i].dims.size()) << " r" << i << ";";
  os << " };\n";
  os << "extern void _mlir_ciface_main_graph(";
  if (sig.outputs.size() == 1)
    os << memrefType(sig.outputs[0].dims.size()) << " *";
  else
    os << "struct gatec_results *";
  for (const ValueSignature &v : sig.inputs)
    os << ", " << memrefType(v.dims.size()) << " *";
  os << ");\n\n";

  // Signature tables.
  auto table = [&](const std::vector<ValueSignature> &vs, StringRef prefix) {
    for (size_t i = 0; i < vs.size(); ++i) {
      const ValueSignature &v = vs[i];
      os << "static const int64_t " << prefix << i << "_dims[] = {";
      for (int64_t d : v.dims)
        os << d << ", ";
      os << "0};\nstatic const char *const " << prefix << i << "_params[] = {";
      for (const std::string &p : v.dimParams)
        os << cString(p) << ", ";
      os << "0};\n";
    }
    os << "static const gatec_abi_value_info " << prefix << "_info[] = {\n";
    for (size_t i = 0; i < vs.size(); ++i)
      os << "  {" << cString(vs[i].name) << ", " << vs[i].dtype << ", "
         << vs[i].dims.size() << ", " << prefix << i << "_dims, " << prefix << i
         << "_params},\n";
    os << "};\n";
  };
  table(sig.inputs, "in");
  table(sig.outputs, "out");

  os << R"C(
static int gatec_run(const void *const *in_data, const int64_t *const *in_shapes,
                     void **out_data, int64_t *const *out_shapes,
                     gatec_alloc_fn alloc, void *alloc_ctx, char *err,
                     size_t err_len) {
)C";
  if (cuda)
    os << "  const char *cuda_error = gatec_cuda_init();\n"
          "  if (cuda_error) {\n"
          "    snprintf(err, err_len, \"%s\", cuda_error);\n"
          "    return 1;\n  }\n"
          "  gatec_cuda_begin_run();\n"
          "  int failed = 0;\n"
       << "  void *dev_in[" << std::max<size_t>(sig.inputs.size(), 1)
       << "] = {0};\n";
  else
    os << "  int failed = 0;\n";
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    size_t r = sig.inputs[i].dims.size();
    if (cuda) {
      os << "  {\n    size_t n = " << byteSize(sig.inputs[i].dtype) << ";\n";
      for (size_t k = 0; k < r; ++k)
        os << "    n *= (size_t)in_shapes[" << i << "][" << k << "];\n";
      os << "    dev_in[" << i << "] = gatec_cuda_malloc(n);\n"
         << "    if (!dev_in[" << i << "] || gatec_cuda_to_device(dev_in[" << i
         << "], in_data[" << i << "], n))\n      failed = 1;\n  }\n";
    }
    os << "  " << memrefType(r) << " a" << i << ";\n  a" << i
       << ".allocated = a" << i
       << ".aligned = " << (cuda ? "dev_in[" : "(void *)in_data[") << i
       << "];\n  a" << i << ".offset = 0;\n";
    if (r) {
      os << "  { int64_t s = 1; for (int k = " << r - 1 << "; k >= 0; --k) { a"
         << i << ".sizes[k] = in_shapes[" << i << "][k]; a" << i
         << ".strides[k] = s; s *= in_shapes[" << i << "][k]; } }\n";
    }
  }
  os << "  struct gatec_results res;\n";
  if (cuda)
    os << "  if (failed) {\n"
       << "    const char *e = gatec_cuda_run_error();\n"
       << "    snprintf(err, err_len, \"%s\", e ? e : \"cannot copy the "
          "inputs to the GPU\");\n"
       << "    for (int k = 0; k < " << sig.inputs.size()
       << "; ++k) gatec_cuda_free(dev_in[k]);\n    return 1;\n  }\n";
  // Nothing the error path reads changes between setjmp and longjmp.
  // The run's host buffers are tracked on this thread (gatec_malloc): a
  // failed check frees them (gatec_end_run).
  os << "  struct gatec_block *outer_live = gatec_live;\n"
     << "  int outer_in_run = gatec_in_run;\n"
     << "  gatec_live = NULL;\n  gatec_in_run = 1;\n";
  os << "  jmp_buf env;\n  jmp_buf *outer = gatec_check_env;\n"
     << "  gatec_check_oom = 0;\n"
     << "  if (setjmp(env)) {\n    gatec_check_env = outer;\n"
     << "    gatec_end_run(outer_live, outer_in_run);\n"
     << "    snprintf(err, err_len, \"%s\", gatec_check_msg);\n";
  if (cuda)
    os << "    (void)gatec_cuda_run_error();\n"
       << "    for (int k = 0; k < " << sig.inputs.size()
       << "; ++k) gatec_cuda_free(dev_in[k]);\n";
  os << "    return gatec_check_oom ? 2 : 1;\n  }\n  gatec_check_env = &env;\n";
  os << "  _mlir_ciface_main_graph(";
  os << (sig.outputs.size() == 1 ? "&res.r0" : "&res");
  for (size_t i = 0; i < sig.inputs.size(); ++i)
    os << ", &a" << i;
  os << ");\n  gatec_check_env = outer;\n";
  if (cuda)
    os << "  cuda_error = gatec_cuda_run_error();\n"
       << "  if (cuda_error) {\n"
       << "    snprintf(err, err_len, \"%s\", cuda_error);\n"
       << "    failed = 1;\n  }\n";
  for (size_t i = 0; i < sig.outputs.size(); ++i) {
    size_t r = sig.outputs[i].dims.size();
    size_t es = byteSize(sig.outputs[i].dtype);
    os << "  {\n    size_t n = 1;\n";
    if (r)
      os << "    for (int k = 0; k < " << r << "; ++k) { out_shapes[" << i
         << "][k] = res.r" << i << ".sizes[k]; n *= (size_t)res.r" << i
         << ".sizes[k]; }\n";
    os << "    out_data[" << i << "] = failed ? NULL : alloc(n * " << es
       << " ? n * " << es << " : 1, 64, alloc_ctx);\n"
       << "    if (!out_data[" << i
       << "]) {\n      if (!failed) snprintf(err, err_len, \"out of memory for "
          "output "
       << i << " (%zu bytes)\", n * " << es
       << ");\n      failed = 1;\n    } else {\n";
    std::string src = "(const char *)res.r" + std::to_string(i) +
                      ".aligned + res.r" + std::to_string(i) + ".offset * " +
                      std::to_string(es);
    if (cuda) {
      // The elements the strided view spans, copied to the host first.
      os << "      size_t span = n ? 1 : 0;\n";
      for (size_t k = 0; k < r; ++k)
        os << "      if (n) span += (size_t)(res.r" << i << ".sizes[" << k
           << "] - 1) * (size_t)res.r" << i << ".strides[" << k << "];\n";
      os << "      char *host = malloc(span * " << es << " + 1);\n"
         << "      if (!host || gatec_cuda_to_host(host, " << src << ", span * "
         << es << ")) {\n"
         << "        const char *e = gatec_cuda_run_error();\n"
         << "        if (!failed) snprintf(err, err_len, \"%s\", e ? e : "
            "\"out of memory\");\n"
         << "        failed = 1;\n      } else {\n";
      src = "host";
    }
    if (r)
      os << "      gatec_copy((char *)out_data[" << i << "], " << src << ", "
         << r << ", res.r" << i << ".sizes, res.r" << i << ".strides, " << es
         << ");\n";
    else
      os << "      memcpy(out_data[" << i << "], " << src << ", " << es
         << ");\n";
    if (cuda)
      os << "      }\n      free(host);\n";
    os << "    }\n  }\n";
  }
  // Then the model's buffers, once every output is copied: one buffer may
  // back several outputs (y and Identity(y)), or be an input. Each
  // allocation is freed once, and never the caller's.
  for (size_t i = 0; i < sig.outputs.size(); ++i) {
    os << "  if (1";
    for (size_t j = 0; j < i; ++j)
      os << " && res.r" << i << ".allocated != res.r" << j << ".allocated";
    for (size_t j = 0; j < sig.inputs.size(); ++j)
      os << " && res.r" << i << ".allocated != a" << j << ".allocated";
    os << ")\n    " << (cuda ? "gatec_cuda_free" : "gatec_free") << "(res.r"
       << i << ".allocated);\n";
  }
  os << "  gatec_end_run(outer_live, outer_in_run);\n";
  if (cuda)
    os << "  for (int k = 0; k < " << sig.inputs.size()
       << "; ++k) gatec_cuda_free(dev_in[k]);\n";
  os << "  return failed;\n}\n\n";
  std::string target = cuda ? ("cuda-" + cudaArch).str() : "cpu-x86_64";
  os << "static const gatec_model_abi gatec_abi = {GATEC_MODEL_ABI_VERSION, "
     << cString(target) << ", " << sig.inputs.size() << ", "
     << sig.outputs.size()
     << ", in_info, out_info, gatec_run};\n\n"
        "GATEC_MODEL_EXPORT const gatec_model_abi *gatec_model_get_abi(void) "
        "{\n"
        "  return &gatec_abi;\n}\n";
  return s;
}

LogicalResult emitLibrary(ModuleOp module, const ModelSignature &sig,
                          const EmitOptions &opts) {
  Location loc = module.getLoc();
  SmallString<128> dir;
  if (auto ec = llvm::sys::fs::createUniqueDirectory("gatec", dir))
    return emitError(loc) << "cannot create a temporary directory: "
                          << ec.message();
  // The weights go to their own object as raw bytes (weights.o), never
  // through LLVM constants; the module reaches clang as bitcode.
  FailureOr<std::string> weights = moveWeightsToObject(module, dir);
  if (failed(weights)) {
    llvm::sys::fs::remove_directories(dir);
    return failure();
  }
  llvm::LLVMContext llctx;
  auto llvmModule = translateModuleToLLVMIR(module, llctx, "gatec_model");
  if (!llvmModule) {
    llvm::sys::fs::remove_directories(dir);
    return emitError(loc) << "translation to LLVM IR failed";
  }
  std::string ll = (dir + "/model.bc").str(), c = (dir + "/abi.c").str();
  // Parallel loops call the OpenMP runtime (libomp of LLVM 22).
  bool usesOpenMP = llvm::any_of(llvmModule->functions(), [](auto &fn) {
    return fn.getName().starts_with("__kmpc_");
  });
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(ll, ec);
    if (ec)
      return emitError(loc) << "cannot write " << ll << ": " << ec.message();
    llvm::WriteBitcodeToFile(*llvmModule, os);
  }
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(c, ec);
    if (ec)
      return emitError(loc) << "cannot write " << c << ": " << ec.message();
    os << abiWrapperSource(sig, opts.cuda ? StringRef(opts.gpuArch) : "");
  }
  std::vector<std::string> common{opts.cc, "-O3", "-march=" + opts.march,
                                  "-fPIC", "-Wno-override-module",
                                  // -O3 has nothing to do for weights.o
                                  "-Wno-unused-command-line-argument"};
  std::string inc = "-I" + opts.runtimeInclude;
  LogicalResult r = success();
  if (opts.objectOnly) {
    std::string o1 = (dir + "/model.o").str(), o2 = (dir + "/abi.o").str();
    auto a = common, b = common;
    a.insert(a.end(), {"-c", ll, "-o", o1});
    b.insert(b.end(), {inc, "-c", c, "-o", o2});
    std::vector<std::string> link{"ld.lld-22", "-r", o1, o2};
    if (!weights->empty())
      link.push_back(*weights);
    link.insert(link.end(), {"-o", opts.output});
    r = succeeded(runTool(a, loc)) && succeeded(runTool(b, loc)) &&
                succeeded(runTool(link, loc))
            ? success()
            : failure();
  } else {
    auto a = common;
    a.insert(a.end(), {inc, "-shared", ll, c, "-o", opts.output, "-lm"});
    if (!weights->empty())
      a.push_back(*weights);
    if (usesOpenMP)
      a.insert(a.end(), {"-L" GATEC_LLVM_LIB_DIR, "-lomp",
                         "-Wl,-rpath," GATEC_LLVM_LIB_DIR});
    if (opts.cuda)
      a.insert(a.end(), {"-L" + opts.cudaRuntimeLibDir, "-lgatec_cuda",
                         "-Wl,-rpath," + opts.cudaRuntimeLibDir});
    r = runTool(a, loc);
  }
  llvm::sys::fs::remove_directories(dir);
  return r;
}

} // namespace gatec
