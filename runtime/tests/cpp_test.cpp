// Tests the C++ layer (gatec/runtime.hpp), built with -fno-exceptions and
// -fno-rtti. Usage: gatec-runtime-cpp-test MODELS_DIR. Exits 1 on failure.
#include "gatec/runtime.hpp"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

static int checks, failures;
#define CHECK(cond)                                                            \
  do {                                                                         \
    ++checks;                                                                  \
    if (!(cond)) {                                                             \
      ++failures;                                                              \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__,    \
                   #cond);                                                     \
    }                                                                          \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODELS_DIR\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];

  gatec::Expected<gatec::Model> missing = gatec::Model::load(dir + "/nope.so");
  CHECK(!missing.ok() && !missing);
  CHECK(missing.status().code() == GATEC_STATUS_LOAD_ERROR);
  CHECK(missing.status().message() ==
        "cannot load model '" + dir + "/nope.so': No such file or directory");
  CHECK(std::string(missing.status().codeName()) == "load error");

  auto cuda = gatec::Model::load(dir + "/two_outputs.so", GATEC_DEVICE_CUDA);
  CHECK(!cuda && cuda.status().code() == GATEC_STATUS_DEVICE_UNAVAILABLE);

  auto model = gatec::Model::load(dir + "/two_outputs.so");
  CHECK(model.ok());
  if (!model) {
    std::fprintf(stderr, "%s\n", model.status().message().c_str());
    return 1;
  }
  CHECK(model->numInputs() == 2 && model->numOutputs() == 2);
  std::vector<gatec::ValueInfo> ins = model->inputs();
  CHECK(ins.size() == 2 && ins[1].name == "b" &&
        ins[1].dtype == GATEC_DTYPE_F32 &&
        ins[1].dims == std::vector<int64_t>{-1} &&
        ins[1].dimParams == std::vector<std::string>{"n"} &&
        ins[1].shapeStr == "[n]");
  CHECK(model->output(1).name == "prod" && model->outputIndex("prod") == 1 &&
        model->inputIndex("nope") == -1);

  const float av[4] = {1.5f, -2.0f, 0.25f, 8.0f};
  const float bv[4] = {2.0f, 3.0f, -4.0f, 0.5f};
  auto a = gatec::Tensor::copyOf<float>({4}, av, 4);
  auto b = gatec::Tensor::copyOf<float>({4}, bv, 4);
  CHECK(a && b && a->ownsData() && a->shape() == std::vector<int64_t>{4});
  CHECK(a->data<float>() != nullptr && a->data<double>() == nullptr);
  auto bad = gatec::Tensor::copyOf<float>({5}, av, 4);
  CHECK(!bad && bad.status().code() == GATEC_STATUS_INVALID_ARGUMENT &&
        bad.status().message() ==
            "gatec::Tensor::copyOf: the shape has 5 elements, 4 values given");

  auto outs = model->run({&*a, &*b});
  CHECK(outs.ok());
  if (outs) {
    CHECK(outs->size() == 2);
    const float *sum = (*outs)[0].data<float>();
    const float *prod = (*outs)[1].data<float>();
    bool ok = sum && prod && (*outs)[0].numElements() == 4;
    for (int i = 0; ok && i < 4; ++i)
      ok = sum[i] == av[i] + bv[i] && prod[i] == av[i] * bv[i];
    CHECK(ok);
  }

  // A strided view of borrowed memory, by name.
  float wide[8] = {1, 100, 2, 100, 3, 100, 4, 100};
  auto view = gatec::Tensor::wrap(wide, GATEC_DTYPE_F32, {4}, {2});
  CHECK(view && !view->isContiguous() && !view->ownsData());
  auto named = model->runNamed({{"b", &*b}, {"a", &*view}});
  CHECK(named.ok());
  if (named) {
    const float *sum = (*named)[0].data<float>();
    CHECK(sum && sum[0] == 3.0f && sum[1] == 5.0f && sum[2] == -1.0f &&
          sum[3] == 4.5f);
  }
  auto dense = view->copyDense();
  CHECK(dense && dense->isContiguous() && dense->data<float>()[3] == 4.0f);

  // Errors come back as Status, not exceptions.
  auto ints = gatec::Tensor::create(GATEC_DTYPE_I32, {4});
  CHECK(ints.ok());
  auto wrong = model->run({&*a, &*ints});
  CHECK(!wrong && wrong.status().code() == GATEC_STATUS_DTYPE_MISMATCH &&
        wrong.status().message() == "input 'b': expected dtype f32, given i32");
  auto few = model->run({&*a});
  CHECK(!few && few.status().code() == GATEC_STATUS_MISSING_INPUT);
  auto strides = gatec::Tensor::wrap(wide, GATEC_DTYPE_F32, {4}, {2, 1});
  CHECK(!strides && strides.status().message() ==
                        "gatec::Tensor::wrap: 1 dims but 2 strides");

  // Moves transfer ownership.
  gatec::Tensor moved = std::move(*a);
  CHECK(moved.valid() && !a->valid());
  gatec::Model other = std::move(*model);
  CHECK(other.get() != nullptr && model->get() == nullptr);
  CHECK(other.run({&moved, &*b}).ok());

  std::printf("cpp test: %d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
