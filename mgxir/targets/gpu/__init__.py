"""MIGraphX's GPU target on NVIDIA (CUDA) and, for its kernel sources, AMD (HIP)."""
