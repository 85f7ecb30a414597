# lit configuration for mgxir's tool tests (test/text, test/opt, test/translate, test/run).
import os
import shutil
import subprocess
import sys

import lit.formats

config.name = "mgxir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mgx", ".test"]
config.excludes = ["Inputs", "unit", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
# MGXIR_LIT_OUTPUT lets concurrent runs keep their temporary files apart
config.test_exec_root = os.environ.get("MGXIR_LIT_OUTPUT") or os.path.join(config.test_source_root, "Output")

repo = os.path.dirname(config.test_source_root)
shared = os.path.join(os.path.dirname(repo), "shared")
config.environment["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
# COVERAGE_*: `coverage run` (pyproject: patch = subprocess) measures the tools that the tests run
for key in (
    "HOME",
    "TMPDIR",
    "MGXIR_TRACEBACK",
    "MGXIR_CACHE_DIR",
    "MGXIR_PARSER_CACHE",
    "XDG_CACHE_HOME",
    "COVERAGE_PROCESS_CONFIG",
    "COVERAGE_PROCESS_START",
    "PYTHONPATH",  # a package installed with --target (the GPU machine's runs)
    "LD_LIBRARY_PATH",  # where GPU runtimes' libraries are (cuDNN's wheel)
):
    if key in os.environ:
        config.environment[key] = os.environ[key]

config.substitutions.append(("%shared", shared))
config.substitutions.append(("%examples", os.path.join(shared, "reference", "migraphx-examples")))
config.substitutions.append(("%python", sys.executable))
# print, parse the printed text, print again: fails unless both prints are identical
config.substitutions.append(("%roundtrip", f"{sys.executable} -m mgxir.tools.roundtrip"))


def _has_gpu(tool_name: str) -> bool:
    tool = shutil.which(tool_name)
    if not tool:
        return False
    try:
        return subprocess.run([tool], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# gpu: an NVIDIA GPU (CUDA); rocm: an AMD GPU with ROCm (the gpu target's hip platform). Why each
# optional feature is missing: lit counts the tests it skips (`--show-unsupported` lists them), and
# these notes say why
missing_features: dict[str, str] = {}
for feature, tool_name in (("gpu", "nvidia-smi"), ("rocm", "rocm-smi")):
    if _has_gpu(tool_name):
        config.available_features.add(feature)
    else:
        missing_features[feature] = f"no working {tool_name}"


def _has_iree_vulkan() -> bool:
    probe = "import iree.runtime as rt; rt.get_driver('vulkan').create_default_device()"
    try:
        return subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


if _has_iree_vulkan():
    config.available_features.add("vulkan")
if os.path.isdir(shared):
    config.available_features.add("shared")
else:
    missing_features["shared"] = f"no shared reference material at {shared}"


def _has_vulkan() -> bool:
    """A Vulkan loader and at least one driver manifest (lavapipe counts): `REQUIRES: vulkan`."""
    import ctypes.util
    import glob

    manifests = [
        path
        for folder in ("/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d")
        for path in glob.glob(os.path.join(folder, "*.json"))
    ]
    return ctypes.util.find_library("vulkan") is not None and bool(manifests or os.environ.get("VK_DRIVER_FILES"))


if _has_vulkan():
    config.available_features.add("vulkan")
elif "vulkan" not in config.available_features:
    missing_features["vulkan"] = "no Vulkan loader and driver (apt-get install mesa-vulkan-drivers libvulkan1)"
for key in ("VK_DRIVER_FILES", "VK_ICD_FILENAMES"):
    if key in os.environ:
        config.environment[key] = os.environ[key]
if shutil.which("dot"):
    config.available_features.add("graphviz")
else:
    missing_features["graphviz"] = "no graphviz 'dot' on PATH"
for feature, why in missing_features.items():
    lit_config.note(f"tests that REQUIRE '{feature}' are unsupported here: {why}")
