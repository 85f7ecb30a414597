"""Every unit test sees the whole operator catalogue, as the tools do."""

from mgxir.ops import register_all_ops

register_all_ops()
