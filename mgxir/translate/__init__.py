"""Translations between mgxir programs and other formats: MIGraphX's .mxr/.json files, Python
reproducers, Graphviz."""
