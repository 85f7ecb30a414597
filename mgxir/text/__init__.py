"""The text format: parsing, printing, and reading programs out of MIGraphX logs."""
