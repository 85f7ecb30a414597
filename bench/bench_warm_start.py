"""Warm start of the GPU target on the device (issue 21), whole process with the kernel cache warm: the
compilation each run) against the compiled .mxr (loaded as it is), and the floor of a process that
imports the same CUDA stack, opens the device and allocates."""

import os
import subprocess
import sys
import time

env = dict(os.environ, PYTHONPATH=f"/tmp/site:{os.getcwd()}", MGXIR_KERNEL_CACHE="/tmp/k")
py = sys.executable


def sh(*args: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([py, *args], env=env, capture_output=True, text=True)
    if done.returncode:
        print("FAILED", args, done.stderr[-500:])
    return time.perf_counter() - start


os.makedirs("/tmp/r50", exist_ok=True)
sh("bench/resnet_onnx.py", "/tmp/r50", "--random-weights")
model = f"/tmp/r50/{sorted(os.listdir('/tmp/r50'))[0]}"  # the one model written
sh("-m", "mgxir.tools.mgx_translate", model, "-o", "/tmp/r50.mgx")
for name, src in (("conv_relu_pool", "examples/conv_relu_pool.mgx"), ("resnet50", "/tmp/r50.mgx")):
    if not os.path.exists(src):
        print("missing", src, os.listdir("/tmp/r50"))
        continue
    t = sh("-m", "mgxir.tools.mgx_opt", "-p", "gpu", src, "-o", f"/tmp/{name}.mxr")
    print(name, "mgx-opt -p gpu", f"{t:.2f} s", "size", os.path.getsize(f"/tmp/{name}.mxr"))
    for kind, path in (("text", src), ("mxr", f"/tmp/{name}.mxr")):
        sh("-m", "mgxir.tools.mgx_run", path, "--target=gpu", "--fill=random", "-q")  # warm caches
        times = [sh("-m", "mgxir.tools.mgx_run", path, "--target=gpu", "--fill=random", "-q") for _ in range(3)]
        print(name, kind, "mgx-run --target=gpu whole process:", " ".join(f"{t:.2f}" for t in times), "s")
floor = "import numpy, cudnn, nvmath; from cuda.core import Device; d = Device(0); d.set_current(); d.create_stream()"
print(
    "floor (CUDA stack imported, device opened, a stream made):",
    " ".join(f"{sh('-c', floor):.2f}" for _ in range(3)),
    "s",
)
