"""Translations between mgxir programs and other formats."""
