"""Where programs run besides the reference interpreter."""
