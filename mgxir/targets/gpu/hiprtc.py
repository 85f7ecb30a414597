"""hiprtc, through hip-python: compiles the generated kernel sources (the sources NVRTC compiles)
to AMD code objects. Needs ROCm's hiprtc library; elsewhere every call is one clear error."""

from __future__ import annotations

import functools

from mgxir.diagnostics import MgxError

HIPRTC_OPTIONS = ("-std=c++17", "-O3")


def bindings():
    try:
        from hip import hip, hiprtc
    except ImportError:
        raise MgxError("the hip platform needs hip-python: pip install 'mgxir[rocm]'") from None
    return hip, hiprtc


def ok(result: object, what: str) -> object:  # pragma: no cover - needs ROCm
    """The value(s) of a hip-python call's (status, values...) tuple; MgxError unless status is success."""
    values = result if isinstance(result, tuple) else (result,)
    status = values[0]
    if int(status) != 0:
        name = getattr(status, "name", str(status))
        raise MgxError(f"HIP error in {what}: {name}")
    rest = values[1:]
    return rest[0] if len(rest) == 1 else rest


def _unusable(e: BaseException) -> MgxError:
    """hip-python's loader error in one plain line (it quotes the library's name as bytes, b'...')."""
    import re

    reason = re.sub(r"""b(['"])(.*?)\1""", r"\2", str(e).splitlines()[0])
    return MgxError(f"hiprtc is not usable here (ROCm's libhiprtc: {reason})")


@functools.cache
def hiprtc_version() -> str:
    _, hiprtc = bindings()
    try:
        version = hiprtc.hiprtcVersion()
    except (RuntimeError, OSError) as e:  # the binding loads libhiprtc at the first call
        raise _unusable(e) from None
    major, minor = ok(version, "hiprtcVersion")  # pragma: no cover - needs ROCm's hiprtc library
    return f"hiprtc-{major}.{minor}"  # pragma: no cover


def hiprtc_compile(source: str, symbol: str, arch: str) -> bytes:  # pragma: no cover - needs ROCm
    """The code object of one kernel source for `arch` (gfx...), compiled by hiprtc."""
    _, hiprtc = bindings()
    try:
        program = ok(hiprtc.hiprtcCreateProgram(source.encode(), f"{symbol}.hip".encode(), 0, [], []), "hiprtc")
    except (RuntimeError, OSError) as e:  # the binding loads libhiprtc lazily
        raise _unusable(e) from None
    try:
        options = [f"--offload-arch={arch}".encode(), *(o.encode() for o in HIPRTC_OPTIONS)]
        status = hiprtc.hiprtcCompileProgram(program, len(options), options)[0]
        if int(status) != 0:
            size = ok(hiprtc.hiprtcGetProgramLogSize(program), "hiprtcGetProgramLogSize")
            log = bytearray(size)
            hiprtc.hiprtcGetProgramLog(program, log)
            text = bytes(log).decode(errors="replace")
            first = next((line for line in text.splitlines() if "error" in line), text.strip()[:200])
            raise MgxError(f"kernel '{symbol}' does not compile for {arch}: {first.strip()}")
        size = ok(hiprtc.hiprtcGetCodeSize(program), "hiprtcGetCodeSize")
        code = bytearray(size)
        ok(hiprtc.hiprtcGetCode(program, code), "hiprtcGetCode")
        return bytes(code)
    finally:
        hiprtc.hiprtcDestroyProgram(program)
