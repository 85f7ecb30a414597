"""Where programs run: targets beside the reference interpreter."""
