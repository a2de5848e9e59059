# lit configuration for nnc-jit's tool tests. Run through ctest (`lit` entry)
# or directly: python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv build/test
import os

import lit.formats

config.name = "nnc-jit"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".nnc", ".test"]
config.excludes = ["Inputs", "inputs", "check_workload.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.nnc_obj_root

# Our tools first, then LLVM 19's FileCheck, not and count (the ones on PATH
# are LLVM 14 or missing).
path = os.pathsep.join([config.nnc_tools_dir, config.llvm_tools_dir,
                        config.environment.get("PATH", os.environ["PATH"])])
config.environment["PATH"] = path
for var in ("OMP_NUM_THREADS", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%workloads", config.workloads_dir))
config.substitutions.append(("%nnc-jit", "nnc-jit"))

# Hosts whose oneDNN path is AVX-512 (some tests check what oneDNN picks).
try:
    with open("/proc/cpuinfo") as f:
        if " avx512f" in f.read():
            config.available_features.add("avx512")
except OSError:
    pass
if os.path.isdir(config.workloads_dir):
    config.available_features.add("workloads")
if config.nnc_have_fuzzer.upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("libfuzzer")
if config.nnc_sanitizers.upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("sanitizers")
# Statements of the scaling tests (test/Tool/scaling.test): fewer under the
# sanitizers' 10-50x slowdown.
config.substitutions.append(
    ("%scale", "10000" if "sanitizers" in config.available_features
     else "100000"))
# Thread counts of the streaming-stores workload runs (test/Workloads).
config.substitutions.append(
    ("%stream_threads", "2,3" if "sanitizers" in config.available_features
     else "1,2,3,4"))
