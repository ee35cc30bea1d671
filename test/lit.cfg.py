# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "gatec"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.gatec_obj_root, "test")
# The rule: lit suites live in CamelCase folders (Import/, Passes/, ...),
# and a suite's own data sits in its Inputs/ folder (excluded by name).
# Folders whose names start with a lower-case letter at the top of test/
# (models/, scripts/, gpu/, ...) hold data and scripts only: a file with a
# test suffix there is a configuration error, not a silently skipped test.
# No two folders differ only in case.
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
_test_root = os.path.dirname(__file__)
for _entry in sorted(os.listdir(_test_root)):
    _path = os.path.join(_test_root, _entry)
    if not os.path.isdir(_path):
        continue
    if _entry[:1].islower():
        for _dir, _, _files in os.walk(_path):
            for _f in _files:
                if os.path.splitext(_f)[1] in config.suffixes:
                    lit_config.fatal("test/%s holds a test file (%s): lit suites "
                                     "live in CamelCase folders" % (_entry, os.path.join(_dir, _f)))
    for _other in os.listdir(_test_root):
        if _other != _entry and _other.lower() == _entry.lower():
            lit_config.fatal("test/%s and test/%s differ only in case" % (_entry, _other))

config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%gatec_src", config.gatec_src_root))
config.substitutions.append(("%gatec_obj", config.gatec_obj_root))
config.substitutions.append(("%models", os.path.join(config.gatec_src_root, "test", "models")))
config.substitutions.append(("%scripts", os.path.join(config.gatec_src_root, "test", "scripts")))

llvm_config.with_system_environment(["HOME", "PATH", "TMPDIR"])
# No __pycache__ in the source tree from the test scripts.
config.environment["PYTHONDONTWRITEBYTECODE"] = "1"
llvm_config.use_default_substitutions()

tool_dirs = [os.path.join(config.gatec_obj_root, "bin"), config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["gatec", "gatec-opt", "gatec-run"], tool_dirs)
# The sanitized build (-DGATEC_SANITIZE=ON, tools/sanitize.sh).
if getattr(config, "gatec_sanitize", False):
    config.available_features.add("asan")
# The libFuzzer target (tools/gatec-fuzz), where the toolchain could link it.
if getattr(config, "gatec_have_libfuzzer", False):
    config.available_features.add("libfuzzer")
    llvm_config.add_tool_substitutions(["gatec-fuzz-import"], tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# The CUDA toolkit (ptxas, libdevice) for the GPU target's checks: CUDA_HOME,
# else /usr/local/cuda. There is no GPU on CI machines; only the kernels'
# compilation is checked.
cuda_home = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
if os.path.exists(os.path.join(cuda_home, "bin", "ptxas")):
    config.available_features.add("ptxas")
    config.environment["CUDA_HOME"] = cuda_home
