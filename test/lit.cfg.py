# -*- Python -*-
# lit configuration of the PipeFlow test suite.

import os
import shutil

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "PIPEFLOW"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.pf_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%pf_src_root", config.pf_src_root))
config.substitutions.append(("%pf_obj_root", config.pf_obj_root))
# Debian's Python: it has numpy (a pyenv python3 first on PATH may not).
config.substitutions.append(("%python", "/usr/bin/python3"))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.pf_tools_dir, config.llvm_tools_dir]
tools = ["pf-opt", "pf-translate", "pf-run", "FileCheck", "not", "count"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

if shutil.which("dot"):
    config.available_features.add("graphviz")
if config.pf_enable_mpi:
    config.available_features.add("mpi")
if config.pf_enable_cuda:
    config.available_features.add("cuda")
