"""Translations of mgxir programs to and from other formats."""
