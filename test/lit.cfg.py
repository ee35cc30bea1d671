# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "gatec"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.gatec_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "models", "fuzz",
                   "Inputs", "scripts"]

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
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# The CUDA toolkit (ptxas, libdevice) for the GPU target's checks: CUDA_HOME,
# else /usr/local/cuda. There is no GPU on CI machines; only the kernels'
# compilation is checked.
cuda_home = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
if os.path.exists(os.path.join(cuda_home, "bin", "ptxas")):
    config.available_features.add("ptxas")
    config.environment["CUDA_HOME"] = cuda_home
