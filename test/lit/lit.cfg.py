# lit configuration for tiledsl's text-IR tests. ctest runs one lit invocation per test file
# (test/CMakeLists.txt) and passes the build and tool locations as --param values.
import os

import lit.formats

config.name = "tiledsl"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".tir", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)

params = lit_config.params
build = params.get("tiledsl_bin", "")
llvm_bin = params.get("llvm_bin", "/usr/lib/llvm-19/bin")
config.substitutions.append(("%tiledsl-opt", os.path.join(build, "tools", "tiledsl-opt")))
config.substitutions.append(("%tiledsl-aot", os.path.join(build, "tools", "tiledsl-aot")))
config.substitutions.append(("FileCheck", os.path.join(llvm_bin, "FileCheck")))
config.substitutions.append(("not ", os.path.join(llvm_bin, "not") + " "))
config.substitutions.append(("split-file", os.path.join(llvm_bin, "split-file")))
ptxas = params.get("ptxas", "")
if ptxas and os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
