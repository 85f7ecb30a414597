"""The numpy reference interpreter: evaluates a program's `main` instruction by instruction."""

from mgxir.interp.interpreter import Interpreter, check_memory, generated_literal, run_program

__all__ = ["Interpreter", "check_memory", "generated_literal", "run_program"]
